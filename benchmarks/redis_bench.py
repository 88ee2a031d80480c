"""Replicas on Redis: actions per second and submit-to-all-watchers latency, beside the memory
store and the bare Redis baselines, all measured in the same run.

Game figures. ``tute-server`` subprocesses serve ``parejas-manos`` tables; test clients hold
every seat. For each action the client reads the view of the seat on turn (GetTable) and
submits one of its legal actions (SubmitAction), both on that seat's replica; every seat has a
WatchTable stream on its replica. Latency runs from just before SubmitAction to the moment
the action's first event (table version + 1) has reached all four seat streams. A finished
match is replaced by a new table (its creation is not timed). Scenarios:

- ``memory``: one replica on the memory store;
- ``redis x2``: two replicas on one Redis, seats 0 and 2 on one, 1 and 3 on the other, so
  every event crosses replicas through the table's stream.

Each runs closed-loop (every table acts as fast as it can: the throughput) and at a fixed
total rate below saturation (the latency a player feels).

Bare baselines (as ``shared/perf-baseline/redis_bench.py``): the Lua compare-and-set that
writes a 1 kB state and XADDs a 50-byte event, at 1 and 16 concurrent callers; and XREAD
BLOCK fan-out from one writer to four readers of one stream, and to four readers of each of
16 streams with 16 writers.

Everything shares this machine's cores: the load generator, the server(s) and redis-server.

    python -m benchmarks.redis_bench            # about 2 minutes
    python -m benchmarks.redis_bench --quick    # about 40 s

Prints a table, then as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import grpc
import redis.asyncio as aredis

from tests.support.redis import running_redis
from tests.support.replicas import NO_PER_CALLER_LIMITS, Replica
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

REPO = Path(__file__).resolve().parents[1]
PRESET = "parejas-manos"
CAS_LUA = """
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur ~= tonumber(ARGV[1]) then return -1 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[1], cur + 1)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000', '*', 'e', ARGV[3])
return cur + 1
"""


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(pct(values, 0.50) * 1e3, 2),
        "p99_ms": round(pct(values, 0.99) * 1e3, 2),
    }


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------


BENCH_FLAGS: tuple[str, ...] = ("--max-tables", "100000", *NO_PER_CALLER_LIMITS)
"""A benchmark server's flags: room for every table, and one load generator on 127.0.0.1
plays every seat (no per-caller limits)."""


def bench_replica(name: str, store: str, log_dir: Path, engine_dir: Path | None = None) -> Replica:
    """A tute-server subprocess for a benchmark (``engine_dir``: a compiled engine it imports
    instead of the source tree's; see :class:`tests.support.replicas.Replica`)."""
    return Replica(name, store, log_dir, flags=BENCH_FLAGS, engine_dir=engine_dir, metrics=False)


# ---------------------------------------------------------------------------------------------
# The game load
# ---------------------------------------------------------------------------------------------


@dataclass
class Load:
    measuring: bool = False
    stop: bool = False
    actions: int = 0
    rejected: int = 0
    matches: int = 0
    latencies: list[float] = field(default_factory=list)


class Table:
    """One table: four seats (stubs of their replicas), four seat streams, one driver."""

    def __init__(
        self,
        stubs: list[service_pb2_grpc.TuteServiceStub],
        load: Load,
        rng: random.Random,
        interval: float,
    ) -> None:
        self.stubs = stubs
        self.load = load
        self.rng = rng
        self.interval = interval
        self.pending: dict[int, float] = {}  # version -> when its action was submitted
        self.arrivals: dict[int, int] = {}  # version -> how many seat streams have it

    def stub(self, seat: int) -> service_pb2_grpc.TuteServiceStub:
        return self.stubs[seat % len(self.stubs)]

    async def _watch(
        self, table_id: str, seat: int, token: str, ready: asyncio.Event, last: int
    ) -> None:
        call = self.stub(seat).WatchTable(
            service_pb2.WatchTableRequest(table_id=table_id, resume_after=0),
            metadata=(("authorization", f"Bearer {token}"),),
        )
        seen = 0
        try:
            async for msg in call:
                ev = msg.event
                if ev.sequence >= last:
                    ready.set()
                if ev.table_version <= seen:
                    continue
                seen = ev.table_version
                n = self.arrivals.get(seen, 0) + 1
                self.arrivals[seen] = n
                if n == 4:
                    del self.arrivals[seen]
                    t0 = self.pending.pop(seen, None)
                    if t0 is not None and self.load.measuring:
                        self.load.latencies.append(time.perf_counter() - t0)
        except grpc.aio.AioRpcError:
            pass

    async def play_one_match(self) -> None:
        rules = rules_pb2.Rules(preset=PRESET)
        created = await self.stub(0).CreateTable(
            service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="p")
        )
        table_id = created.table_id
        tokens = {created.seat: created.seat_token}
        for seat in range(1, 4):
            joined = await self.stub(seat).JoinTable(
                service_pb2.JoinTableRequest(table_id=table_id, seat=seat, display_name="p")
            )
            tokens[seat] = joined.seat_token
        md = {s: (("authorization", f"Bearer {t}"),) for s, t in tokens.items()}
        view = (
            await self.stub(0).GetTable(
                service_pb2.GetTableRequest(table_id=table_id), metadata=md[0]
            )
        ).view
        readies = [asyncio.Event() for _ in range(4)]
        watchers = [
            asyncio.create_task(
                self._watch(table_id, s, tokens[s], readies[s], view.last_event_sequence)
            )
            for s in range(4)
        ]
        try:
            for r in readies:
                await asyncio.wait_for(r.wait(), 30)
            self.arrivals.clear()
            self.pending.clear()
            while not self.load.stop and view.status == 2:  # TABLE_STATUS_PLAYING
                seat = view.turn_seat
                view = (
                    await self.stub(seat).GetTable(
                        service_pb2.GetTableRequest(table_id=table_id), metadata=md[seat]
                    )
                ).view
                if view.status != 2:
                    break
                action = self.rng.choice(list(view.legal_actions))
                t0 = time.perf_counter()
                self.pending[view.version + 1] = t0
                try:
                    resp = await self.stub(seat).SubmitAction(
                        service_pb2.SubmitActionRequest(table_id=table_id, action=action),
                        metadata=md[seat],
                    )
                except grpc.aio.AioRpcError:
                    self.load.rejected += 1
                    self.pending.pop(view.version + 1, None)
                    continue
                if self.load.measuring:
                    self.load.actions += 1
                view = resp.view
                if self.interval:
                    await asyncio.sleep(max(0.0, t0 + self.interval - time.perf_counter()))
            if view.status == 3:
                self.load.matches += 1
        finally:
            for w in watchers:
                w.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)

    async def run(self) -> None:
        while not self.load.stop:
            await self.play_one_match()


