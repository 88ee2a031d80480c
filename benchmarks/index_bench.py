"""Index operations of the Redis store on 1 vs 3 masters: what sharding the indexes buys.

An index operation is what the lobby, the scheduler and the status counts cost Redis for a
table: an index change (the write-ahead marker and the index step of a commit that changes
a table's due time, status or lobby entry: two scripts on the table's index shard) or a
scheduler claim (``claim_due``). The same fixed workload runs on:

- ``1 master``: one ``redis-server`` (one shard: the global slot);
- ``3 masters, 1 shard``: a 3-master Redis Cluster with the indexes in the global slot (one
  node takes all the index traffic);
- ``3 masters, 3 shards``: the same Cluster with ``index_shards=3`` (a shard on each master).

Everything shares this machine's cores: the Python load generator (several processes) and
every ``redis-server``. On a 2-core machine the load generator, not Redis, bounds the
operations per second a run sees, so besides that (``client ops/s``) the benchmark reads
each node's CPU time (``INFO cpu``, less what the node spends idle: cluster bus, cron,
measured for a few seconds before) and reports the capacity of the busiest node:
``capacity ops/s`` = operations / CPU seconds of the busiest node, the rate at which that
node would be saturated. That is the number sharding moves: with the indexes in one slot,
one node does all of the work however many masters there are. ``command cap.`` is the same
from the time the nodes spent executing commands and scripts (``INFO commandstats``),
without the per-wakeup I/O cost, which at this low load a node shares among fewer calls
the more nodes there are (at saturation it batches them again).

    python -m benchmarks.index_bench            # about a minute
    python -m benchmarks.index_bench --quick    # about 20 s

Prints a table, then as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from service.store.redis import RedisOptions, RedisStore

CLAIM_EVERY = 50
"""One operation in this many is a scheduler claim (a replica's poll: its rate follows the
replicas, not the tables), the others index changes."""
IDLE_S = 3.0
"""How long each node's idle CPU use (cluster bus, cron) is measured, to subtract it."""


@dataclass(frozen=True)
class Setup:
    name: str
    masters: int
    shards: int


SETUPS = (
    Setup("1 master", 1, 1),
    Setup("3 masters, 1 shard", 3, 1),
    Setup("3 masters, 3 shards", 3, 3),
)


@contextmanager
def redis_for(setup: Setup, directory: Path) -> Iterator[tuple[str, list[int]]]:
    """(store URL, ports of every node) of a fresh Redis or Redis Cluster."""
    from tests.support.redis import running_cluster, running_redis

    with ExitStack() as stack:
        if setup.masters == 1:
            proc = stack.enter_context(running_redis(directory))
            yield proc.url, [proc.port]
        else:
            cluster = stack.enter_context(running_cluster(directory, setup.masters))
            yield cluster.url, cluster.ports


def cpu_seconds(port: int) -> float:
    with redis.Redis(port=port) as r:
        info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def command_seconds(port: int) -> float:
    """Time the node spent executing commands and scripts (``INFO commandstats``)."""
    with redis.Redis(port=port) as r:
        stats = r.info("commandstats")
    return sum(float(v["usec"]) for v in stats.values()) / 1e6


def state(due_ms: int, status: str, expiry_ms: int) -> list[str]:
    """A table's index state as its hash records it (l, o, d, s, i, x, b)."""
    return ["", "0", str(due_ms / 1000), status, "", str(expiry_ms), "0"]


