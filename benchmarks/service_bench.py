"""The service beside the bare grpc.aio stack: actions/s, submit-to-all-watchers latency, server
CPU per action and memory per table and per stream, every figure with its baseline measured in
the same run, interleaved in alternating short windows.

Game load. Load-generator processes (``--clients``, separate from the servers) drive
``--tables`` concurrent ``parejas-manos`` tables of 4 scripted players; every seat watches its
table (WatchTable with its seat token). A finished match is replaced by a new table (not timed).
Two client patterns:

- (a) ``get+submit``: GetTable for the seat on turn, then SubmitAction of one of its legal
  actions (what a simple client does: two calls per action);
- (b) ``stream``: the seat acts from its own stream, on the legal actions of the last
  TurnStarted its copy of the stream carried (one SubmitAction per action);
- (c) ``play stream``: as (b), but each seat holds one PlayTable call (the bidirectional
  stream): it receives its events on it and writes its actions on it, so an action costs no
  unary call at all (measured against (b), as the issue asks, to show whether it pays).

Latency runs from just before SubmitAction to the moment the action's events (table version
+ 1) have reached all four seat streams. Server CPU is the server processes' own CPU time
(/proc/<pid>/stat) over the measured part of a window, per action.

Baseline (the same client processes, the same number of tables, one publisher per table): a bare
grpc.aio server (generic handlers, bytes in and out, no game logic) where one unary Publish
bumps the table's version under its lock and puts one message of the same size as the bytes a
watcher receives per tute action (measured in the run) on the table's 4 server streams. It
runs on the standard library's event loop, as ``../shared/perf-baseline``'s reference figures
do (``--baseline-loop uvloop``: on uvloop, the loop the tute servers run on by default; the
table's first line names both).

Windows alternate (baseline, pattern b, pattern c, pattern a, then baseline, pattern b and
pattern c at a fixed total rate, ``--rate``) for ``--rounds`` rounds; each figure is the median
over rounds and each ratio the median of the rounds' ratios. Then the same (without the fixed
rate) with 2 replicas on one Redis (its own redis-server on a free port), in two routings:
seats 0 and 2 on one replica, 1 and 3 on the other (what a round-robin balancer does); and, in
windows (B) and (C) (patterns b and c on tables of their own), every seat's calls on one replica
chosen by the table (what ``deploy/envoy`` does with the ``tute-table-id`` header the SDK
sends: docs/scaling.md, "Table routing"). Then scale:
the resident memory of one fresh server holding ``--idle-tables`` idle tables (one seated
player each) and then ``--streams`` open seat streams, beside a bare grpc.aio server holding the
same number of streams; Redis memory per table (INFO memory) after the Redis phase's matches
at the default event retention.

    python -m benchmarks.service_bench            # short form (about 3 minutes)
    python -m benchmarks.service_bench --full     # longer windows, more rounds, 10k/20k scale

Prints a table, then as its last line one JSON object. Everything it starts (servers,
redis-server, load generators) it stops, by process id.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from benchmarks.redis_bench import bench_replica, pct
from tests.support.redis import free_port, running_redis
from tests.support.replicas import Replica

REPO = Path(__file__).resolve().parents[1]
PRESET = "parejas-manos"
PLAYING, FINISHED = 2, 3  # TableStatus values
CLK_TCK = os.sysconf("SC_CLK_TCK")
MAX_SAMPLES = 500_000  # latency samples kept per window (bounded memory)
MAX_SUBMITS = 10_000_000  # hard bound on submissions per client process
SETUP_TIMEOUT = 120.0
BASE_SERVICE = "bench.Bench"
STALL_S = 10.0  # the scale run stops waiting for streams to open after this long without one
# (long enough for grpc to retry a connection refused in a burst of hundreds: its backoff)
BURST = 1000  # streams the scale run opens at a time
STREAMS_PER_CONNECTION = 90  # below grpc's 100 concurrent streams per HTTP/2 connection


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / CLK_TCK


def proc_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def median(values: list[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return statistics.median(vals) if vals else float("nan")


def rnd(x: float, n: int = 2) -> float | None:
    return None if math.isnan(x) else round(x, n)


# ---------------------------------------------------------------------------------------------
# The bare grpc.aio baseline server
# ---------------------------------------------------------------------------------------------


def serve_baseline(port: int, loop: str = "asyncio") -> None:
    """Subscribe(b"<table>") streams; Publish(b"T<table:6>:<seq>:...") -> every stream of the
    table gets the same bytes, after a compare-and-set of the table's version under its lock.
    ``loop``: the event loop it runs on (``asyncio``, the standard library's, or ``uvloop``)."""

    async def main() -> None:
        subs: dict[int, list[asyncio.Queue[bytes]]] = {}
        locks: dict[int, asyncio.Lock] = {}
        versions: dict[int, int] = {}
        state: dict[int, bytes] = {}

        async def subscribe(request: bytes, context: Any) -> Any:
            t = int(request)
            q: asyncio.Queue[bytes] = asyncio.Queue()
            subs.setdefault(t, []).append(q)
            try:
                yield b"ack"
                while True:
                    yield await q.get()
            finally:
                subs[t].remove(q)

        async def publish(request: bytes, context: Any) -> bytes:
            t = int(request[1:7])
            lock = locks.get(t)
            if lock is None:
                lock = locks[t] = asyncio.Lock()
            async with lock:
                v = versions.get(t, 0) + 1
                versions[t] = v
                state[t] = request
                for q in subs.get(t, ()):
                    q.put_nowait(request)
            return b"%d" % v

        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    BASE_SERVICE,
                    {
                        "Subscribe": grpc.unary_stream_rpc_method_handler(subscribe),
                        "Publish": grpc.unary_unary_rpc_method_handler(publish),
                    },
                ),
            )
        )
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        print("ready", flush=True)
        await server.wait_for_termination()

    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


SERVER_LOOPS: set[str] = set()
"""The event loops the measured tute servers said they run on."""


def server_loop(server: Replica) -> str:
    """The event loop a started tute server runs on, from its ``listening`` line."""
    found = re.search(r'"loop": "(\w+)"', server.log_path.read_text(errors="replace"))
    return found.group(1) if found else "?"