async def game(
    stubs: list[service_pb2_grpc.TuteServiceStub],
    tables: int,
    rate: float,
    warmup: float,
    duration: float,
    seed: int,
) -> dict[str, Any]:
    """``rate`` 0: closed loop; else about ``rate`` actions/s in total over the tables."""
    load = Load()
    rng = random.Random(seed)
    interval = tables / rate if rate else 0.0
    drivers = [
        asyncio.create_task(Table(stubs, load, random.Random(rng.random()), interval).run())
        for _ in range(tables)
    ]
    await asyncio.sleep(warmup)
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    load.measuring = True
    await asyncio.sleep(duration)
    load.measuring = False
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    load.stop = True
    await asyncio.wait(drivers, timeout=30)
    for d in drivers:
        d.cancel()
    await asyncio.gather(*drivers, return_exceptions=True)
    return {
        "actions_per_s": round(load.actions / elapsed, 1),
        **ms(load.latencies),
        "samples": len(load.latencies),
        "rejected": load.rejected,
        "matches": load.matches,
        "client_cpu_util": round(cpu / elapsed, 2),
    }


# ---------------------------------------------------------------------------------------------
# Bare baselines
# ---------------------------------------------------------------------------------------------


async def bare_cas(url: str, conc: int, warmup: float, duration: float) -> dict[str, Any]:
    r = aredis.Redis.from_url(url, max_connections=conc + 4)
    script = r.register_script(CAS_LUA)
    blob, event = b"S" * 1024, b"e" * 50
    st = {"measuring": False, "stop": False, "n": 0}
    lat: list[float] = []

    async def worker(i: int) -> None:
        keys = [f"b:{i}:v", f"b:{i}:s", f"b:{i}:x"]
        version = 0
        while not st["stop"]:
            t0 = time.perf_counter()
            version = int(await script(keys=keys, args=[version, blob, event]))
            if st["measuring"]:
                st["n"] += 1
                lat.append(time.perf_counter() - t0)

    tasks = [asyncio.create_task(worker(i)) for i in range(conc)]
    await asyncio.sleep(warmup)
    t0 = time.perf_counter()
    st["measuring"] = True
    await asyncio.sleep(duration)
    st["measuring"] = False
    elapsed = time.perf_counter() - t0
    st["stop"] = True
    await asyncio.gather(*tasks)
    await r.flushall()
    await r.aclose()
    return {"ops_per_s": round(st["n"] / elapsed, 1), **ms(lat)}


