"""Life cycle of the server process and its configuration.

A real ``python -m service.main`` subprocess on port 0: SIGTERM with open WatchTable streams
turns health NOT_SERVING, ends the streams with UNAVAILABLE, refuses new calls and exits 0
within the grace period. ``--help`` lists every ``TUTE_*`` variable; ``load_settings`` reads the
environment and flags override it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from service.config import Settings, load_settings
from service.main import EVENT_LOOPS, loop_factory
from service.server import StartupError
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

from .helpers import FINISHED, auth, table_with_humans
from .matchplay import play_match

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r'"event": "listening"')
GRACE_S = 2.0
BOUND_S = 60.0
"""How long the test waits for the server's answer to its signal before it fails."""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUTE_")}
    env["TUTE_HTTP_PORT"] = "0"  # a free HTTP port: never the default 8080 of a running server
    path = [str(ROOT), str(ROOT / "protos")]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(extra)
    return env


@dataclasses.dataclass
class Proc:
    proc: asyncio.subprocess.Process
    port: int
    lines: list[str]
    reader: asyncio.Task[None]

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


async def _drain(stream: asyncio.StreamReader, lines: list[str]) -> None:
    while line := await stream.readline():
        lines.append(line.decode(errors="replace").rstrip("\n"))


@contextlib.asynccontextmanager
async def server_process(*args: str, **env: str) -> AsyncIterator[Proc]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "service.main",
        *args,
        cwd=ROOT,
        env=_env(**env),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    reader = asyncio.create_task(_drain(proc.stderr, lines))
    try:
        port = 0
        deadline = time.monotonic() + 30
        while not port:
            assert proc.returncode is None, "the server exited:\n" + "\n".join(lines)
            assert time.monotonic() < deadline, "no 'listening' line:\n" + "\n".join(lines)
            for line in lines:
                if LISTENING.search(line):
                    port = int(json.loads(line)["grpc"].rpartition(":")[2])
            await asyncio.sleep(0.02)
        yield Proc(proc, port, lines, reader)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(reader, 5)


async def test_sigterm_ends_streams_with_unavailable_and_exits_zero() -> None:
    async with (
        server_process(
            "--port",
            "0",
            "--metrics-port",
            "0",
            "--grace-s",
            str(GRACE_S),
            TUTE_HOST="127.0.0.1",
            TUTE_BOT_DELAY_S="0",
            TUTE_LOG_LEVEL="info",
        ) as srv,
        grpc.aio.insecure_channel(srv.target) as channel,
    ):
        stub = service_pb2_grpc.TuteServiceStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        check = await health.Check(health_pb2.HealthCheckRequest(service=""))
        assert check.status == health_pb2.HealthCheckResponse.SERVING

        # a match under way (one human, three bots), watched by the seat and by spectators
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(preset="parejas"), take_seat=True, display_name="ana"
            )
        )
        for _ in range(3):
            await stub.AddBot(
                service_pb2.AddBotRequest(table_id=created.table_id),
                metadata=auth(created.owner_token),
            )
        streams = [
            stub.WatchTable(
                service_pb2.WatchTableRequest(table_id=created.table_id),
                metadata=auth(created.seat_token),
            ),
            stub.WatchTable(service_pb2.WatchTableRequest(table_id=created.table_id)),
            stub.WatchTable(
                service_pb2.WatchTableRequest(table_id=created.table_id, resume_after=0)
            ),
        ]
        for call in streams:
            first = await call.read()
            assert first is not grpc.aio.EOF  # type: ignore[attr-defined]
        health_watch = health.Watch(health_pb2.HealthCheckRequest(service=""))
        assert (await health_watch.read()).status == health_pb2.HealthCheckResponse.SERVING

        async def drain(call: grpc.aio.UnaryStreamCall) -> grpc.StatusCode:
            with contextlib.suppress(grpc.aio.AioRpcError):
                while await call.read() is not grpc.aio.EOF:  # type: ignore[attr-defined]
                    pass
            return await call.code()

        endings = [asyncio.create_task(drain(call)) for call in streams]
        srv.proc.send_signal(signal.SIGTERM)

        # health says NOT_SERVING before the server goes away
        statuses = []
        with contextlib.suppress(grpc.aio.AioRpcError):
            while (msg := await asyncio.wait_for(health_watch.read(), BOUND_S)) is not (
                grpc.aio.EOF  # type: ignore[attr-defined]
            ):
                statuses.append(msg.status)
                if msg.status != health_pb2.HealthCheckResponse.SERVING:
                    break
        assert health_pb2.HealthCheckResponse.NOT_SERVING in statuses, statuses

        # a new stream is refused with UNAVAILABLE: the server drains for a moment after
        # NOT_SERVING before the transport stops, so a client reacting to it is answered
        with pytest.raises(grpc.aio.AioRpcError) as err:
            late = stub.WatchTable(service_pb2.WatchTableRequest(table_id=created.table_id))
            await late.read()
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE

        # The streams (a match waiting on its human) would never end by themselves: that
        # they end, UNAVAILABLE, and the process exits is the grace period at work.
        codes = await asyncio.wait_for(asyncio.gather(*endings), BOUND_S)
        assert codes == [grpc.StatusCode.UNAVAILABLE] * len(streams)
        rc = await asyncio.wait_for(srv.proc.wait(), BOUND_S)
        assert rc == 0, "\n".join(srv.lines)
    await asyncio.wait_for(srv.reader, 5)
    records = [json.loads(line) for line in srv.lines if line.startswith("{")]
    events = [r.get("event") for r in records]
    assert "shutting_down" in events and "stopped" in events, srv.lines
    assert all("timestamp" in r and "level" in r for r in records)


