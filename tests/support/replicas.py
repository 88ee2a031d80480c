"""Server replicas for tests and benchmarks, in two kinds with distinct names.

- In this process: :func:`inprocess_replicas` starts ``n`` servers (``create_server``) on one
  memory store or on a real Redis, all on one clock a test may drive (tests/support/clock.py);
  :meth:`InProcessReplicas.scheduler_pass` runs every replica's scheduler for a table now.
- In subprocesses: :class:`Replica` runs ``python -m service.main`` (port 0) and reads its port
  from the JSON ``listening`` line (``"grpc": "HOST:PORT"``); :func:`start_replicas` starts
  several. They run on the machine's clock: what they do in time is waited for, never slept for.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from service.clock import SYSTEM_CLOCK, Clock
from service.config import Settings
from service.matchmaking.entrants import PlayerDirectory
from service.players import MemoryPlayerStore
from service.server import Server, create_server
from service.store.memory import MemoryStore
from tute.v1 import service_pb2_grpc

from ..service.conftest import FAST
from .redis import free_port
from .wait import eventually

REPO = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r'"grpc": "([\d.]+):(\d+)"')
METRICS_TAKEN = "(metrics): Address already in use"
PORT_RACES = 5
"""How many times a replica is started again on another metrics port that was taken meanwhile."""
Stub = service_pb2_grpc.TuteServiceStub


# ---------------------------------------------------------------------------------------------
# In this process
# ---------------------------------------------------------------------------------------------


@dataclass
class InProcessReplicas:
    """In-process servers on one store, their stubs, and the clock they all run on."""

    servers: list[Server]
    stubs: list[Stub]
    clock: Clock

    async def scheduler_pass(self, table_id: str) -> None:
        """What every replica's scheduler does for the table at the clock's time, done now
        (so a test knows the pass happened instead of waiting for a poll)."""
        for srv in self.servers:
            await srv.app.run_due(table_id)


@contextlib.asynccontextmanager
async def inprocess_replicas(
    n: int,
    *,
    clock: Clock = SYSTEM_CLOCK,
    store_url: str = "memory",
    directory: PlayerDirectory | None = None,
    **settings: Any,
) -> AsyncIterator[InProcessReplicas]:
    """``n`` servers in this process on one store (their schedulers compete for due items),
    with ``settings`` over FAST, the store and the servers on ``clock``: one shared memory
    store, or with ``store_url`` (a real Redis) a store of their own each, as replicas in
    separate processes have."""
    conf: Settings = dataclasses.replace(FAST, store=store_url, **settings)
    store = MemoryStore(clock=clock) if store_url == "memory" else None
    # Replicas share their players, as separate processes do through one database: an
    # in-memory one is one per connection, so replicas without a database share one store.
    in_memory = (conf.players or conf.history) in ("", "memory", ":memory:", "sqlite://:memory:")
    players = MemoryPlayerStore() if n > 1 and in_memory else None
    servers: list[Server] = []
    channels: list[grpc.aio.Channel] = []
    try:
        for _ in range(n):
            servers.append(
                await create_server(
                    conf, store=store, clock=clock, directory=directory, players=players
                )
            )
            channels.append(grpc.aio.insecure_channel(f"127.0.0.1:{servers[-1].port}"))
        yield InProcessReplicas(servers, [Stub(ch) for ch in channels], clock)
    finally:
        for ch in channels:
            await ch.close()  # type: ignore[call-arg]
        for srv in servers:
            await srv.shutdown()


@contextlib.asynccontextmanager
async def inprocess_stubs(
    n: int, *, clock: Clock = SYSTEM_CLOCK, **settings: Any
) -> AsyncIterator[list[Stub]]:
    """The stubs of :func:`inprocess_replicas`."""
    async with inprocess_replicas(n, clock=clock, **settings) as r:
        yield r.stubs


# ---------------------------------------------------------------------------------------------
# In subprocesses
# ---------------------------------------------------------------------------------------------


NO_PER_CALLER_LIMITS: tuple[str, ...] = (
    "--create-rate-per-s",
    "0",
    "--watch-rate-per-s",
    "0",
    "--bot-rate-per-s",
    "0",
    "--invite-rate-per-s",
    "0",
    "--max-streams-per-caller",
    "0",
)
"""Flags that turn off the per-caller limits: every test or load client calls from 127.0.0.1."""
TEST_FLAGS: tuple[str, ...] = (
    "--bot-delay-s",
    "0",
    "--scheduler-poll-s",
    "0.02",
    *NO_PER_CALLER_LIMITS,
)
"""A test replica's flags besides the fixed ones: bots move at once, the scheduler looks often,
no per-caller limits."""


class Replica:
    """One ``tute-server`` subprocess (``python -m service.main``); its log (stdout and stderr)
    goes to ``log_path``.

    ``flags`` replace :data:`TEST_FLAGS` (a benchmark passes its own); ``extra`` come after
    them. ``engine_dir``: a directory holding a compiled ``engine`` (``make compile``) that the
    server imports instead of the source tree's (it runs from there). ``metrics``: serve
    ``/metrics`` on a free port (:meth:`metric`); without, the server serves none."""

    def __init__(
        self,
        name: str,
        store_url: str,
        log_dir: Path,
        *extra: str,
        flags: tuple[str, ...] = TEST_FLAGS,
        engine_dir: Path | None = None,
        metrics: bool = True,
    ) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.metrics_port = free_port() if metrics else 0
        self._store_url = store_url
        self._args = (*flags, *extra)
        self._engine_dir = engine_dir
        self._spawn()
        self.port = 0
        self._channel: grpc.aio.Channel | None = None

    def _spawn(self) -> None:
        env = dict(os.environ)
        first = [str(self._engine_dir)] if self._engine_dir else []
        env["PYTHONPATH"] = os.pathsep.join(
            [*first, str(REPO), str(REPO / "protos"), *filter(None, [env.get("PYTHONPATH")])]
        )
        for key in [k for k in env if k.startswith("TUTE_")]:
            del env[key]
        args = [
            sys.executable,
            "-m",
            "service.main",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--metrics-port",
            str(self.metrics_port),
            "--http-port",
            "-1",
            "--store",
            self._store_url,
            "--grace-s",
            "1",
            "--log-format",
            "json",
            "--log-level",
            "warning",
            *self._args,
        ]
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            args,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self._engine_dir or REPO,  # the first entry of sys.path
        )

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Until the replica logs where it listens (bounded); RuntimeError if it exits first."""

        respawns = iter(range(PORT_RACES))

        def listening() -> bool:
            if self.proc.poll() is not None:
                # The metrics port was free when chosen, and another program took it before
                # the replica bound it: choose another one.
                if (
                    self.metrics_port
                    and METRICS_TAKEN in self.tail()
                    and next(respawns, None) is not None
                ):
                    self.log.close()
                    self.metrics_port = free_port()
                    self._spawn()
                    return False
                raise RuntimeError(f"replica {self.name} did not start:\n{self.tail()}")
            return LISTENING.search(self.log_path.read_text(errors="replace")) is not None

        await eventually(listening, timeout=timeout, what=f"replica {self.name} listening")
        found = LISTENING.search(self.log_path.read_text(errors="replace"))
        assert found is not None
        self.port = int(found.group(2))

    def tail(self, n: int = 40) -> str:
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])

    @property
    def channel(self) -> grpc.aio.Channel:
        """A channel to the replica, made on first use (on the event loop of that moment)."""
        assert self.port, "wait_ready() first"
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.port}")
        return self._channel

    @property
    def stub(self) -> service_pb2_grpc.TuteServiceStub:
        return service_pb2_grpc.TuteServiceStub(self.channel)

    async def health(self) -> int:
        stub = health_pb2_grpc.HealthStub(self.channel)
        resp = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
        status: int = resp.status
        return status

    def metric(self, name: str) -> float:
        """The sum of a metric's samples on the replica's /metrics page."""
        import urllib.request

        assert self.metrics_port, "a replica started with metrics=False serves no metrics"
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as page:
            text = page.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and not line.startswith("#"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def kill9(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within 15 s; the log is closed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill9()
        self.log.close()

    async def stop(self) -> None:
        """Close the channel, then :meth:`terminate` (off the event loop)."""
        if self._channel is not None:
            await self._channel.close(None)
            self._channel = None
        await asyncio.to_thread(self.terminate)


async def start_replicas(store_url: str, log_dir: Path, n: int = 2, *extra: str) -> list[Replica]:
    """``n`` subprocess replicas on ``store_url`` (``extra``: more command-line flags), each
    listening once this returns."""
    replicas = [Replica(f"replica-{i}", store_url, log_dir, *extra) for i in range(n)]
    try:
        await asyncio.gather(*(r.wait_ready() for r in replicas))
    except BaseException:
        for r in replicas:
            await r.stop()
        raise
    return replicas