async def bare_fanout(
    url: str, streams: int, writers: int, warmup: float, duration: float
) -> dict[str, Any]:
    """XADD -> four XREAD BLOCK readers per stream; latency until all four have it."""
    r = aredis.Redis.from_url(url, max_connections=4 * streams + writers + 8)
    keys = [f"x:{s}" for s in range(streams)]
    for k in keys:
        await r.xadd(k, {"t": 0})
    st = {"measuring": False, "stop": False, "sent": 0}
    arrivals: dict[bytes, int] = {}
    lat: list[float] = []

    async def reader(key: str) -> None:
        last: bytes = (await r.xinfo_stream(key))["last-generated-id"]
        while not st["stop"]:
            reply: list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None = cast(
                Any, await r.xread({key: last}, block=1000, count=100)
            )
            now = time.perf_counter()
            for _, entries in reply or ():
                for entry_id, fields in entries:
                    last = entry_id
                    mark = entry_id + key.encode()
                    n = arrivals.get(mark, 0) + 1
                    if n < 4:
                        arrivals[mark] = n
                        continue
                    arrivals.pop(mark, None)
                    if st["measuring"] and fields[b"m"] == b"1":
                        lat.append(now - float(fields[b"t"]))

    async def writer(i: int) -> None:
        s = i % streams
        while not st["stop"]:
            measuring = st["measuring"]
            await r.xadd(
                keys[s],
                {"t": repr(time.perf_counter()), "m": "1" if measuring else "0", "e": b"e" * 50},
                maxlen=1000,
                approximate=True,
            )
            if measuring:
                st["sent"] += 1
            s = (s + writers) % streams

    readers = [asyncio.create_task(reader(k)) for k in keys for _ in range(4)]
    await asyncio.sleep(0.3)
    writers_ = [asyncio.create_task(writer(i)) for i in range(writers)]
    await asyncio.sleep(warmup)
    t0 = time.perf_counter()
    st["measuring"] = True
    await asyncio.sleep(duration)
    st["measuring"] = False
    elapsed = time.perf_counter() - t0
    st["stop"] = True
    await asyncio.gather(*writers_)
    for t in readers:
        t.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    await r.flushall()
    await r.aclose()
    return {"xadd_per_s": round(st["sent"] / elapsed, 1), **ms(lat)}


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


async def run(a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"params": {k: v for k, v in vars(a).items()}, "baseline": {}, "game": {}}
    with tempfile.TemporaryDirectory(prefix="tute-redis-bench-") as tmp:
        tmpdir = Path(tmp)
        with running_redis(tmpdir / "redis") as redis_server:
            for conc in (1, 16):
                out["baseline"][f"lua_cas_xadd_c{conc}"] = await bare_cas(
                    redis_server.url, conc, a.warmup, a.duration
                )
            out["baseline"]["xread_fanout_1x4"] = await bare_fanout(
                redis_server.url, 1, 1, a.warmup, a.duration
            )
            out["baseline"]["xread_fanout_16x4_w16"] = await bare_fanout(
                redis_server.url, 16, 16, a.warmup, a.duration
            )
            for name, store, n in (("memory x1", "memory", 1), ("redis x2", redis_server.url, 2)):
                replicas = [
                    bench_replica(f"{name.replace(' ', '-')}-{i}", store, tmpdir) for i in range(n)
                ]
                try:
                    for r in replicas:
                        await r.wait_ready()
                    stubs = [r.stub for r in replicas]
                    for mode, rate in (("closed", 0.0), (f"{a.rate:g}/s", a.rate)):
                        out["game"][f"{name} {mode}"] = await game(
                            stubs, a.tables, rate, a.warmup, a.duration, a.seed
                        )
                finally:
                    for r in replicas:
                        await r.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tables", type=int, default=16, help="tables played at once")
    ap.add_argument(
        "--rate", type=float, default=100.0, help="actions/s in total for the fixed-rate runs"
    )
    ap.add_argument("--duration", type=float, default=10.0, help="seconds measured per run")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="short windows")
    a = ap.parse_args()
    if a.quick:
        a.duration, a.warmup = 4.0, 1.0
    result = asyncio.run(run(a))
    result["cpus"] = os.cpu_count()
    print(
        f"{'game (' + PRESET + f', {a.tables} tables)':<34} {'actions/s':>10} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'samples':>8}"
    )
    for name, row in result["game"].items():
        print(
            f"{name:<34} {row['actions_per_s']:>10.1f} {row['p50_ms']:>8.2f} "
            f"{row['p99_ms']:>8.2f} {row['samples']:>8}"
        )
    print(f"{'bare baseline (same Redis)':<34} {'ops/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for name, row in result["baseline"].items():
        rate = row.get("ops_per_s", row.get("xadd_per_s"))
        print(f"{name:<34} {rate:>10.1f} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f}")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