BASELINE_LOOPS = ("asyncio", "uvloop")
"""The event loops the baseline server can run on: the standard library's (the reference of
``../shared/perf-baseline``'s figures and of the issue's targets) or uvloop (the tute server's
default, ``service.main``)."""


class Baseline:
    def __init__(self, loop: str = "asyncio") -> None:
        self.loop = loop
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.service_bench",
                "baseline-server",
                "--port",
                str(self.port),
                "--loop",
                loop,
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=_env(),
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit("baseline server did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(REPO / "protos"), *filter(None, [env.get("PYTHONPATH")])]
    )
    return env


# ---------------------------------------------------------------------------------------------
# The load generator (a process of its own)
# ---------------------------------------------------------------------------------------------


class Window:
    """What runs now: ``kind`` ('base', 'a', 'b' or '' for nothing), its pacing and counts."""

    def __init__(self) -> None:
        self.kind = ""
        self.interval = 0.0
        self.measuring = False
        self.done = 0
        self.latencies: list[float] = []
        self.bytes_per_watcher = 0  # event bytes one watcher received during the window
        self.fallbacks = 0
        self.rejected = 0
        self.submits = 0
        self.changed = asyncio.Event()

    def record(self, seconds: float) -> None:
        if self.measuring and len(self.latencies) < MAX_SAMPLES:
            self.latencies.append(seconds)

    async def wait_kind(self, kinds: tuple[str, ...], stop: asyncio.Event) -> bool:
        while self.kind not in kinds:
            if stop.is_set():
                return False
            self.changed.clear()
            await self.changed.wait()
        return not stop.is_set()


class TuteTable:
    """One table at a time (a new one when its match ends): four seats, four seat streams."""

    def __init__(
        self,
        stubs: list[Any],
        win: Window,
        stop: asyncio.Event,
        seed: int,
        *,
        batch: bool,
        omit_view: bool,
        play: bool = False,
        routed: bool = False,
    ) -> None:
        from tute.v1 import service_pb2

        self.pb = service_pb2
        self.play = play
        """Pattern (c): each seat watches and acts on one PlayTable stream (windows 'c');
        else WatchTable streams and SubmitAction calls (windows 'a' and 'b')."""
        self.routed = routed
        """Every seat's calls go to one replica, chosen by the table (windows 'B' and 'C': what
        a proxy routing on the ``tute-table-id`` header does); else seat ``s`` calls replica
        ``s mod replicas``."""
        self.home = seed
        self.calls: dict[int, Any] = {}
        """Pattern (c): the seats' PlayTable calls."""
        self.batch = batch
        """The seat streams ask for batch_events (one message per commit)."""
        self.omit_view = omit_view
        """Pattern (b)'s SubmitAction asks for no view in the response (omit_view)."""
        self.over = False
        """The table's match ended (a stream saw MatchEnded)."""
        self.stubs = stubs
        self.win = win
        self.stop = stop
        self.rng = random.Random(seed)
        self.pending: dict[int, float] = {}
        self.arrivals: dict[int, int] = {}
        self.turn: tuple[int, int, list[Any]] = (-1, -1, [])  # (table_version, seat, legal)
        self.turn_changed = asyncio.Event()
        self.created = 0
        self.set_up = asyncio.Event()

    def stub(self, seat: int) -> Any:
        return self.stubs[(self.home if self.routed else seat) % len(self.stubs)]

    def kinds(self) -> tuple[str, ...]:
        """The windows this table plays in."""
        if self.play:
            return ("C",) if self.routed else ("c",)
        return ("B",) if self.routed else ("a", "b")

    async def _open(self, table_id: str, seat: int, md: Any) -> Any:
        """The seat's stream: PlayTable (pattern c, opened with its watch) or WatchTable."""
        watch = self.pb.WatchTableRequest(
            table_id=table_id, resume_after=0, batch_events=self.batch
        )
        if not self.play:
            return self.stub(seat).WatchTable(watch, metadata=md)
        call = self.stub(seat).PlayTable(metadata=md)
        self.calls[seat] = call
        await call.write(self.pb.PlayTableRequest(watch=watch))
        return call

    async def _watch(
        self, table_id: str, seat: int, md: Any, ready: asyncio.Event, last: int
    ) -> None:
        win = self.win
        call = await self._open(table_id, seat, md)
        seen = [0]
        try:
            async for got in call:
                msg = got
                if self.play:
                    if got.HasField("result"):
                        win.rejected += got.result.HasField("rejected")
                        continue
                    msg = got.watch
                if win.measuring and seat == 0 and win.kind in self.kinds():
                    win.bytes_per_watcher += msg.ByteSize()
                for ev in msg.events.events if self.batch else (msg.event,):
                    if ev.sequence >= last:
                        ready.set()
                    self._see(ev, seat, seen)
        except grpc.aio.AioRpcError:
            pass

    def _see(self, ev: Any, seat: int, seen: list[int]) -> None:
        """One event on ``seat``'s stream: its turn, the match's end, the arrival count."""
        kind = ev.WhichOneof("kind")
        if kind == "match_ended":
            self.over = True
            self.turn_changed.set()
        elif kind == "turn_started":
            ts = ev.turn_started
            if ts.seat == seat and len(ts.legal_actions):
                self.turn = (ev.table_version, seat, list(ts.legal_actions))
                self.turn_changed.set()
        if ev.table_version <= seen[0]:
            return
        seen[0] = ev.table_version
        n = self.arrivals.get(seen[0], 0) + 1
        self.arrivals[seen[0]] = n
        if n == 4:
            del self.arrivals[seen[0]]
            t0 = self.pending.pop(seen[0], None)
            if t0 is not None:
                self.win.record(time.perf_counter() - t0)

    async def _next_turn(self, version: int) -> tuple[int, list[Any]] | None:
        """The seat on turn at ``version`` and its legal actions, from that seat's stream."""
        deadline = time.monotonic() + 5.0
        while self.turn[0] < version and not self.over:
            self.turn_changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                await asyncio.wait_for(self.turn_changed.wait(), left)
            except TimeoutError:
                return None
        if self.turn[0] != version:
            return None
        return self.turn[1], self.turn[2]

    async def play_one_match(self) -> None:  # noqa: C901 - one scripted table's whole life, read top to bottom
        from tute.v1 import rules_pb2

        pb = self.pb
        created = await self.stub(0).CreateTable(
            pb.CreateTableRequest(
                rules=rules_pb2.Rules(preset=PRESET), take_seat=True, display_name="p"
            )
        )
        self.created += 1
        table_id = created.table_id
        tokens = {created.seat: created.seat_token}
        for seat in range(1, 4):
            joined = await self.stub(seat).JoinTable(
                pb.JoinTableRequest(table_id=table_id, seat=seat, display_name="p")
            )
            tokens[seat] = joined.seat_token
        md = {s: (("authorization", f"Bearer {t}"),) for s, t in tokens.items()}
        view = (
            await self.stub(0).GetTable(pb.GetTableRequest(table_id=table_id), metadata=md[0])
        ).view
        self.turn = (-1, -1, [])
        readies = [asyncio.Event() for _ in range(4)]
        watchers = [
            asyncio.create_task(
                self._watch(table_id, s, md[s], readies[s], view.last_event_sequence)
            )
            for s in range(4)
        ]
        win = self.win
        try:
            for r in readies:
                await asyncio.wait_for(r.wait(), 30)
            self.set_up.set()
            self.arrivals.clear()
            self.pending.clear()
            version, turn_seat = view.version, view.turn_seat
            self.over = False
            while view.status == PLAYING and not self.over and win.submits < MAX_SUBMITS:
                if not await win.wait_kind(self.kinds(), self.stop):
                    return
                t_start = time.perf_counter()
                legal: list[Any] | None = None
                if win.kind in ("b", "c", "B", "C"):
                    got = await self._next_turn(version)
                    if got is not None:
                        turn_seat, legal = got
                    elif self.over:
                        break
                    else:
                        win.fallbacks += 1
                if legal is None:
                    if turn_seat < 0:  # after a response without a view: who is on turn
                        turn_seat = (
                            await self.stub(0).GetTable(
                                pb.GetTableRequest(table_id=table_id), metadata=md[0]
                            )
                        ).view.turn_seat
                    view = (
                        await self.stub(turn_seat).GetTable(
                            pb.GetTableRequest(table_id=table_id), metadata=md[turn_seat]
                        )
                    ).view
                    if view.status != PLAYING:
                        break
                    version, legal = view.version, list(view.legal_actions)
                    if not legal:  # the turn moved between the two reads: read again
                        turn_seat = -1
                        continue
                seat = turn_seat
                action = self.rng.choice(legal)
                if self.play:  # (c): the action goes on the seat's own stream
                    self.pending[version + 1] = time.perf_counter()
                    win.submits += 1
                    await self.calls[seat].write(
                        pb.PlayTableRequest(
                            submit=pb.SubmitActionRequest(action=action, request_id="")
                        )
                    )
                    if win.measuring:
                        win.done += 1
                    version += 1  # one commit per action; the next turn comes from the stream
                    turn_seat = -1  # who is on turn next: from the stream (or GetTable's view)
                    if win.interval:
                        await asyncio.sleep(max(0.0, t_start + win.interval - time.perf_counter()))
                    continue
                # (b) plays from its stream: the response's view is not needed
                omit = win.kind in ("b", "B") and self.omit_view
                t0 = time.perf_counter()
                self.pending[version + 1] = t0
                win.submits += 1
                try:
                    resp = await self.stub(seat).SubmitAction(
                        pb.SubmitActionRequest(table_id=table_id, action=action, omit_view=omit),
                        metadata=md[seat],
                    )
                except grpc.aio.AioRpcError:
                    win.rejected += 1
                    self.pending.pop(version + 1, None)
                    view = (
                        await self.stub(seat).GetTable(
                            pb.GetTableRequest(table_id=table_id), metadata=md[seat]
                        )
                    ).view
                    version, turn_seat = view.version, view.turn_seat
                    continue
                if win.measuring:
                    win.done += 1
                version = resp.table_version
                if resp.HasField("view"):
                    view = resp.view
                    turn_seat = view.turn_seat
                else:  # the next seat on turn comes from the streams (or GetTable's view)
                    turn_seat = -1
                if win.interval:
                    await asyncio.sleep(max(0.0, t_start + win.interval - time.perf_counter()))
        finally:
            for c in self.calls.values():
                c.cancel()
            self.calls.clear()
            for w in watchers:
                w.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)

    async def run(self) -> None:
        while not self.stop.is_set():
            await self.play_one_match()


