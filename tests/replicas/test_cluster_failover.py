"""Redis Cluster in earnest: a master dies mid-match and its replica takes over; slots move
between masters while tables are played.

Each test runs a real Redis Cluster of 3 masters with 2 replicas each (a short node timeout,
append-only files), two ``tute-server`` replicas on it and matches in flight: four-seat
tables played by test clients spread over both replicas (a stream per seat, a spectator on
each replica), tables played by bots alone and tables where a turn clock plays for an idle
human. The store acknowledges a commit once a replica of its node has it
(``wait_replicas=1``), so a promoted replica holds every action a client was told of.

What must hold: calls fail with nothing but UNAVAILABLE, for at most the failover (the
window is measured and printed); the same server processes go on without a restart; every
match finishes; every acknowledged action is in the history; every stream is gap-free; each
bot turn and each deadline applies once.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from service.store.redis.keys import Keys
from tute.v1 import rules_pb2, service_pb2

from ..support.redis_cluster import ClusterNode, ReplicatedCluster
from ..support.replicas import Replica, start_replicas
from ..support.wait import eventually
from .cluster import Failover, ResumingWatcher, kind
from .test_two_replicas import PRESET, Match

NODE_TIMEOUT_MS = 1000
GLOBAL_KEY = Keys("tute").shards[0].due


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedCluster]:
    cluster = ReplicatedCluster(
        tmp_path_factory.mktemp("rc"), masters=3, replicas=2, node_timeout_ms=NODE_TIMEOUT_MS
    ).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def rcluster(shared_cluster: ReplicatedCluster) -> Iterator[ReplicatedCluster]:
    """The module's cluster, every node up and in sync (a test's killed master comes back
    as a replica of the node that took over)."""
    shared_cluster.heal()
    yield shared_cluster


@pytest.fixture
def index_shards(request: pytest.FixtureRequest) -> int:
    """The store's index shards (1; parametrize indirectly for more)."""
    return int(getattr(request, "param", 1))


@pytest.fixture
async def servers(
    rcluster: ReplicatedCluster, index_shards: int, tmp_path: Path
) -> AsyncIterator[list[Replica]]:
    """Two tute-server replicas on the cluster."""
    url = f"{rcluster.url}&wait_replicas=1&wait_ms=500&index_shards={index_shards}"
    started = await start_replicas(url, tmp_path)
    try:
        yield started
    finally:
        for r in started:
            await r.stop()


class Acks(Failover):
    """A Failover that keeps every acknowledged SubmitAction: (request id, table version)."""

    def __init__(self, base: Failover) -> None:
        super().__init__(base.replicas, base.index)
        self.acked: list[tuple[str, int]] = []

    async def call(
        self, method: str, request: Any, token: str | None = None, timeout: float = 30.0
    ) -> Any:
        resp = await super().call(method, request, token, timeout)
        if method == "SubmitAction":
            self.acked.append((request.request_id, resp.table_version))
        return resp


@dataclass
class Probe:
    """GetTable on one table, straight to one replica, as fast as answers come: when calls
    failed and with which codes."""

    replica: Replica
    table_id: str
    token: str
    codes: Counter[str] = field(default_factory=Counter)
    first_failure: float = 0.0
    last_failure: float = 0.0
    recovered: float = 0.0  # the first answer after the last failure
    failed_calls: list[float] = field(default_factory=list)  # when each failed call began
    task: asyncio.Task[None] | None = None

    def start(self) -> Probe:
        self.task = asyncio.create_task(self._run())
        return self

    async def call(self) -> None:
        req = service_pb2.GetTableRequest(table_id=self.table_id)
        md = (("authorization", f"Bearer {self.token}"),)
        await self.replica.stub.GetTable(req, metadata=md, timeout=5)

    async def _run(self) -> None:
        while True:
            began = time.monotonic()
            try:
                await self.call()
                self.codes["OK"] += 1
                if self.last_failure > self.recovered:
                    self.recovered = time.monotonic()
            except grpc.aio.AioRpcError as exc:
                now = time.monotonic()
                self.codes[exc.code().name] += 1
                self.first_failure = self.first_failure or now
                self.last_failure = now
                self.failed_calls.append(began)
            await asyncio.sleep(0.01)  # a sampling rate, not a wait for anything

    def failed_after(self, when: float) -> int:
        """Calls begun after ``when`` that failed."""
        return sum(1 for t in self.failed_calls if t > when)

    @property
    def window(self) -> float:
        return self.recovered - self.first_failure

    async def stop(self) -> None:
        if self.task is None:
            return
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


