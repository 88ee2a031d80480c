"""A real PostgreSQL for tests: ``initdb`` into a fresh directory, ``postgres`` on a free port.

Never the machine's own server (port 5432): each run makes its own cluster and removes it.
Run as root, the cluster belongs to the ``postgres`` system user (PostgreSQL refuses to run as
root). Tests never skip for want of PostgreSQL: without ``initdb`` they fail and say so.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.wait import wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
            if (d / name).exists():
                return str(d / name)
        pytest.fail(
            f"{name} is not installed: the PostgreSQL history tests need it "
            "(apt-get install postgresql)",
            pytrace=False,
        )
    return found


class PostgresProcess:
    """A PostgreSQL cluster of its own, listening on 127.0.0.1 at a free port (trust auth)."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tute-pg-"))
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.user = "postgres" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_user(self, argv: list[str]) -> list[str]:
        """``argv`` run as :attr:`user` (when root), by util-linux's ``setpriv``, which execs
        it: the test process starts it as any other subprocess, not with ``Popen(user=)``,
        whose plain fork runs gRPC's fork handlers in the child, where a worker's gRPC
        threads can break it before its exec."""
        if not self.user:
            return argv
        return ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--init-groups", *argv]

    def start(self) -> None:
        data = self.directory / "data"
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(self.directory, pw.pw_uid, pw.pw_gid)
        subprocess.run(
            self._as_user(
                [
                    _binary("initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            ),
            check=True,
            capture_output=True,
        )
        # The free port may be taken by another process before postgres binds it (between
        # _free_port and the bind): then postgres exits at once, and it starts again on another.
        for _ in range(5):
            if self._serve(data):
                return
            self.port = _free_port()
        raise RuntimeError(f"postgres found no free port:\n{self._log()}")

    def _log(self) -> str:
        return (self.directory / "postgres.log").read_text(errors="replace")

    def _serve(self, data: Path) -> bool:
        """Start postgres on :attr:`port`; False when the port was taken meanwhile."""
        with open(self.directory / "postgres.log", "wb") as log:
            self.proc = subprocess.Popen(
                self._as_user(
                    [
                        _binary("postgres"),
                        "-D",
                        str(data),
                        "-p",
                        str(self.port),
                        "-h",
                        "127.0.0.1",
                        "-k",
                        str(self.directory),
                        "-c",
                        "fsync=off",
                    ]
                ),
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        ready = _binary("pg_isready")
        taken = False

        def accepting() -> bool:
            nonlocal taken
            if self.proc is not None and self.proc.poll() is not None:
                text = self._log()
                if "Address already in use" in text:
                    taken = True
                    return True
                raise RuntimeError(f"postgres exited at start:\n{text}")
            probe = subprocess.run(
                [ready, "-h", "127.0.0.1", "-p", str(self.port), "-t", "1", "-q"], check=False
            )
            return probe.returncode == 0

        wait_until(accepting, timeout=60.0, what="postgres accepting connections")
        return not taken

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: smart shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        with contextlib.suppress(OSError):
            shutil.rmtree(self.directory)