async def _worker_main(
    url: str, shards: int, tables: list[str], ops: int, concurrency: int, seed: int
) -> tuple[int, float]:
    store = RedisStore.from_url(url, RedisOptions(index_shards=shards, timeout_s=10.0))
    rng = random.Random(seed)
    version = dict.fromkeys(tables, 1)
    done = 0

    async def loop(n: int) -> None:
        nonlocal done
        for i in range(n):
            if i % CLAIM_EVERY == CLAIM_EVERY - 1:
                await store.claim_due(time.time(), 1.0, 10)  # the scheduler's poll
            else:
                t = rng.choice(tables)
                version[t] += 1
                member, _ = await store.index.mark(t)
                now_ms = int(time.time() * 1000)
                await store.index.apply(
                    [
                        (
                            t,
                            version[t],
                            state(
                                now_ms + 60_000 + rng.randrange(60_000),
                                "playing",
                                now_ms + 86_400_000,
                            ),
                        )
                    ],
                    [member],
                )
            done += 1

    started = time.perf_counter()
    try:
        await asyncio.gather(*(loop(ops // concurrency) for _ in range(concurrency)))
    finally:
        await store.close()
    return done, time.perf_counter() - started


def _worker(args: tuple[str, int, list[str], int, int, int]) -> tuple[int, float]:
    return asyncio.run(_worker_main(*args))


async def _prepare(url: str, shards: int, count: int) -> list[str]:
    store = RedisStore.from_url(url, RedisOptions(index_shards=shards, timeout_s=10.0))
    try:
        await store.repair()  # the first pass finds the indexes unbuilt: it builds them
        if store.index.rebuild_task is not None:
            await store.index.rebuild_task
        ids = [f"b{i:05d}" for i in range(count)]
        for start in range(0, count, 100):
            await asyncio.gather(
                *(store.create(t, b"r", "", None) for t in ids[start : start + 100])
            )
        return ids
    finally:
        await store.close()


def run_setup(
    setup: Setup, *, tables: int, ops: int, procs: int, concurrency: int
) -> dict[str, float | int | str]:
    with (
        tempfile.TemporaryDirectory(prefix="index-bench-") as tmp,
        redis_for(setup, Path(tmp)) as (url, ports),
    ):
        ids = asyncio.run(_prepare(url, setup.shards, tables))
        idle = [cpu_seconds(p) for p in ports]
        time.sleep(IDLE_S)  # a measurement window: what each node spends doing nothing
        before = [cpu_seconds(p) for p in ports]
        before_cmd = [command_seconds(p) for p in ports]
        idle_rate = [(b - i) / IDLE_S for b, i in zip(before, idle, strict=True)]
        started = time.perf_counter()
        with multiprocessing.get_context("spawn").Pool(procs) as pool:
            results = pool.map(
                _worker,
                [(url, setup.shards, ids, ops // procs, concurrency, i) for i in range(procs)],
            )
        wall = time.perf_counter() - started
        used = [
            max(cpu_seconds(p) - b - rate * wall, 1e-3)
            for p, b, rate in zip(ports, before, idle_rate, strict=True)
        ]
        executing = [command_seconds(p) - b for p, b in zip(ports, before_cmd, strict=True)]
    done = sum(n for n, _ in results)
    busiest = max(used)
    busiest_cmd = max(executing)
    return {
        "setup": setup.name,
        "masters": setup.masters,
        "shards": setup.shards,
        "ops": done,
        "wall_s": round(wall, 2),
        "client_ops_per_s": round(done / wall),
        "node_cpu_s": [round(u, 2) for u in used],
        "busiest_cpu_s": round(busiest, 2),
        "capacity_ops_per_s": round(done / busiest) if busiest > 0 else 0,
        "node_command_s": [round(e, 3) for e in executing],
        "command_capacity_ops_per_s": round(done / busiest_cmd) if busiest_cmd > 0 else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer operations")
    parser.add_argument("--procs", type=int, default=3, help="load generator processes")
    parser.add_argument("--concurrency", type=int, default=32, help="calls at once per process")
    args = parser.parse_args()
    ops = 6_000 if args.quick else 24_000
    rows = [
        run_setup(s, tables=1_000, ops=ops, procs=args.procs, concurrency=args.concurrency)
        for s in SETUPS
    ]
    print(
        f"{'setup':<22}{'ops':>7}{'wall s':>8}{'client ops/s':>13}{'capacity ops/s':>15}"
        f"{'command cap.':>13}  node cpu s / node command s"
    )
    for r in rows:
        print(
            f"{r['setup']:<22}{r['ops']:>7}{r['wall_s']:>8}{r['client_ops_per_s']:>13}"
            f"{r['capacity_ops_per_s']:>15}{r['command_capacity_ops_per_s']:>13}  "
            f"{r['node_cpu_s']} / {r['node_command_s']}"
        )
    base = float(rows[0]["capacity_ops_per_s"]) or 1.0
    summary = {
        "benchmark": "index_bench",
        "ops": ops,
        "rows": rows,
        "capacity_ratio_3_shards_vs_1_master": round(
            float(rows[2]["capacity_ops_per_s"]) / base, 2
        ),
        "capacity_ratio_3_masters_1_shard_vs_1_master": round(
            float(rows[1]["capacity_ops_per_s"]) / base, 2
        ),
        "command_capacity_ratio_3_shards_vs_1_master": round(
            float(rows[2]["command_capacity_ops_per_s"])
            / (float(rows[0]["command_capacity_ops_per_s"]) or 1.0),
            2,
        ),
    }
    print(
        f"3 masters with 3 shards: {summary['capacity_ratio_3_shards_vs_1_master']}x the "
        f"busiest-node capacity of 1 master (1 shard on 3 masters: "
        f"{summary['capacity_ratio_3_masters_1_shard_vs_1_master']}x); by command time "
        f"{summary['command_capacity_ratio_3_shards_vs_1_master']}x"
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