@dataclass
class Load:
    """The matches in flight: human matches, bot matches, turn-clock matches."""

    matches: list[Match]
    bot_tables: dict[str, int | None]  # table id -> the idle human's seat (None: all bots)
    bot_watchers: dict[str, ResumingWatcher]
    acks: list[Acks]
    probes: list[Probe] = field(default_factory=list)

    @property
    def table_ids(self) -> list[str]:
        return [m.table_id for m in self.matches] + list(self.bot_tables)

    @property
    def tokens(self) -> dict[str, str]:
        """A seat token of each table played by test clients."""
        return {m.table_id: m.tokens[0] for m in self.matches}

    async def close(self) -> None:
        for p in self.probes:
            await p.stop()
        for m in self.matches:
            await m.close()
        for w in self.bot_watchers.values():
            await w.close()


OPTIONS: dict[str, object] = {"target_match_points": 1}
"""One hand a match: the kill lands mid-hand (after 20 events), the matches go on to the end."""


async def add_match(load: Load, servers: list[Replica], rng: random.Random) -> None:
    """One more human match, paused (its players wait) until the test lets it play: so
    that none ends while the others are set up, however fast it is played."""
    m = await Match.start(servers, rng, len(load.matches), **OPTIONS)
    m.pause()  # before its players act
    for p in m.players:
        p.failover = Acks(p.failover)  # before the player's task first runs
        load.acks.append(p.failover)
    load.matches.append(m)


async def start_load(servers: list[Replica], humans: int, seed: int) -> Load:
    rng = random.Random(seed)
    load = Load([], {}, {}, [])
    for _ in range(humans):
        await add_match(load, servers, rng)
    fo = Failover(servers)
    tables: dict[str, int | None] = {}
    cases: tuple[tuple[int, dict[str, Any]], ...] = ((4, {}), (3, {"turn_time_s": 1}))
    for bots, options in cases:
        req = service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(
                preset=PRESET, options=rules_pb2.RuleOptions(target_match_points=1, **options)
            ),
            take_seat=bots < 4,
            display_name="p",
        )
        created = await fo.call("CreateTable", req)
        for _ in range(bots):
            await fo.call(
                "AddBot",
                service_pb2.AddBotRequest(table_id=created.table_id),
                token=created.owner_token,
            )
        tables[created.table_id] = created.seat if bots < 4 else None
    load.bot_tables = tables
    load.bot_watchers = {t: ResumingWatcher(servers, i, t) for i, t in enumerate(tables)}
    return load


async def finish_and_check(load: Load, servers: list[Replica]) -> None:
    async with asyncio.timeout(120):
        await asyncio.gather(*(m.finish(timeout=120) for m in load.matches))
        for w in load.bot_watchers.values():
            await w.wait_until(lambda w: w.ended, timeout=120)
    for m in load.matches:
        await m.check(servers, OPTIONS)  # gap-free everywhere, replay agrees
        versions = {e.table_version for e in m.spectators[0].events}
        acked = [a for p in m.players for a in p.failover.acked]  # type: ignore[attr-defined]
        assert acked, "nobody played"
        lost = [a for a in acked if a[1] not in versions]
        assert lost == [], f"acknowledged actions missing from the history: {lost}"
    for table_id, human in load.bot_tables.items():
        w = load.bot_watchers[table_id]
        assert w.faults == [], w.faults
        plays: Counter[tuple[int, int, int]] = Counter()
        timed: Counter[tuple[int, int, int]] = Counter()
        hand = 0
        for e in w.events:
            k = kind(e)
            if k == "hand_dealt":
                hand = e.hand_dealt.hand_number
            elif k == "card_played":
                plays[(hand, e.card_played.trick_number, e.card_played.seat)] += 1
            elif k == "turn_timed_out":
                timed[(hand, e.turn_timed_out.trick_number, e.turn_timed_out.seat)] += 1
        assert plays and set(plays.values()) == {1}, "a turn played twice"
        assert set(timed.values()) <= {1}, "a deadline fired twice"
        if human is not None:
            assert timed, "the turn clock never played for the idle human"


