"""CPU per call of the commits' pipelined connection (``service.store.redis.mux.Mux``), on
uvloop, against a redis-server of its own: HSETs of a 200-byte value, one at a time and eight at
once, three rounds each. ``--service-dir`` measures another tree's ``service`` (an A/B of a
change of the mux, alternated with this one's):

    python -m benchmarks.mux_bench
    python -m benchmarks.mux_bench --service-dir ../old

The figure is this process's CPU time per call (``time.process_time``: the client's side,
its syscalls included), and the calls a second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


async def _run(url: str, at_once: int, calls: int) -> tuple[float, float]:
    import redis.asyncio as aredis

    from service.store.redis.mux import Mux

    mux = Mux(aredis.ConnectionPool.from_url(url), 5.0)
    await mux.call("PING")

    async def worker(n: int) -> None:
        for _ in range(n):
            await mux.call("HSET", "h", "f", b"x" * 200)

    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(calls // at_once) for _ in range(at_once)))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    await mux.close()
    return cpu / calls * 1e6, calls / wall


def measure(url: str, calls: int, rounds: int) -> dict[str, Any]:
    import uvloop

    out: dict[str, Any] = {}
    for at_once in (1, 8):
        runs = [uvloop.run(_run(url, at_once, calls)) for _ in range(rounds)]
        out[f"cpu_us_per_call_{at_once}"] = sorted(r[0] for r in runs)[len(runs) // 2]
        out[f"calls_per_s_{at_once}"] = sorted(r[1] for r in runs)[len(runs) // 2]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--service-dir", metavar="DIR", help="a tree whose service/ is measured")
    ap.add_argument("--url", help=argparse.SUPPRESS)  # the child's: the Redis to use
    a = ap.parse_args()
    if a.url:
        import json

        print(json.dumps(measure(a.url, a.calls, a.rounds)))
        return
    from tests.support.redis import running_redis

    tree = Path(a.service_dir).resolve() if a.service_dir else REPO
    with (
        tempfile.TemporaryDirectory(prefix="tute-mux-bench-") as tmp,
        running_redis(Path(tmp) / "redis") as rs,
    ):
        # a process of its own, run as a script from elsewhere: the tree measured comes
        # first on its path
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(REPO / "protos")]))
        done = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                *("--url", rs.url, "--calls", str(a.calls), "--rounds", str(a.rounds)),
            ],
            capture_output=True,
            text=True,
            cwd=tmp,
            env=env,
            timeout=600,
            check=True,
        )
    print(f"mux calls ({tree}): median of {a.rounds} rounds of {a.calls}")
    line = done.stdout.strip().splitlines()[-1]
    print(line)


if __name__ == "__main__":
    main()
