"""Ports and the process's own log, with real ``python -m service.main`` subprocesses.

A port that is taken (gRPC or metrics) ends the start with one line (JSON in JSON mode) and
exit status 1, no traceback; gRPC's ``SO_REUSEPORT`` is off, so a second server cannot share
the first one's port. A running server's stderr is one JSON object per line, from its
``listening`` line to ``stopped``, with an access line per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from service.server import StartupError, create_server, server_options
from tute.v1 import service_pb2, service_pb2_grpc

from .conftest import FAST

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUTE_")}
    env["TUTE_HTTP_PORT"] = "0"  # a free HTTP port: never the default 8080 of a running server
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "protos"), *filter(None, [env.get("PYTHONPATH")])]
    )
    return env


def _args(port: int, metrics_port: int, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "service.main",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--metrics-port",
        str(metrics_port),
        "--log-format",
        "json",
        *extra,
    ]


async def _run_to_exit(*args: str) -> tuple[int, list[str]]:
    """Run a server that is expected to exit by itself: its status and every output line."""
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=ROOT,
        env=_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace").splitlines()


@contextlib.asynccontextmanager
async def _running(*args: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, list[str]]]:
    """A server running until the block ends (SIGTERM then); its stderr lines so far."""
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=ROOT,
        env=_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        while not any('"event": "listening"' in ln for ln in lines):
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, "the server exited:\n" + "\n".join(lines)
            lines.append(line.decode(errors="replace").rstrip("\n"))
        yield proc, lines
        proc.send_signal(signal.SIGTERM)
        rest, _ = await asyncio.wait_for(proc.communicate(), 30)
        lines += rest.decode(errors="replace").splitlines()
        assert proc.returncode == 0, "\n".join(lines)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_failure_line(lines: list[str], port: int, what: str) -> dict[str, Any]:
    assert len(lines) == 1, lines
    line = json.loads(lines[0])
    assert line["event"] == "cannot_start" and line["level"] == "error", line
    assert line["error"] == f"cannot listen on 127.0.0.1:{port} ({what}): Address already in use"
    return line


async def test_a_second_server_on_the_same_port_exits_with_one_line() -> None:
    port = _free_port()
    async with _running(*_args(port, 0)):
        rc, lines = await _run_to_exit(*_args(port, 0))
    assert rc == 1
    _one_failure_line(lines, port, "gRPC")


async def test_a_busy_metrics_port_exits_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        metrics_port = taken.getsockname()[1]
        rc, lines = await _run_to_exit(*_args(0, metrics_port))
        assert rc == 1
        _one_failure_line(lines, metrics_port, "metrics")
        # in console mode too: one line for a person, no traceback
        rc, lines = await _run_to_exit(*_args(0, metrics_port, "--log-format", "console"))
    assert rc == 1
    assert lines == [
        f"tute-server: cannot listen on 127.0.0.1:{metrics_port} (metrics): Address already in use"
    ]


@pytest.mark.parametrize("reuseport", [1, 0])
async def test_grpc_does_not_share_a_port_with_so_reuseport(reuseport: int) -> None:
    """With SO_REUSEPORT on (gRPC's default) a second listener shares a port whose first one
    set it too; the server's options turn it off, and its bind fails."""
    with socket.socket() as first:
        first.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        first.bind(("127.0.0.1", 0))
        first.listen()
        port = first.getsockname()[1]
        options = server_options(FAST)
        assert ("grpc.so_reuseport", 0) in options
        if reuseport:
            options = [o for o in options if o[0] != "grpc.so_reuseport"]
        server = grpc.aio.server(options=options)
        try:
            if reuseport:
                assert server.add_insecure_port(f"127.0.0.1:{port}") == port
            else:
                with pytest.raises(RuntimeError):
                    server.add_insecure_port(f"127.0.0.1:{port}")
        finally:
            await server.stop(None)


async def test_create_server_refuses_a_taken_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartupError, match=f"127.0.0.1:{port} \\(gRPC\\): Address already"):
            await create_server(dataclasses.replace(FAST, port=port))


async def test_the_process_log_is_json_from_start_to_stop() -> None:
    async with _running(*_args(0, _free_port(), "--log-level", "info")) as (_, lines):
        listening = json.loads(lines[-1])
        assert listening["engine"] == "python" and listening["store"] == "memory", listening
        target = listening["grpc"]
        async with grpc.aio.insecure_channel(target) as channel:
            stub = service_pb2_grpc.TuteServiceStub(channel)
            await stub.ListTables(service_pb2.ListTablesRequest())
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.GetTable(service_pb2.GetTableRequest(table_id="0123456789abcdef"))
    parsed = [json.loads(line) for line in lines]  # every line is one JSON object
    events = [p["event"] for p in parsed]
    assert events[0] == "listening" and events[-1] == "stopped", events
    assert "shutting_down" in events, events
    rpc = {p["method"]: p for p in parsed if p["event"] == "rpc"}
    assert rpc["ListTables"]["code"] == "OK", rpc
    assert rpc["GetTable"]["code"] == "NOT_FOUND", rpc
    assert rpc["GetTable"]["table_id"] == "0123456789abcdef", rpc
    assert rpc["GetTable"]["peer"].startswith("ipv4:127.0.0.1:"), rpc