def tables_on(rcluster: ReplicatedCluster, table_ids: list[str]) -> dict[int, list[str]]:
    """master port -> the tables whose slot it serves."""
    out: dict[int, list[str]] = {}
    for t in table_ids:
        out.setdefault(rcluster.master_of(f"tute:{{{t}}}").port, []).append(t)
    return out


async def kill_and_measure(
    rcluster: ReplicatedCluster, load: Load, victim: ClusterNode, probe: Probe, what: str
) -> tuple[float, float]:
    """Kill -9 ``victim`` once every match is under way; wait for its replica to take over
    and for the probe's table to answer again. Returns (failover seconds, UNAVAILABLE window
    seconds); fails if calls begun once the cluster had recovered kept failing."""
    for m in load.matches:  # each played up to the kill's point, then paused
        m.resume()
        await m.spectators[1].wait_until(lambda w: len(w.events) >= 20, timeout=60)
        m.pause()
    assert not any(m.spectators[1].ended for m in load.matches), "killed too late"
    killed_at = time.monotonic()
    rcluster.kill_master(victim)
    for m in load.matches:  # they play through the failover
        m.resume()
    await asyncio.to_thread(rcluster.wait_for_failover, victim)
    promoted_at = time.monotonic()
    failover = promoted_at - killed_at
    # the table answers again through the same server process
    await eventually(
        lambda: probe.last_failure > 0.0 and probe.recovered >= probe.last_failure,
        timeout=30,
        what="the table answering again after its failure",
    )
    late = probe.failed_after(promoted_at)
    print(
        f"\n{what}: failover {failover:.2f} s (node timeout {NODE_TIMEOUT_MS} ms); "
        f"UNAVAILABLE window {probe.window:.2f} s; probe codes {dict(probe.codes)}; "
        f"failed calls begun after the failover: {late}"
    )
    # the server's client finds the new master by itself: one more failure at most (its
    # first call to the dead node, which makes it read the layout again)
    assert late <= 1, f"{late} calls failed after the cluster had recovered"
    return failover, probe.window


async def outage(
    rcluster: ReplicatedCluster,
    load: Load,
    servers: list[Replica],
    victim: ClusterNode,
    probe: Probe,
    what: str,
) -> None:
    """Kill ``victim`` mid-match (:func:`kill_and_measure`), finish and check every match;
    the probe saw the outage as UNAVAILABLE and nothing else."""
    load.probes.append(probe.start())
    await kill_and_measure(rcluster, load, victim, probe, what)
    await finish_and_check(load, servers)
    await probe.stop()
    assert set(probe.codes) <= {"OK", "UNAVAILABLE"}, probe.codes
    assert probe.codes["UNAVAILABLE"] > 0, "the probe never saw the outage"


@pytest.mark.parametrize(
    "humans", [3, pytest.param(8, marks=pytest.mark.slow)], ids=["3-matches", "8-matches"]
)
async def test_master_of_tables_dies_mid_match(
    rcluster: ReplicatedCluster, servers: list[Replica], humans: int
) -> None:
    load = await start_load(servers, humans=humans, seed=18)
    try:
        global_port = rcluster.master_of(GLOBAL_KEY).port
        by_master = tables_on(rcluster, list(load.tokens))
        rng = random.Random(humans)
        while set(by_master) <= {global_port} and len(load.matches) < humans + 10:
            await add_match(load, servers, rng)  # one more, until one is elsewhere
            by_master = tables_on(rcluster, list(load.tokens))
        candidates = [(len(ts), port) for port, ts in by_master.items() if port != global_port]
        assert candidates, f"every match is on the global slot's master: {by_master}"
        victim = rcluster.node(max(candidates)[1])
        table = by_master[victim.port][0]
        probe = Probe(servers[0], table, load.tokens[table])
        await outage(rcluster, load, servers, victim, probe, "table master")
        assert all(r.proc.poll() is None for r in servers)
    finally:
        await load.close()


