"""deploy/Dockerfile and .dockerignore: a multi-stage build whose runtime stage runs
``tute-server`` (pyproject's console script) as a numeric non-root user, declares the server's
ports, and installs only the project's own wheels; hadolint passes. No Docker engine runs in
the tests: ``make image`` builds the image where one does."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from service.config import Settings

from .manifests import DEPLOY, REPO, pyproject, tool

DOCKERFILE = DEPLOY / "Dockerfile"
OPTIONS_WITH_VALUES = {
    "-w",
    "--wheel-dir",
    "-f",
    "--find-links",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "--target",
    "--prefix",
    "--root",
}


@dataclass
class Stage:
    image: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for k, args in self.instructions if k == keyword]

    def last(self, keyword: str) -> str:
        found = self.all(keyword)
        assert found, f"stage {self.name}: no {keyword}"
        return found[-1]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """The global ARG defaults and the stages of a Dockerfile (line continuations joined,
    comments dropped)."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in joined.splitlines():
        if not line.strip():
            continue
        keyword, _, rest = line.strip().partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            image, _, name = rest.partition(" AS ")
            for key, value in args.items():
                image = image.replace("${" + key + "}", value)
            stages.append(Stage(image.strip(), name.strip() or str(len(stages))))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            key, _, value = rest.partition("=")
            args[key] = value
        else:
            stages[-1].instructions.append((keyword, rest))
    return args, stages


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse(DOCKERFILE.read_text())[1]


def commands(run: str) -> list[list[str]]:
    """The simple commands of a RUN line, as words (its --mount flags dropped)."""
    run = re.sub(r"^(--\S+\s+)+", "", run)
    words = shlex.split(run.replace("&&", " ; ").replace("||", " ; ").replace("|", " ; "))
    out: list[list[str]] = [[]]
    for w in words:
        if w == ";":
            out.append([])
        else:
            out[-1].append(w)
    return [c for c in out if c]


def pip_call(cmd: list[str]) -> tuple[str, list[str], list[str]] | None:
    """(subcommand, options, positional arguments) if ``cmd`` runs pip."""
    if cmd[:1] == ["pip"] or (cmd[:1] and cmd[0].startswith("pip3")):
        rest = cmd[1:]
    elif cmd[:3] in (["python", "-m", "pip"], ["python3", "-m", "pip"]):
        rest = cmd[3:]
    else:
        return None
    sub, options, positional = rest[0], [], []
    words = iter(rest[1:])
    for w in words:
        if w.startswith("-"):
            options.append(w)
            if w in OPTIONS_WITH_VALUES:
                options.append(next(words))
        else:
            positional.append(w)
    return sub, options, positional


def port_settings() -> dict[str, int]:
    return {
        f.name: int(f.default)  # type: ignore[arg-type]  # every port has a default
        for f in dataclasses.fields(Settings)
        if (f.name == "port" or f.name.endswith("_port")) and f.default
    }


def test_multi_stage_on_a_slim_python_the_project_allows(stages: list[Stage]) -> None:
    assert len(stages) >= 2
    build, runtime = stages[0], stages[-1]
    assert re.fullmatch(r"python:3\.\d+-slim-\w+", runtime.image), runtime.image
    assert build.image == runtime.image  # the wheels are built for the interpreter that runs
    minor = int(runtime.image.split(":")[1].split("-")[0].split(".")[1])
    required = pyproject()["project"]["requires-python"]
    assert required.startswith(">=3.") and minor >= int(required.removeprefix(">=3."))


def test_runtime_runs_tute_server_as_a_numeric_user(stages: list[Stage]) -> None:
    runtime = stages[-1]
    entry = json.loads(runtime.last("ENTRYPOINT"))
    assert entry == ["tute-server"]
    assert "tute-server" in pyproject()["project"]["scripts"]
    uid, _, gid = runtime.last("USER").partition(":")
    assert uid.isdigit() and gid.isdigit() and int(uid) > 0 and int(gid) > 0
    assert runtime.last("STOPSIGNAL") == "SIGTERM"
    assert not runtime.all("CMD")  # flags come from TUTE_* variables