async def test_sigterm_without_streams_exits_at_once() -> None:
    async with server_process(
        "--port",
        "0",
        "--metrics-port",
        "0",
        "--host",
        "127.0.0.1",
        TUTE_GRACE_S="3600",
    ) as srv:
        async with grpc.aio.insecure_channel(srv.target) as channel:
            stub = service_pb2_grpc.TuteServiceStub(channel)
            await stub.ListTables(service_pb2.ListTablesRequest())
        srv.proc.send_signal(signal.SIGTERM)
        # nothing to wait for: an exit well before the hour of grace is one that did not use it
        rc = await asyncio.wait_for(srv.proc.wait(), BOUND_S)
        assert rc == 0


async def test_sigint_stops_the_server_too() -> None:
    async with server_process("--port", "0", "--metrics-port", "0", "--host", "127.0.0.1") as srv:
        # The listening line names the engine build: the tests import the source (make run
        # serves the mypyc build and says "engine": "mypyc").
        listening = json.loads(next(line for line in srv.lines if LISTENING.search(line)))
        assert listening["store"] == "memory" and listening["engine"] == "python", listening
        srv.proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(srv.proc.wait(), 10) == 0


@pytest.mark.parametrize(("choice", "loop"), [("auto", "uvloop"), ("asyncio", "asyncio")])
async def test_a_match_is_played_on_either_event_loop(choice: str, loop: str) -> None:
    """The server runs on uvloop by default (installed with the package), or on the standard
    library's loop; its listening line names the one it runs on, a whole match is played on
    it (four seats' SubmitActions, their views) and SIGTERM stops it with exit status 0."""
    async with (
        server_process("--port", "0", "--metrics-port", "0", TUTE_EVENT_LOOP=choice) as srv,
        grpc.aio.insecure_channel(srv.target) as channel,
    ):
        listening = json.loads(next(line for line in srv.lines if LISTENING.search(line)))
        assert listening["loop"] == loop, listening
        stub = service_pb2_grpc.TuteServiceStub(channel)
        seated = await table_with_humans(stub, "parejas-manos")
        stats = await play_match(stub, seated, random.Random(7))
        assert stats.final.status == FINISHED and stats.actions > 40, stats
        srv.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(srv.proc.wait(), BOUND_S) == 0


def test_event_loop_choices() -> None:
    assert loop_factory("auto")[0] == loop_factory("uvloop")[0] == "uvloop"
    name, factory = loop_factory("asyncio")
    loop = factory()
    try:
        assert name == "asyncio" and type(loop).__module__.startswith("asyncio")
    finally:
        loop.close()
    with pytest.raises(StartupError, match="event_loop must be one of auto, uvloop, asyncio"):
        loop_factory("trio")
    assert set(EVENT_LOOPS) == {"auto", "uvloop", "asyncio"}


def test_without_uvloop_auto_falls_back_and_uvloop_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop: ImportError
    assert loop_factory("auto")[0] == "asyncio"
    with pytest.raises(StartupError, match="uvloop is not installed"):
        loop_factory("uvloop")


