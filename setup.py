"""The build script behind ``pip install .``: the engine compiled with mypyc into the wheel.

Everything else about the package is in ``pyproject.toml``. Building a wheel (or a regular
install) compiles the engine modules below with mypyc, the same source the tests import;
the wheel keeps the ``.py`` files beside the compiled modules, so it still works as the pure
engine. The pure engine is built instead:

- for an editable install (``pip install -e``: the tests import the source, and no compiled
  module may land next to ``engine/*.py``);
- when ``TUTE_PURE_ENGINE=1``;
- when mypyc is not importable, no C compiler is found, or compiling fails (no Python
  headers, a compiler error).

``MYPYC_OPT_LEVEL`` sets the C compiler's optimisation level: 1 by default, which compiles in
a third of the time of mypyc's default 3, for an engine as fast within the noise of a loaded
2-core machine (random matches, a view per action or not); ``make compile`` uses the same
level, so ``make bench`` measures what ``make run`` serves.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ENGINE_MODULES = (
    "cards", "errors", "rules", "actions", "events", "state", "score", "_fast", "game", "view",
    "codec", "determinize", "search", "bots", "shuffle", "record",
)
"""The engine modules compiled (``engine/__init__.py`` stays Python: it only re-exports)."""

_BUILDING = {"bdist_wheel", "build", "build_ext", "install"}
"""Commands that build the package's files (metadata-only runs such as egg_info, dist_info
and sdist, and the editable ``editable_wheel``/``develop``, do not compile)."""


def _say(message: str) -> None:
    print(f"tute setup.py: {message}", file=sys.stderr, flush=True)


def _compiling() -> bool:
    commands = set(sys.argv[1:])
    if os.environ.get("TUTE_PURE_ENGINE", "") == "1":
        if commands & _BUILDING:
            _say("TUTE_PURE_ENGINE=1: the pure engine")
        return False
    return bool(commands & _BUILDING) and not commands & {"editable_wheel", "develop"}


def _c_compiler() -> str | None:
    """The C compiler build_ext would run (``$CC``, else the one Python was built with), if
    it is on this machine."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(cc)
    return shutil.which(words[0]) if words else None


def engine_extensions() -> list[Extension]:
    """The engine's mypyc extensions, or none (the pure engine) when mypyc cannot make them."""
    if not _compiling():
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _say("mypyc is not installed: the pure engine")
        return []
    compiler = _c_compiler()
    if compiler is None:  # found now, before mypyc spends its analysis on C nobody compiles
        _say("no C compiler found ($CC, or Python's own): the pure engine")
        return []
    try:
        return list(mypycify(
            # mypy --strict on the engine alone, as `make lint` checks it (not pyproject's
            # [tool.mypy], whose sections for the service would only be reported unused
            # here), with a cache of its own beside the build's C files
            ["--config-file=", "--strict", "--cache-dir=build/mypy-cache",
             *(f"engine/{name}.py" for name in ENGINE_MODULES)],
            opt_level=os.environ.get("MYPYC_OPT_LEVEL", "1"),
            debug_level="0",
            group_name="tute_engine",
        ))
    except (Exception, SystemExit) as exc:  # mypyc reports a type error with sys.exit
        _say(f"mypyc failed ({exc}): the pure engine")
        return []


class BuildExt(build_ext):
    """build_ext that falls back to the pure engine when compiling fails: all or nothing, since
    the compiled modules need their shared library."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:  # the small per-module extensions beside the big shared one
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # CompileError, a missing compiler (spawn/exec errors)
            _say(f"compiling the engine failed ({exc}): the pure engine")
            for ext in self.extensions:
                path = self.get_ext_fullpath(ext.name)
                if os.path.exists(path):
                    os.remove(path)
            self.extensions = []


setup(ext_modules=engine_extensions(), cmdclass={"build_ext": BuildExt})