class BaseTable:
    """One baseline table: four Subscribe streams, one publisher."""

    def __init__(
        self, channel: grpc.aio.Channel, table: int, win: Window, stop: asyncio.Event
    ) -> None:
        self.table = table
        self.win = win
        self.stop = stop
        self.publish = channel.unary_unary(f"/{BASE_SERVICE}/Publish")
        self.subscribe = channel.unary_stream(f"/{BASE_SERVICE}/Subscribe")
        self.pending: dict[int, float] = {}
        self.arrivals: dict[int, int] = {}
        self.calls: list[Any] = []
        self.acks = 0

    async def _reader(self, call: Any) -> None:
        try:
            async for msg in call:
                if msg == b"ack":
                    self.acks += 1
                    continue
                seq = int(msg[8:18])
                n = self.arrivals.get(seq, 0) + 1
                if n < 4:
                    self.arrivals[seq] = n
                    continue
                self.arrivals.pop(seq, None)
                t0 = self.pending.pop(seq, None)
                if t0 is not None:
                    self.win.record(time.perf_counter() - t0)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass

    async def open(self) -> list[asyncio.Task[None]]:
        tasks = []
        for _ in range(4):
            call = self.subscribe(b"%d" % self.table)
            self.calls.append(call)
            tasks.append(asyncio.create_task(self._reader(call)))
        deadline = time.monotonic() + 30
        while self.acks < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return tasks

    async def run(self, size: list[int]) -> None:
        win = self.win
        seq = 0
        while win.submits < MAX_SUBMITS:
            if not await win.wait_kind(("base",), self.stop):
                return
            t_start = time.perf_counter()
            seq += 1
            head = b"T%06d:%010d:" % (self.table, seq)
            msg = head + b"x" * max(0, size[0] - len(head))
            self.pending[seq] = time.perf_counter()
            win.submits += 1
            try:
                await self.publish(msg)
            except grpc.aio.AioRpcError:
                win.rejected += 1
                continue
            if win.measuring:
                win.done += 1
            if win.interval:
                await asyncio.sleep(max(0.0, t_start + win.interval - time.perf_counter()))


