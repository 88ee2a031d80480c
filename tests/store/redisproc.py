"""A real ``redis-server`` for tests: its own free port and directory, never the machine's.

Tests never skip for want of Redis: when ``redis-server`` is missing they fail and say how to
install it (``make system-deps``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RedisProcess:
    """``redis-server`` on 127.0.0.1 at a free port, data in ``directory``.

    ``persist``: False runs ``--save '' --appendonly no`` (a restart loses everything); True
    runs with an append-only file fsynced on every write (a restart loses nothing).
    """

    def __init__(self, directory: Path, *, persist: bool = False) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail(
                "redis-server is not installed: the Redis store tests need it "
                "(run `make system-deps`, or `apt-get install redis-server`)",
                pytrace=False,
            )
        self.exe = exe
        self.directory = directory
        self.persist = persist
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _args(self) -> list[str]:
        args = [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
                str(self.directory), "--save", "", "--daemonize", "no", "--loglevel", "warning",
                "--logfile", str(self.directory / "redis.log")]
        args += (["--appendonly", "yes", "--appendfsync", "always"] if self.persist
                 else ["--appendonly", "no"])
        return args

    def start(self, *, same_port: bool = False) -> RedisProcess:
        """Start (``same_port``: on the port it had, e.g. after :meth:`kill`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(50 if same_port else 5):
            self.proc = subprocess.Popen(self._args(), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            if self._wait_ready(10.0):
                return self
            self._reap()
            if same_port:
                time.sleep(0.1)
            else:
                self.port = free_port()
        raise RuntimeError(f"redis-server did not start; see {self.directory / 'redis.log'}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), timeout=0.5
            ) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
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
