"""What an idle replica costs on Redis: its CPU per second of wall time while no move is made,
on a Redis holding ``--tables`` tables (each in the indexes, as a created table is), for this
tree's ``service`` and, with ``--service-dir``, another checkout's, alternated.

An idle replica still works: the index repair (a pass a second, its scrub reading
``scrub_batch`` tables), the scheduler's and the matchmaker's polls. Their cost is per second
rather than per move, so the service benchmark, which measures per move under load, hardly
sees it; this does.

    python -m benchmarks.idle_replica --tables 3000 --seconds 20
    python -m benchmarks.idle_replica --service-dir ../old     # the tree before, alternated

Starts its own Redis and replicas and stops them. Prints one line per run, then one JSON
line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.redis_bench import BENCH_FLAGS
from benchmarks.service_bench import proc_cpu_s
from service.store.redis import RedisStore
from tests.support.redis import free_port, running_redis
from tests.support.wait import eventually

REPO = Path(__file__).resolve().parent.parent


async def _fill(url: str, tables: int) -> None:
    store = RedisStore.from_url(url)
    try:
        for i in range(tables):
            await store.create(f"idle{i:06d}", b"r", "", None)
    finally:
        await store.close()


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def measure(
    url: str, tree: Path, engine_dir: Path | None, settle_s: float, seconds: float
) -> float:
    """ms of CPU per second of one replica of ``tree`` on ``url``, after ``settle_s``."""
    port = free_port()
    path = [str(engine_dir)] if engine_dir else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(tree), str(REPO / "protos")]))
    cmd = [sys.executable, "-m", "service.main", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--metrics-port", "0", "--http-port", "-1", "--store", url]
    cmd += ["--log-format", "json", "--log-level", "warning", *BENCH_FLAGS]
    proc = subprocess.Popen(
        cmd, env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        asyncio.run(eventually(lambda: _listening(port), timeout=60, what="the replica"))
        time.sleep(settle_s)  # past its start-up work (a benchmark's wait, not a test's)
        c0, t0 = proc_cpu_s(proc.pid), time.monotonic()
        time.sleep(seconds)
        return 1000 * (proc_cpu_s(proc.pid) - c0) / (time.monotonic() - t0)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=3000)
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--service-dir", metavar="DIR", help="a checkout measured beside this one")
    ap.add_argument("--compiled", metavar="DIR", help="the mypyc engine the replicas import")
    a = ap.parse_args()
    trees = [REPO] + ([Path(a.service_dir).resolve()] if a.service_dir else [])
    engine_dir = Path(a.compiled).resolve() if a.compiled else None
    got: dict[str, list[float]] = {str(t): [] for t in trees}
    with tempfile.TemporaryDirectory() as tmp, running_redis(Path(tmp) / "redis") as redis:
        asyncio.run(_fill(redis.url, a.tables))
        for _ in range(a.rounds):
            for tree in reversed(trees):
                ms = measure(redis.url, tree, engine_dir, 3.0, a.seconds)
                got[str(tree)].append(round(ms, 2))
                print(f"{tree}: {ms:.1f} ms of CPU a second, idle, {a.tables} tables", flush=True)
    print(json.dumps({"tables": a.tables, "seconds": a.seconds, "ms_cpu_per_s": got}))


if __name__ == "__main__":
    main()