async def load_main(spec: dict[str, Any]) -> None:
    """Set up, say ``ready``, read the start time, run the windows, print one JSON line."""
    from tute.v1 import service_pb2_grpc

    win = Window()
    stop = asyncio.Event()
    tute_channels = [grpc.aio.insecure_channel(f"127.0.0.1:{p}") for p in spec["tute_ports"]]
    base_channel = grpc.aio.insecure_channel(f"127.0.0.1:{spec['base_port']}")
    stubs = [service_pb2_grpc.TuteServiceStub(c) for c in tute_channels]
    n = spec["tables"]
    tables = [
        TuteTable(
            stubs,
            win,
            stop,
            spec["seed"] * 1000 + i,
            batch=spec["batch"],
            omit_view=spec["omit_view"],
            play=play,
            routed=routed,
        )
        for play in ((False, True) if spec.get("play") else (False,))
        for routed in ((False, True) if spec.get("routed") else (False,))
        for i in range(n)
    ]
    bases = [BaseTable(base_channel, spec["table_offset"] + i, win, stop) for i in range(n)]
    readers = [t for b in bases for t in await b.open()]
    size = [200]
    drivers = [asyncio.create_task(t.run()) for t in tables]
    drivers += [asyncio.create_task(b.run(size)) for b in bases]
    await asyncio.wait_for(asyncio.gather(*(t.set_up.wait() for t in tables)), SETUP_TIMEOUT)
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    line = await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), SETUP_TIMEOUT)
    t_zero = float(line)
    cpu_pids = spec["cpu_pids"]
    results = []
    for w in spec["windows"]:
        start = t_zero + w["start"]
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        win.latencies = []
        win.done = win.fallbacks = win.rejected = win.bytes_per_watcher = 0
        win.interval = n * spec["clients"] / w["rate"] if w["rate"] else 0.0
        win.kind = w["kind"]
        win.changed.set()
        await asyncio.sleep(max(0.0, start + w["warm"] - time.monotonic()))
        pids = cpu_pids.get("base" if w["kind"] == "base" else "tute", [])
        cpu0 = [proc_cpu_s(p) for p in pids]
        redis0 = [proc_cpu_s(p) for p in cpu_pids.get("redis", [])]
        me0 = time.process_time()
        t0 = time.perf_counter()
        win.measuring = True
        await asyncio.sleep(max(0.0, start + w["warm"] + w["measure"] - time.monotonic()))
        win.measuring = False
        elapsed = time.perf_counter() - t0
        cpu = sum(proc_cpu_s(p) for p in pids) - sum(cpu0)
        redis_cpu = sum(proc_cpu_s(p) for p in cpu_pids.get("redis", [])) - sum(redis0)
        win.kind = ""
        win.changed.set()
        results.append(
            {
                "kind": w["kind"],
                "rate": w["rate"],
                "done": win.done,
                "elapsed": elapsed,
                "latencies": win.latencies,
                "server_cpu_s": cpu,
                "redis_cpu_s": redis_cpu,
                "client_cpu_s": time.process_time() - me0,
                "fallbacks": win.fallbacks,
                "rejected": win.rejected,
                "bytes_per_watcher": win.bytes_per_watcher,
            }
        )
        if w["kind"] in ("a", "b", "c", "B", "C") and win.done:
            # the baseline's message: the bytes one watcher gets per tute action
            size[0] = max(size[0] // 2, int(win.bytes_per_watcher / win.done))
    stop.set()
    win.changed.set()
    for t in tables:
        t.turn_changed.set()
    _, pending = await asyncio.wait(drivers, timeout=30)
    for d in pending:
        d.cancel()
    for r in await asyncio.gather(*drivers, return_exceptions=True):
        if isinstance(r, Exception):  # a table that stopped playing: say why
            print(f"load: a table's driver failed: {r!r}", file=sys.stderr)
    for b in bases:
        for c in b.calls:
            c.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    for c in [*tute_channels, base_channel]:
        await c.close(None)
    print(
        json.dumps(
            {
                "windows": results,
                "tables_created": sum(t.created for t in tables),
                "base_size": size[0],
            }
        )
    )


def run_load(
    spec: dict[str, Any], clients: int, on_start: Callable[[float], None] | None = None
) -> list[dict[str, Any]]:
    """``clients`` load processes, started together on the same window schedule;
    ``on_start`` is told the schedule's time zero (``time.monotonic()``) once it is set."""
    procs = []
    try:
        for i in range(clients):
            s = dict(
                spec,
                seed=spec["seed"] + i,
                table_offset=i * spec["tables"],
                clients=clients,
                cpu_pids=spec["cpu_pids"] if i == 0 else {},
            )
            p = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.service_bench", "load", json.dumps(s)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=REPO,
                env=_env(),
            )
            procs.append(p)
        for p in procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise SystemExit("a load generator failed to set up")
        t_zero = time.monotonic() + 0.5
        if on_start is not None:
            on_start(t_zero)
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(f"{t_zero}\n")
            p.stdin.flush()
        total = (
            spec["windows"][-1]["start"]
            + 30
            + sum(w["warm"] + w["measure"] for w in spec["windows"][-1:])
        )
        outs = []
        for p in procs:
            out, _ = p.communicate(timeout=total + 60)
            if p.returncode != 0:
                raise SystemExit(f"a load generator failed (rc={p.returncode})")
            outs.append(json.loads(out.strip().splitlines()[-1]))
        return outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)


def schedule(
    kinds: list[tuple[str, float]], rounds: int, warm: float, measure: float, gap: float
) -> list[dict[str, Any]]:
    out, t = [], 0.0
    for _ in range(rounds):
        for kind, rate in kinds:
            out.append({"kind": kind, "rate": rate, "start": t, "warm": warm, "measure": measure})
            t += warm + measure + gap
    return out


Rows = dict[tuple[str, float], list[dict[str, float]]]