def test_exposes_the_servers_ports(stages: list[Stage]) -> None:
    exposed = {int(p.split("/")[0]) for e in stages[-1].all("EXPOSE") for p in e.split()}
    assert exposed == set(port_settings().values())
    assert {"port", "metrics_port"} <= set(port_settings())


def test_python_packages_come_from_the_project_only(stages: list[Stage]) -> None:
    build, runtime = stages[0], stages[-1]
    pips = {
        s.name: [p for run in s.all("RUN") for c in commands(run) if (p := pip_call(c))]
        for s in stages
    }
    # The build stage builds the project (whose pyproject.toml pins the dependencies) ...
    assert pips[build.name] == [(sub, opts, ["."]) for sub, opts, _ in pips[build.name]]
    assert [sub for sub, _, _ in pips[build.name]] == ["wheel"]
    wheel_opts = pips[build.name][0][1]
    wheel_dir = wheel_opts[wheel_opts.index("--wheel-dir") + 1]
    assert "--no-deps" not in wheel_opts  # the dependencies' wheels too, for the runtime
    # ... and the runtime installs only those wheels, with no index to fetch anything else.
    installs = [p for p in pips[runtime.name] if p[0] == "install"]
    assert len(installs) == 1
    _, opts, positional = installs[0]
    assert "--no-index" in opts and f"--find-links={wheel_dir}" in opts
    assert positional == [f"{wheel_dir}/tute-*.whl"]
    assert pyproject()["project"]["name"] == "tute"
    for sub, _, positional in pips[runtime.name]:
        assert sub in ("install", "uninstall")
        if sub == "uninstall":
            assert set(positional) <= {"pip", "setuptools", "wheel"}
    (run,) = [r for r in runtime.all("RUN") if "pip install" in r]
    assert f"--mount=type=bind,from={build.name},source={wheel_dir}" in run
    assert not [c for c in runtime.all("COPY") if "--from" not in c]  # no sources


def test_compiler_only_in_the_build_stage(stages: list[Stage]) -> None:
    def apt_installs(stage: Stage) -> list[str]:
        return [
            w
            for run in stage.all("RUN")
            for c in commands(run)
            if c[:2] == ["apt-get", "install"]
            for w in c[2:]
            if not w.startswith("-")
        ]

    assert "gcc" in apt_installs(stages[0])  # mypyc compiles the engine
    assert apt_installs(stages[-1]) == []
    # The runtime stage checks which engine build it installed.
    assert any("engine.game" in r for r in stages[-1].all("RUN"))


def test_hadolint_passes() -> None:
    out = subprocess.run(
        [tool("hadolint"), str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install redis\n")
    out = subprocess.run(
        [tool("hadolint"), str(bad)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode != 0 and "DL3013" in out.stdout


def _pattern(p: str) -> re.Pattern[str]:
    p = p.strip().strip("/")
    regex = re.escape(p).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*")
    regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
    return re.compile(regex + r"\Z")


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for raw in patterns:
        negate = raw.startswith("!")
        rx = _pattern(raw[1:] if negate else raw)
        if any(rx.match(p) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_sends_exactly_what_the_wheel_is_built_from() -> None:
    patterns = [
        ln.strip()
        for ln in (REPO / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    project = pyproject()
    find = project["tool"]["setuptools"]["packages"]["find"]
    package_files = [
        f
        for f in tracked
        for where in find["where"]
        for inc in find["include"]
        if f.endswith(".py")
        and fnmatch.fnmatch(
            f.removeprefix(where + "/") if where != "." else f, inc.rstrip("*") + "*/*"
        )
    ]
    assert any(f.startswith("engine/") for f in package_files)
    assert any(f.startswith("protos/tute/v1/") for f in package_files)
    needed = ["pyproject.toml", project["project"]["readme"], "setup.py", *package_files]
    for f in needed:
        assert not dockerignored(f, patterns), f"{f} is left out of the build context"
    for f in (
        ".git/HEAD",
        ".venv/bin/python",
        "tests/test_protos.py",
        "deploy/Dockerfile",
        "engine/__pycache__/game.cpython-311.pyc",
        "build/mypyc/engine/game.so",
    ):
        assert dockerignored(f, patterns), f"{f} is sent to the build"
