"""A real ``redis-server`` (or a real Redis Cluster of them) for the tests and the benchmarks:
its own free port and directory, never the machine's.

Tests never skip for want of Redis: when ``redis-server`` is missing they fail and say how to
install it (``make system-deps``); a benchmark stops with that message.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _missing(program: str) -> NoReturn:
    """Fail the test (under pytest) or stop the benchmark: ``program`` is not installed."""
    message = (
        f"{program} is not installed: the Redis tests and benchmarks need it "
        "(run `make system-deps`, or `apt-get install redis-server`)"
    )
    if "pytest" in sys.modules:
        import pytest

        pytest.fail(message, pytrace=False)
    raise SystemExit(message)


class RedisProcess:
    """``redis-server`` on 127.0.0.1 at a free port, data in ``directory``.

    ``persist``: False runs ``--save '' --appendonly no`` (a restart loses everything); True
    runs with an append-only file fsynced on every write (a restart loses nothing).
    """

    def __init__(self, directory: Path, *, persist: bool = False) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            _missing("redis-server")
        self.exe = exe
        self.directory = directory
        self.persist = persist
        self.port = self._pick_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def _pick_port(self) -> int:
        return free_port()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int:
        """The process id of the running server."""
        assert self.proc is not None, "not started"
        return self.proc.pid

    def _args(self) -> list[str]:
        args = [
            self.exe,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        args += (
            ["--appendonly", "yes", "--appendfsync", "always"]
            if self.persist
            else ["--appendonly", "no"]
        )
        return args

    def start(self, *, same_port: bool = False) -> RedisProcess:
        """Start (``same_port``: on the port it had, e.g. after :meth:`kill`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(50 if same_port else 5):
            self.proc = subprocess.Popen(
                self._args(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            if self._wait_ready(10.0):
                return self
            self._reap()
            if same_port:
                time.sleep(0.1)
            else:
                self.port = self._pick_port()
        raise RuntimeError(f"redis-server did not start; see {self.directory / 'redis.log'}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            # Ours, not another test's server that took the port first (ours then fails to
            # bind and exits, but may answer a moment later than that one).
            with (
                contextlib.suppress(redis.RedisError),
                redis.Redis(
                    host="127.0.0.1",
                    port=self.port,
                    socket_timeout=0.5,
                    socket_connect_timeout=0.5,
                    retry=Retry(NoBackoff(), 0),  # one try: the loop tries again
                ) as client,
            ):
                if client.info("server").get("process_id") == self.proc.pid:
                    return True
            time.sleep(0.02)
        return False

    def _reap(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    def kill(self) -> None:
        """kill -9: no shutdown save, connections reset."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def restart(self) -> None:
        """kill -9, then start again on the same port."""
        self.kill()
        self.start(same_port=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@contextlib.contextmanager
def running_redis(directory: Path, *, persist: bool = False) -> Iterator[RedisProcess]:
    """A started :class:`RedisProcess`, stopped at the end."""
    proc = RedisProcess(directory, persist=persist).start()
    try:
        yield proc
    finally:
        proc.stop()


@contextlib.contextmanager
def running_cluster(directory: Path, masters: int = 3) -> Iterator[RedisClusterProcess]:
    """A started :class:`RedisClusterProcess`, stopped at the end."""
    cluster = RedisClusterProcess(directory, masters).start()
    try:
        yield cluster
    finally:
        cluster.stop()


class RedisClusterProcess:
    """A real Redis Cluster of ``masters`` primaries (no replicas) on free ports, data in
    ``directory``: each node is a ``redis-server --cluster-enabled yes`` subprocess, joined
    with ``redis-cli --cluster create``; :meth:`start` returns once every node says
    ``cluster_state:ok``. ``url`` is the store URL (``redis://...?cluster=1``)."""

    def __init__(self, directory: Path, masters: int = 3) -> None:
        cli = shutil.which("redis-cli")
        if cli is None:
            _missing("redis-cli")
        self.cli = cli
        self.directory = directory
        self.nodes = [_ClusterNode(directory / f"node-{i}") for i in range(masters)]

    @property
    def ports(self) -> list[int]:
        return [n.port for n in self.nodes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0?cluster=1"

    def start(self, timeout: float = 30.0) -> RedisClusterProcess:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{p}" for p in self.ports]
        made = subprocess.run(
            [
                self.cli,
                "--cluster",
                "create",
                *addresses,
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if made.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed:\n{made.stdout}{made.stderr}")
        deadline = time.monotonic() + timeout
        while not all(self._state_ok(p) for p in self.ports):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.05)
        return self

    def _state_ok(self, port: int) -> bool:
        info = subprocess.run(
            [self.cli, "-p", str(port), "cluster", "info"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        return "cluster_state:ok" in info.stdout

    def flushall(self) -> None:
        """Empty every node (the scripts stay loaded)."""
        for port in self.ports:
            with redis.Redis(port=port) as r:
                r.flushall()

    def node_of_slot(self, slot: int) -> int:
        """The port of the node that serves ``slot``."""
        with redis.Redis(port=self.ports[0]) as r:
            for start, end, primary, *_ in r.execute_command("CLUSTER SLOTS"):
                if start <= slot <= end:
                    return int(primary[1])
        raise LookupError(slot)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


class _ClusterNode(RedisProcess):
    """One node of a :class:`RedisClusterProcess`. Its cluster bus is on port + 10000 (Redis
    6 has no ``--cluster-port``), so both ports must be free."""

    def _pick_port(self) -> int:
        while True:
            port = free_port()
            if port + 10_000 > 65_535:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10_000))
                except OSError:
                    continue
            return port

    def _args(self) -> list[str]:
        return [
            *super()._args(),
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            str(self.directory / "nodes.conf"),
            "--cluster-node-timeout",
            "5000",
        ]