def summarize(outs: list[dict[str, Any]], rounds: int) -> Rows:
    """Per (kind, rate): one row per round, the load processes' windows merged."""
    by: dict[tuple[str, float], list[dict[str, float]]] = {}
    for i, w0 in enumerate(outs[0]["windows"]):
        ws = [o["windows"][i] for o in outs]
        done = sum(w["done"] for w in ws)
        el = w0["elapsed"]
        lat = sorted(x for w in ws for x in w["latencies"])
        by.setdefault((w0["kind"], w0["rate"]), []).append(
            {
                "per_s": done / el,
                "p50_ms": pct(lat, 0.50) * 1e3,
                "p99_ms": pct(lat, 0.99) * 1e3,
                "cpu_us": w0["server_cpu_s"] / done * 1e6 if done else float("nan"),
                "redis_cpu_us": w0["redis_cpu_s"] / done * 1e6 if done else float("nan"),
                "client_cpu_util": sum(w["client_cpu_s"] for w in ws) / el,
                "fallbacks": sum(w["fallbacks"] for w in ws),
                "rejected": sum(w["rejected"] for w in ws),
                "bytes_per_action": w0["bytes_per_watcher"] / max(1, w0["done"]),
            }
        )
    return by


def ratio_rounds(rows: list[dict[str, float]], base: list[dict[str, float]], key: str) -> float:
    return median([r[key] / b[key] for r, b in zip(rows, base, strict=False) if b[key]])


# ---------------------------------------------------------------------------------------------
# Scale: memory per idle table and per open stream
# ---------------------------------------------------------------------------------------------


async def opened(got: list[int], n: int, deadline: float) -> None:
    """Until ``got[0]`` streams of ``n`` have their first message, the count stops growing for
    :data:`STALL_S` once some have opened (some never open here: the memory figures are per
    stream that did, and the counts are reported), or ``deadline``. Before the first one opens
    there is no stall: with 20,000 streams on hundreds of new connections, the first may take
    longer than that on a loaded machine."""
    last, since = -1, time.monotonic()
    while got[0] < n and time.monotonic() < deadline:
        now = time.monotonic()
        if got[0] != last:
            last, since = got[0], now
        elif got[0] > 0 and now - since > STALL_S:
            return
        await asyncio.sleep(0.05)


async def open_in_bursts(
    start: Any,
    n: int,
    calls: list[Any],
    tasks: list[asyncio.Task[None]],
    reader: Any,
    got: list[int],
    deadline: float,
) -> None:
    """Open ``n`` streams (``start(i)`` makes the i-th call) :data:`BURST` at a time, each
    burst once the ones before have their first message (:func:`opened`): grpc.aio ends most
    streams of a burst of thousands with CANCELLED on a loaded machine."""
    for lo in range(0, n, BURST):
        for i in range(lo, min(n, lo + BURST)):
            calls.append(start(i))
            tasks.append(asyncio.create_task(reader(calls[-1])))
        await opened(got, len(calls), deadline)
        if got[0] < len(calls) or time.monotonic() >= deadline:
            return  # some did not open: the figures are over those that did