async def lobby_ids(replica: Replica) -> set[str]:
    listed = await replica.stub.ListTables(service_pb2.ListTablesRequest(page_size=100), timeout=5)
    return {t.table_id for t in listed.tables}


@pytest.mark.parametrize(
    "index_shards",
    [1, pytest.param(3, marks=pytest.mark.slow)],
    ids=["1-shard", "3-shards"],
    indirect=True,
)
async def test_master_of_the_global_slot_dies_mid_match(
    rcluster: ReplicatedCluster, servers: list[Replica], index_shards: int
) -> None:
    """The lobby, the due set and the status counts live on the global slot's node (with
    three index shards: the node of the first shard): after its replica takes over, the
    lobby answers again, bots and turn clocks go on, and the matches finish."""
    fo = Failover(servers)
    waiting = await fo.call(
        "CreateTable",
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset=PRESET), take_seat=True, display_name="w"
        ),
    )
    load = await start_load(servers, humans=2, seed=19)
    try:
        assert waiting.table_id in await lobby_ids(servers[0])
        victim = rcluster.master_of(Keys("tute", index_shards).shards[0].due)
        await outage(
            rcluster, load, servers, victim, LobbyProbe(servers[0], "", ""), "global slot master"
        )
        # the lobby still lists the open table; a new one joins it on both replicas
        fresh = await fo.call(
            "CreateTable",
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(preset=PRESET), take_seat=True, display_name="n"
            ),
        )
        for r in servers:
            listed = await lobby_ids(r)
            assert {waiting.table_id, fresh.table_id} <= listed
            assert not listed & set(load.table_ids)  # started tables are not open
    finally:
        await load.close()


class LobbyProbe(Probe):
    """ListTables, straight to one replica (the global slot's node answers it)."""

    async def call(self) -> None:
        await lobby_ids(self.replica)


async def test_reshard_of_live_tables(rcluster: ReplicatedCluster, servers: list[Replica]) -> None:
    """``redis-cli --cluster reshard`` moves the slots of tables being played to another
    master: no client sees an error beyond a retried UNAVAILABLE, nothing is lost."""
    load = await start_load(servers, humans=3, seed=20)
    try:
        # the table lowest in its master's slots: resharding from the bottom moves it
        best: tuple[int, str, ClusterNode] | None = None
        for t in load.tokens:
            node = rcluster.master_of(f"tute:{{{t}}}")
            rank = rcluster.slots_of(node).index(rcluster.slot_of(f"tute:{{{t}}}"))
            if best is None or rank < best[0]:
                best = (rank, t, node)
        assert best is not None
        rank, table, source = best
        target = next(rcluster.node(i.port) for i in rcluster.masters() if i.port != source.port)
        moved = tables_on(rcluster, load.table_ids)[source.port]
        probe = Probe(servers[0], table, load.tokens[table]).start()
        load.probes.append(probe)
        for m in load.matches:
            m.resume()
        for m in load.matches:
            await m.spectators[1].wait_until(lambda w: len(w.events) >= 10, timeout=60)
        started = time.monotonic()
        await asyncio.to_thread(rcluster.reshard, rank + 1, source, target)
        print(
            f"\nreshard of {rank + 1} slots ({len(moved)} live tables on the source): "
            f"{time.monotonic() - started:.2f} s; probe codes {dict(probe.codes)}"
        )
        assert rcluster.master_of(f"tute:{{{table}}}").port == target.port
        await finish_and_check(load, servers)
        await probe.stop()
        assert set(probe.codes) <= {"OK", "UNAVAILABLE"}, probe.codes
    finally:
        await load.close()