async def test_an_unknown_event_loop_stops_the_server_with_one_line() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "service.main",
        "--port",
        "0",
        "--event-loop",
        "trio",
        cwd=ROOT,
        env=_env(TUTE_LOG_FORMAT="json"),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), BOUND_S)
    assert proc.returncode == 1
    (line,) = err.decode().splitlines()
    assert json.loads(line)["event"] == "cannot_start" and "trio" in line, line


async def test_environment_configures_the_process() -> None:
    """TUTE_* variables reach the process: here the metrics port and the host it prints."""
    async with server_process(
        "--port",
        "0",
        TUTE_HOST="127.0.0.1",
        TUTE_METRICS_PORT="0",
        TUTE_LOG_FORMAT="json",
    ) as srv:
        line = json.loads(next(line for line in srv.lines if LISTENING.search(line)))
        assert line["grpc"].startswith("127.0.0.1:") and line["metrics"] == "off", line
        srv.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(srv.proc.wait(), 10) == 0


async def test_health_check_and_watch_report_serving(channel: grpc.aio.Channel) -> None:
    """Both standard health RPCs work through the server's interceptor (Watch is a coroutine
    that writes, not an async generator: it used to fail with INTERNAL)."""
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "tute.v1.TuteService"):
        check = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert check.status == health_pb2.HealthCheckResponse.SERVING
        watch = health.Watch(health_pb2.HealthCheckRequest(service=service))
        first = await asyncio.wait_for(watch.read(), 5)
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        watch.cancel()


def test_help_lists_every_tute_variable() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "service.main", "--help"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # argparse wraps lines
    for f in dataclasses.fields(Settings):
        assert f"TUTE_{f.name.upper()}" in text, f"--help does not mention TUTE_{f.name.upper()}"
        assert f"--{f.name.replace('_', '-')}" in text


# ---------------------------------------------------------------------------------------------
# load_settings
# ---------------------------------------------------------------------------------------------


def test_defaults_without_environment_or_flags() -> None:
    assert load_settings([], {}) == Settings()


def test_environment_is_read() -> None:
    s = load_settings(
        [],
        {
            "TUTE_HOST": "127.0.0.1",
            "TUTE_PORT": "6000",
            "TUTE_METRICS_PORT": "0",
            "TUTE_STORE": "redis://cache:6379/2",
            "TUTE_GRACE_S": "2.5",
            "TUTE_MAX_TABLES": "7",
            "TUTE_LOG_LEVEL": "debug",
            "UNRELATED": "x",
        },
    )
    assert (s.host, s.port, s.metrics_port, s.store) == (
        "127.0.0.1",
        6000,
        0,
        "redis://cache:6379/2",
    )
    assert (s.grace_s, s.max_tables, s.log_level) == (2.5, 7, "debug")


def test_flags_override_the_environment() -> None:
    env = {"TUTE_PORT": "6000", "TUTE_GRACE_S": "9", "TUTE_STORE": "redis://a:1/0"}
    s = load_settings(["--port", "7000", "--grace-s", "0.25"], env)
    assert (s.port, s.grace_s) == (7000, 0.25)
    assert s.store == "redis://a:1/0", "what no flag overrides still comes from the environment"


def test_every_setting_has_a_variable_and_a_flag() -> None:
    for f in dataclasses.fields(Settings):
        text = "3" if isinstance(f.default, int | float) else "x"
        want = type(f.default)(text)  # type: ignore[misc]  # every setting has a default
        if isinstance(f.default, bool):  # the opposite of the default
            text, want = ("off" if f.default else "on"), not f.default
        from_env = load_settings([], {f"TUTE_{f.name.upper()}": text})
        from_flag = load_settings([f"--{f.name.replace('_', '-')}", text], {})
        assert getattr(from_env, f.name) == want, f"TUTE_{f.name.upper()} is not read"
        assert getattr(from_flag, f.name) == want, f"--{f.name} is not read"


@pytest.mark.parametrize(
    ("env", "argv"),
    [
        ({"TUTE_PORT": "not-a-port"}, []),
        ({"TUTE_GRACE_S": "soon"}, []),
        ({}, ["--port", "x"]),
        ({}, ["--no-such-flag"]),
        ({"TUTE_ACCESS_LOG": "maybe"}, []),
        ({}, ["--access-log", "maybe"]),
    ],
)
def test_bad_values_stop_with_a_message(env: dict[str, str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        load_settings(argv, env)
    assert exit_.value.code not in (0, None)
