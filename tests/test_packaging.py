"""The package as ``pip install .`` builds it: setup.py compiles the engine with mypyc into the
wheel, and builds the pure engine for editable installs, with ``TUTE_PURE_ENGINE=1``, and where
compiling fails (here: no C compiler, or one that fails).

The builds call the project's build backend (``setuptools.build_meta``, what pip calls) on a
copy of the source tree, with this interpreter, which has what ``[build-system].requires``
names; nothing is written into the repository.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = sorted(p.stem for p in (ROOT / "engine").glob("*.py") if p.stem != "__init__")
LUA = sorted((ROOT / "service" / "store" / "redis" / "scripts").glob("*.lua"))


def setup_modules() -> list[str]:
    """setup.py's ENGINE_MODULES, read without running setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "ENGINE_MODULES" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no ENGINE_MODULES")


def test_setup_and_makefile_compile_every_engine_module() -> None:
    assert sorted(setup_modules()) == ENGINE
    found = re.search(r"^ENGINE_MODULES := (.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert found is not None
    assert sorted(found.group(1).split()) == ENGINE


def test_build_system_pins_the_dev_mypy() -> None:
    import tomllib

    import mypy.version

    with open(ROOT / "pyproject.toml", "rb") as f:
        requires = tomllib.load(f)["build-system"]["requires"]
    assert f"mypy=={mypy.version.__version__}" in requires, requires


def _source_copy(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    # the web client's npm packages are no part of the wheel (nor its Python packages)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc", "node_modules")
    for name in ("engine", "service", "clients", "protos"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
    return src


def _build(src: Path, hook: str, **env: str) -> tuple[Path, str]:
    """Run a build backend hook (build_wheel, build_editable) in ``src``: the wheel, the log."""
    out = src.parent / "dist"
    out.mkdir(exist_ok=True)
    code = (
        f"import sys, setuptools.build_meta as backend; print('WHEEL', backend.{hook}(sys.argv[1]))"
    )
    environ = {k: v for k, v in os.environ.items() if k not in ("TUTE_PURE_ENGINE", "CC")}
    environ.pop("PYTHONPATH", None)
    environ.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=src,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    name = re.findall(r"^WHEEL (\S+)$", proc.stdout, re.M)[-1]
    return out / name, log


def _compiled_in(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return sorted(n for n in zf.namelist() if n.endswith(".so"))


def _engine_sources(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return sorted(n for n in zf.namelist() if re.fullmatch(r"engine/\w+\.py", n))


def _no_compiled_module_in(src: Path) -> None:
    left = [str(p.relative_to(src)) for p in src.rglob("*.so") if "build" not in p.parts]
    assert not left, f"compiled modules written into the source tree: {left}"


def test_an_editable_build_and_a_forced_pure_one_have_no_compiled_module(
    tmp_path: Path,
) -> None:
    src = _source_copy(tmp_path)
    editable, _ = _build(src, "build_editable")
    assert _compiled_in(editable) == []
    _no_compiled_module_in(src)  # the tests import engine/*.py from the source tree
    pure, log = _build(src, "build_wheel", TUTE_PURE_ENGINE="1")
    assert "TUTE_PURE_ENGINE=1: the pure engine" in log
    assert _compiled_in(pure) == []
    assert _engine_sources(pure) == sorted(f"engine/{m}.py" for m in [*ENGINE, "__init__"])


def test_without_a_c_compiler_the_wheel_has_the_pure_engine(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    wheel, log = _build(src, "build_wheel", CC=str(tmp_path / "no-such-cc"))
    assert "no C compiler found" in log, log
    assert _compiled_in(wheel) == []
    assert _engine_sources(wheel) == sorted(f"engine/{m}.py" for m in [*ENGINE, "__init__"])
    # the Redis store's Lua scripts are in it, and it loads them from there
    with zipfile.ZipFile(wheel) as zf:
        scripts = sorted(n for n in zf.namelist() if n.endswith(".lua"))
        zf.extractall(tmp_path / "site")
    assert scripts == sorted(f"service/store/redis/scripts/{p.name}" for p in LUA), scripts
    load = (
        "import service.store.redis.connect as c; "
        "assert c.__file__.startswith(sys.argv[1]), c.__file__; "
        "print(' '.join(sorted(c.SCRIPTS)))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; " + load, str(tmp_path / "site")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == sorted(p.stem for p in LUA if p.stem != "now_ms")


@pytest.mark.slow
def test_a_compiler_that_fails_gives_the_pure_engine(tmp_path: Path) -> None:
    """mypyc runs (a compiler is found), compiling fails: build_ext leaves the pure engine."""
    src = _source_copy(tmp_path)
    wheel, log = _build(src, "build_wheel", CC="false")
    assert "compiling the engine failed" in log, log
    assert _compiled_in(wheel) == []
    assert _engine_sources(wheel) == sorted(f"engine/{m}.py" for m in [*ENGINE, "__init__"])


@pytest.mark.slow
def test_the_wheel_has_the_engine_compiled_and_it_plays(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    wheel, log = _build(src, "build_wheel")
    compiled = _compiled_in(wheel)
    for module in ENGINE:
        assert any(re.fullmatch(rf"engine/{module}\.cpython-\d+-.*\.so", n) for n in compiled), (
            module,
            compiled,
            log[-3000:],
        )
    assert any(n.startswith("tute_engine__mypyc.") for n in compiled), compiled
    assert _engine_sources(wheel) == sorted(f"engine/{m}.py" for m in [*ENGINE, "__init__"])
    _no_compiled_module_in(src)
    # unpacked, it imports the compiled modules and plays a match to its end
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    play = (
        "import random, engine, engine.game as g; "
        "assert g.__file__.endswith('.so'), g.__file__; "
        "rng = random.Random(7); s = engine.new_match(engine.PRESETS['parejas'], 7)\n"
        "while s.status == 'playing':\n"
        "    s, _ = engine.apply(s, s.turn, rng.choice(engine.legal_actions(s, s.turn)))\n"
        "print('winners', s.winners)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run(
        [sys.executable, "-c", play],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("winners ("), proc.stdout