async def scale_main(spec: dict[str, Any]) -> None:  # noqa: C901 - the scale run's phases in order, each measured where it happens
    from tute.v1 import rules_pb2, service_pb2_grpc
    from tute.v1 import service_pb2 as pb

    out: dict[str, Any] = {}
    pid, base_pid = spec["pid"], spec["base_pid"]
    # A grpc.aio server lets 100 streams at a time run on one connection (HTTP/2
    # MAX_CONCURRENT_STREAMS): the streams are spread over enough connections to all open.
    n_ch = max(8, -(-spec["streams"] // STREAMS_PER_CONNECTION))
    channels = [
        grpc.aio.insecure_channel(
            f"127.0.0.1:{spec['port']}", options=[("grpc.use_local_subchannel_pool", 1)]
        )
        for _ in range(n_ch)
    ]
    stubs = [service_pb2_grpc.TuteServiceStub(c) for c in channels]
    rules = rules_pb2.Rules(preset=PRESET)
    deadline = time.monotonic() + spec["timeout"] / 2
    sem = asyncio.Semaphore(32)

    async def bounded(start: Any) -> Any:
        async with sem:  # the call starts only here: at most 32 in flight
            return await start()

    await stubs[0].ListTables(pb.ListTablesRequest())
    await asyncio.sleep(0.5)
    rss0 = proc_rss_kb(pid)
    idle = spec["idle_tables"]

    def create(i: int) -> Any:
        return lambda: stubs[i % 8].CreateTable(
            pb.CreateTableRequest(rules=rules, take_seat=True, display_name="p")
        )

    await asyncio.gather(*(bounded(create(i)) for i in range(idle)))
    await asyncio.sleep(0.5)
    rss1 = proc_rss_kb(pid)
    out["kb_per_table"] = (rss1 - rss0) / idle

    async def full_table(i: int) -> list[tuple[str, str]]:
        c = await stubs[i % 8].CreateTable(
            pb.CreateTableRequest(rules=rules, take_seat=True, display_name="p")
        )
        seats = [(c.table_id, c.seat_token)]
        for s in range(1, 4):
            j = await stubs[i % 8].JoinTable(
                pb.JoinTableRequest(table_id=c.table_id, seat=s, display_name="p")
            )
            seats.append((c.table_id, j.seat_token))
        return seats

    n_streams = spec["streams"]

    def full(i: int) -> Any:
        return lambda: full_table(i)

    seats = [
        s
        for t in await asyncio.gather(*(bounded(full(i)) for i in range(n_streams // 4)))
        for s in t
    ]
    await asyncio.sleep(0.5)
    rss2 = proc_rss_kb(pid)
    got = [0]
    refused: dict[str, int] = {}
    closing = [False]  # the run cancels its own calls from here on

    async def reader(call: Any) -> None:
        try:
            async for _ in call:
                got[0] += 1
                break
            async for _ in call:
                pass
        except grpc.aio.AioRpcError as exc:
            # a stream ended before the run closes its calls: the server ended it (grpc.aio
            # cancels streams of a burst of thousands on a loaded machine: CANCELLED)
            if not closing[0]:
                name = f"{exc.code().name}: {exc.details()}"
                refused[name] = refused.get(name, 0) + 1
        except asyncio.CancelledError:
            pass

    calls: list[Any] = []
    tasks: list[asyncio.Task[None]] = []

    def watch(i: int) -> Any:
        table_id, token = seats[i]
        return stubs[i % n_ch].WatchTable(
            pb.WatchTableRequest(table_id=table_id),
            metadata=(("authorization", f"Bearer {token}"),),
        )

    await open_in_bursts(watch, len(seats), calls, tasks, reader, got, deadline)
    await asyncio.sleep(1.0)
    rss3 = proc_rss_kb(pid)
    out["streams_open"] = got[0]
    out["streams_refused"] = dict(refused)
    closing[0] = True
    out["kb_per_stream"] = (rss3 - rss2) / got[0] if got[0] else math.nan
    out["server_rss_kb"] = rss3
    for c in calls:
        c.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    # the bare grpc.aio server: the same number of streams
    bch = [
        grpc.aio.insecure_channel(
            f"127.0.0.1:{spec['base_port']}", options=[("grpc.use_local_subchannel_pool", 1)]
        )
        for _ in range(n_ch)
    ]
    subs = [c.unary_stream(f"/{BASE_SERVICE}/Subscribe") for c in bch]
    deadline = time.monotonic() + spec["timeout"] / 2  # its own time, not what tute's left
    await asyncio.sleep(0.3)
    b0 = proc_rss_kb(base_pid)
    got[0] = 0
    refused.clear()
    closing[0] = False
    bcalls: list[Any] = []
    btasks: list[asyncio.Task[None]] = []
    await open_in_bursts(
        lambda i: subs[i % n_ch](b"%d" % (i // 4)), n_streams, bcalls, btasks, reader, got, deadline
    )
    await asyncio.sleep(1.0)
    b1 = proc_rss_kb(base_pid)
    out["baseline_streams_open"] = got[0]
    out["baseline_streams_refused"] = dict(refused)
    closing[0] = True
    out["baseline_kb_per_stream"] = (b1 - b0) / got[0] if got[0] else math.nan
    for c in bcalls:
        c.cancel()
    await asyncio.gather(*btasks, return_exceptions=True)
    for c in [*channels, *bch]:
        await c.close(None)
    print(json.dumps(out))


def run_scale(a: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    server = bench_replica("scale", "memory", tmp, server_engine(a))
    base = Baseline(a.baseline_loop)
    try:
        asyncio.run(server.wait_ready())
        spec = {
            "port": server.port,
            "pid": server.proc.pid,
            "base_port": base.port,
            "base_pid": base.proc.pid,
            "idle_tables": a.idle_tables,
            "streams": a.streams,
            "timeout": a.scale_timeout,
        }
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.service_bench", "scale", json.dumps(spec)],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=_env(),
            timeout=a.scale_timeout + 60,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"scale client failed: {done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result
    finally:
        server.terminate()
        base.stop()


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def redis_used_kb(port: int) -> float:
    import redis

    r = redis.Redis(host="127.0.0.1", port=port)
    try:
        return float(r.info("memory")["used_memory"]) / 1024
    finally:
        r.close()


def server_engine(a: argparse.Namespace) -> Path | None:
    """The compiled engine the servers import (``--compiled``, what ``make run`` serves), or
    None for the source tree's."""
    return Path(a.compiled).resolve() if a.compiled and not a.python_servers else None


def run_phase(
    a: argparse.Namespace,
    tmp: Path,
    store: str,
    replicas: int,
    kinds: list[tuple[str, float]],
    redis_pid: int | None,
) -> tuple[Any, Any]:
    servers = [
        bench_replica(
            f"{'mem' if store == 'memory' else 'redis'}-{i}", store, tmp, server_engine(a)
        )
        for i in range(replicas)
    ]
    base = Baseline(a.baseline_loop)
    try:
        for s in servers:
            asyncio.run(s.wait_ready())
            SERVER_LOOPS.add(server_loop(s))
        spec = {
            "tute_ports": [s.port for s in servers],
            "base_port": base.port,
            "tables": max(1, a.tables // a.clients),
            "seed": a.seed,
            "batch": not a.no_batch,
            "omit_view": not a.with_view,
            "play": any(kind in ("c", "C") for kind, _ in kinds),
            "routed": any(kind in ("B", "C") for kind, _ in kinds),
            "windows": schedule(kinds, a.rounds, a.warmup, a.window, 0.3),
            "cpu_pids": {
                "tute": [s.proc.pid for s in servers],
                "base": [base.proc.pid],
                "redis": [redis_pid] if redis_pid else [],
            },
        }
        outs = run_load(spec, a.clients)
        return summarize(outs, a.rounds), outs
    finally:
        for s in servers:
            s.terminate()
        base.stop()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("load", "scale", "baseline-server"):
        cmd = sys.argv[1]
        if cmd == "baseline-server":
            serve_baseline(int(sys.argv[3]), sys.argv[5] if len(sys.argv) > 5 else "asyncio")
        elif cmd == "load":
            asyncio.run(load_main(json.loads(sys.argv[2])))
        else:
            asyncio.run(scale_main(json.loads(sys.argv[2])))
        return
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--tables", type=int, default=16, help="concurrent tables (in total)")
    ap.add_argument("--clients", type=int, default=2, help="load-generator processes")
    ap.add_argument("--rate", type=float, default=250.0, help="fixed total actions/s")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=2.0, help="measured seconds per window")
    ap.add_argument("--warmup", type=float, default=0.7, help="unmeasured seconds per window")
    ap.add_argument("--idle-tables", type=int, default=5000)
    ap.add_argument("--streams", type=int, default=2000)
    ap.add_argument("--scale-timeout", type=float, default=240.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--compiled", metavar="DIR", help="the engine benchmark measures the mypyc build in DIR too"
    )
    ap.add_argument(
        "--engine-duration",
        type=float,
        default=1.0,
        help="seconds per engine benchmark window (0: skip the engine benchmark)",
    )
    ap.add_argument("--engine-rounds", type=int, default=5)
    ap.add_argument(
        "--profile-actions",
        type=int,
        default=1500,
        help="actions of the per-stage profile (0: skip it)",
    )
    ap.add_argument(
        "--baseline-loop",
        choices=BASELINE_LOOPS,
        default="asyncio",
        help="the baseline server's event loop (asyncio: the perf-baseline's reference; the tute "
        "servers run on their default, uvloop)",
    )
    ap.add_argument("--no-redis", action="store_true", help="skip the Redis phase")
    ap.add_argument(
        "--no-batch",
        action="store_true",
        help="the seat streams take one event per message (no WatchTableRequest.batch_events)",
    )
    ap.add_argument(
        "--with-view",
        action="store_true",
        help="pattern (b)'s SubmitAction asks for the view too (no omit_view)",
    )
    ap.add_argument("--no-scale", action="store_true", help="skip the memory-per-stream phase")
    ap.add_argument(
        "--python-servers",
        action="store_true",
        help="the servers import the source tree's engine even with --compiled",
    )
    ap.add_argument(
        "--full",
        action="store_true",
        help="5 rounds of 4 s windows, 10,000 idle tables, 20,000 streams",
    )
    a = ap.parse_args()
    if a.full:
        a.rounds, a.window, a.warmup = 5, 4.0, 1.0
        a.idle_tables, a.streams, a.scale_timeout = 10_000, 20_000, 600.0
        a.engine_duration = max(a.engine_duration, 2.0)
    t_run = time.perf_counter()
    phases: dict[str, float] = {}

    def lap(name: str, t0: float) -> float:
        now = time.perf_counter()
        phases[name] = round(now - t0, 1)
        print(f"  [{name}: {now - t0:.1f} s]", file=sys.stderr, flush=True)
        return now

    t = t_run
    engine = run_engine(a)
    t = lap("engine", t)
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tute-service-bench-") as tmp_s:
        tmp = Path(tmp_s)
        r = a.rate
        mem, _ = run_phase(
            a,
            tmp,
            "memory",
            1,
            [("base", 0), ("b", 0), ("c", 0), ("a", 0), ("base", r), ("b", r), ("c", r)],
            None,
        )
        t = lap("memory", t)
        red = None
        redis_kb = float("nan")
        if not a.no_redis:
            with running_redis(tmp / "redis") as rs:
                used0 = redis_used_kb(rs.port)
                kinds = [("base", 0), ("b", 0), ("B", 0), ("c", 0), ("C", 0), ("a", 0)]
                red, outs = run_phase(a, tmp, rs.url, 2, kinds, rs.pid)
                created = sum(o["tables_created"] for o in outs)
                redis_kb = (redis_used_kb(rs.port) - used0) / max(1, created)
            t = lap("redis", t)
        if a.no_scale:
            keys = ("kb_per_table", "kb_per_stream", "baseline_kb_per_stream")
            scale: dict[str, Any] = dict.fromkeys(keys, math.nan)
            scale.update(streams_open=0, baseline_streams_open=0)
        else:
            scale = run_scale(a, tmp)
            t = lap("scale", t)
    res = report(a, mem, red, scale, redis_kb)
    for key in (
        "ratio_parejas_vs_openspiel",
        "ratio_parejas_with_view_vs_openspiel",
        "ratio_parejas_vs_openspiel_python",
        "openspiel_hands_per_s",
        "engine_build",
    ):
        if key in engine:
            res[key] = engine[key]
    res.setdefault("ratio_parejas_vs_openspiel", None)
    if a.profile_actions > 0:
        res["profile"] = run_profile(a, res["server_cpu_us_per_action"])
        lap("profile", t)
    res["phase_s"] = phases
    res["server_engine"] = "mypyc" if server_engine(a) else "python"
    res["wall_s"] = round(time.perf_counter() - t_run, 1)
    print(json.dumps(res, sort_keys=True))


def run_profile(a: argparse.Namespace, server_cpu_us: float | None) -> dict[str, Any]:
    """benchmarks.action_profile in a process of its own: its table, its JSON."""
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.action_profile",
        "--actions",
        str(a.profile_actions),
        "--server-cpu-us",
        str(server_cpu_us or 0),
    ]
    done = subprocess.run(
        cmd, capture_output=True, text=True, cwd=REPO, env=_env(), timeout=300, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"action profile failed: {done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_engine(a: argparse.Namespace) -> dict[str, Any]:
    """The engine benchmark (its own interleaved OpenSpiel rounds): its table, its JSON."""
    if a.engine_duration <= 0:
        return {}
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.engine_bench",
        "--duration",
        str(a.engine_duration),
        "--reps",
        "1",
        "--rounds",
        str(a.engine_rounds),
    ]
    if not a.full:  # the short form: the headline presets only
        cmd += ["--presets", "parejas", "parejas-manos"]
    if a.compiled:
        cmd += ["--compiled", a.compiled]
    done = subprocess.run(
        cmd, capture_output=True, text=True, cwd=REPO, env=_env(), timeout=900, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"engine benchmark failed: {done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _refused(scale: dict[str, Any], prefix: str = "") -> str:
    """The scale run's streams that a server ended before the run closed them, by status."""
    refused = scale.get(f"{prefix}streams_refused") or {}
    return "".join(f", ended {n}x {why}" for why, n in sorted(refused.items()))


def report(
    a: argparse.Namespace, mem: Any, red: Any, scale: dict[str, Any], redis_kb: float
) -> dict[str, Any]:
    base, b, pa, pc = mem[("base", 0)], mem[("b", 0)], mem[("a", 0)], mem[("c", 0)]
    base_r, b_r, c_r = mem[("base", a.rate)], mem[("b", a.rate)], mem[("c", a.rate)]

    def med(rows: list[dict[str, float]], key: str) -> float:
        return median([r[key] for r in rows])

    rows = [
        ("memory: baseline publish", base, None),
        ("memory: (b) stream", b, base),
        ("memory: (c) play stream", mem[("c", 0)], base),
        ("memory: (a) get+submit", pa, base),
        (f"memory: baseline @{a.rate:g}/s", base_r, None),
        (f"memory: (b) stream @{a.rate:g}/s", b_r, base_r),
        (f"memory: (c) play @{a.rate:g}/s", c_r, base_r),
    ]
    if red is not None:
        rows += [
            ("redis x2: baseline publish", red[("base", 0)], None),
            ("redis x2: (b) stream", red[("b", 0)], red[("base", 0)]),
            ("redis x2: (c) play stream", red[("c", 0)], red[("base", 0)]),
            ("redis x2: (a) get+submit", red[("a", 0)], red[("base", 0)]),
            ("redis x2 routed: (b) stream", red[("B", 0)], red[("base", 0)]),
            ("redis x2 routed: (c) play", red[("C", 0)], red[("base", 0)]),
        ]
    print(
        f"service benchmark: {a.tables} tables of 4 ({PRESET}), {a.clients} load processes, "
        f"{a.rounds} rounds of {a.window:g} s windows, interleaved; medians over rounds; "
        f"tute on {'/'.join(sorted(SERVER_LOOPS))}, the baseline on {a.baseline_loop}"
    )
    print(
        f"  {'scenario':<30} {'per s':>8} {'ratio':>6} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'p99 x':>6} {'srv us/op':>9} {'cpu x':>6}"
    )
    for name, rws, ref in rows:
        ratio = ratio_rounds(rws, ref, "per_s") if ref else float("nan")
        p99x = ratio_rounds(rws, ref, "p99_ms") if ref else float("nan")
        cpux = ratio_rounds(rws, ref, "cpu_us") if ref else float("nan")
        print(
            f"  {name:<30} {med(rws, 'per_s'):>8.0f} {ratio:>6.2f} {med(rws, 'p50_ms'):>7.2f} "
            f"{med(rws, 'p99_ms'):>7.2f} {p99x:>6.2f} {med(rws, 'cpu_us'):>9.0f} {cpux:>6.2f}"
        )
    print(
        f"  baseline message: {med(b, 'bytes_per_action'):.0f} bytes (event bytes a watcher "
        f"gets per action); (b) fell back to GetTable {int(sum(r['fallbacks'] for r in b))} "
        f"times"
    )
    print(
        f"  scale: {scale['kb_per_table']:.2f} kB per idle table ({a.idle_tables}), "
        f"{scale['kb_per_stream']:.2f} kB per open stream ({scale['streams_open']} of "
        f"{a.streams} opened{_refused(scale)}); bare grpc.aio "
        f"{scale['baseline_kb_per_stream']:.2f} kB per stream "
        f"({scale['baseline_streams_open']} opened{_refused(scale, 'baseline_')}); Redis "
        f"{redis_kb:.2f} kB per table (played, default retention)"
    )
    out: dict[str, Any] = {
        "server_loop": "/".join(sorted(SERVER_LOOPS)),
        "baseline_loop": a.baseline_loop,
        "actions_per_s": rnd(med(pa, "per_s"), 1),
        "actions_per_s_stream": rnd(med(b, "per_s"), 1),
        "baseline_publish_per_s": rnd(med(base, "per_s"), 1),
        "ratio": rnd(ratio_rounds(pa, base, "per_s"), 3),
        "ratio_stream": rnd(ratio_rounds(b, base, "per_s"), 3),
        "p50_ms_stream": rnd(med(b, "p50_ms")),
        "p99_ms_stream": rnd(med(b, "p99_ms")),
        "p99_ms_at_250": rnd(med(b_r, "p99_ms")),
        "baseline_p99_ms_at_250": rnd(med(base_r, "p99_ms")),
        "p99_ratio": rnd(ratio_rounds(b_r, base_r, "p99_ms"), 3),
        "p50_ms_at_250": rnd(med(b_r, "p50_ms")),
        "baseline_p50_ms_at_250": rnd(med(base_r, "p50_ms")),
        "kb_per_stream": rnd(scale["kb_per_stream"]),
        "baseline_kb_per_stream": rnd(scale["baseline_kb_per_stream"]),
        "kb_per_table": rnd(scale["kb_per_table"]),
        "streams_open": scale["streams_open"],
        "baseline_streams_open": scale["baseline_streams_open"],
        "actions_per_s_play": rnd(med(pc, "per_s"), 1),
        "ratio_play": rnd(ratio_rounds(pc, base, "per_s"), 3),
        "ratio_play_vs_stream": rnd(ratio_rounds(pc, b, "per_s"), 3),
        "p99_ms_play": rnd(med(pc, "p99_ms")),
        "p99_ms_play_at_250": rnd(med(c_r, "p99_ms")),
        "p99_ratio_play": rnd(ratio_rounds(c_r, base_r, "p99_ms"), 3),
        "server_cpu_us_per_action_play": rnd(med(pc, "cpu_us"), 1),
        "cpu_ratio_play": rnd(ratio_rounds(pc, base, "cpu_us"), 3),
        "server_cpu_us_per_action": rnd(med(b, "cpu_us"), 1),
        "server_cpu_us_per_action_get_submit": rnd(med(pa, "cpu_us"), 1),
        "baseline_cpu_us_per_publish": rnd(med(base, "cpu_us"), 1),
        "cpu_ratio": rnd(ratio_rounds(b, base, "cpu_us"), 3),
        "baseline_message_bytes": rnd(med(b, "bytes_per_action"), 0),
        "stream_fallbacks": int(sum(r["fallbacks"] for r in b)),
        "redis_kb_per_table": rnd(redis_kb),
        "tables": a.tables,
        "clients": a.clients,
        "rounds": a.rounds,
        "rate": a.rate,
        "cpus": os.cpu_count(),
    }
    if red is not None:
        rb, rbase = red[("b", 0)], red[("base", 0)]
        out.update(
            {
                "redis_actions_per_s": rnd(med(rb, "per_s"), 1),
                "redis_actions_per_s_get_submit": rnd(med(red[("a", 0)], "per_s"), 1),
                "redis_baseline_publish_per_s": rnd(med(rbase, "per_s"), 1),
                "redis_ratio": rnd(ratio_rounds(rb, rbase, "per_s"), 3),
                "redis_actions_per_s_play": rnd(med(red[("c", 0)], "per_s"), 1),
                "redis_ratio_play": rnd(ratio_rounds(red[("c", 0)], rbase, "per_s"), 3),
                "redis_p99_ms": rnd(med(rb, "p99_ms")),
                "redis_server_cpu_us_per_action": rnd(med(rb, "cpu_us"), 1),
                "redis_cpu_us_per_action": rnd(med(rb, "redis_cpu_us"), 1),
                "redis_routed_actions_per_s": rnd(med(red[("B", 0)], "per_s"), 1),
                "redis_routed_ratio": rnd(ratio_rounds(red[("B", 0)], rbase, "per_s"), 3),
                "redis_routed_ratio_play": rnd(ratio_rounds(red[("C", 0)], rbase, "per_s"), 3),
                "redis_routed_p99_ms": rnd(med(red[("B", 0)], "p99_ms")),
                "redis_routed_server_cpu_us_per_action": rnd(med(red[("B", 0)], "cpu_us"), 1),
            }
        )
    else:
        out.update({"redis_actions_per_s": None, "redis_ratio": None})
    return out


if __name__ == "__main__":
    main()
