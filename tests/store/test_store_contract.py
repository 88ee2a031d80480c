"""The store contract: one suite, run against every store (memory, Redis, and Redis on a
three-node Redis Cluster).

Each test gets ``store`` and ``peer``: for the memory store the same object; for Redis a second
store on the same database (or cluster), as another replica would open it, so every test of
publishing and scheduling also checks that it works across replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from service.store import memory
from service.store.base import (
    Commit,
    DueItem,
    LobbyEntry,
    Store,
    StoredEvent,
    StoreUnavailable,
    Subscription,
    SubscriptionEnded,
)
from service.store.memory import MemoryStore
from service.store.redis import RedisOptions, RedisStore
from service.store.redis import reader as redis_reader
from tests.support.clock import FakeClock
from tests.support.wait import eventually

FINISHED_TTL_S = 0.4
"""The finished tables' TTL of the expiry test (the other tests keep the stores' default, an
hour, so that no table of theirs expires while they run)."""


@dataclass
class Stores:
    store: Store
    peer: Store
    kind: str
    url: str = ""
    """The Redis store URL ('' for memory)."""
    ports: tuple[int, ...] = ()
    """The ports of every Redis server behind the URL."""
    clock: FakeClock = dataclasses.field(default_factory=FakeClock)
    """The clock of both stores (Redis's own clock still expires Redis keys)."""

    @contextlib.asynccontextmanager
    async def other(self, **options: Any) -> AsyncIterator[tuple[Store, Store]]:
        """Another (store, peer) pair of this kind on the same clock, with ``options`` (of
        both MemoryStore and RedisOptions: ``retention``, ``finished_ttl_s``)."""
        if self.kind == "memory":
            one = MemoryStore(clock=self.clock, **options)
            yield one, one
            return
        a = RedisStore.from_url(self.url, RedisOptions(**options), clock=self.clock)
        b = RedisStore.from_url(self.url, RedisOptions(**options), clock=self.clock)
        try:
            yield a, b
        finally:
            await a.close()
            await b.close()

    @contextlib.asynccontextmanager
    async def with_retention(self, retention: int) -> AsyncIterator[tuple[Store, Store]]:
        """Another (store, peer) pair of this kind that keeps ``retention`` events."""
        if self.kind == "memory":
            async with self.other(retention=retention) as pair:
                yield pair
            return
        for port in self.ports:  # so that Redis's MAXLEN ~ trims at such small sizes
            with redis.Redis(port=port) as r:
                r.config_set("stream-node-max-entries", 4)
        try:
            async with self.other(retention=retention) as pair:
                yield pair
        finally:
            for port in self.ports:
                with redis.Redis(port=port) as r:
                    r.config_set("stream-node-max-entries", 100)


@pytest.fixture(params=["memory", "redis", "cluster", "cluster-sharded"])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[Stores]:
    """``cluster-sharded``: the Cluster with its indexes in three shards."""
    clock = FakeClock()
    if request.param == "memory":
        one = MemoryStore(clock=clock)
        yield Stores(one, one, "memory", clock=clock)
        return
    url = request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")
    if request.param == "cluster-sharded":
        url += "&index_shards=3"
    if request.param == "redis":
        ports: tuple[int, ...] = (request.getfixturevalue("redis_proc").port,)
    else:
        ports = tuple(request.getfixturevalue("redis_cluster").ports)
    # a busy machine may take more than the default second to connect
    options = RedisOptions(timeout_s=10.0)
    a = RedisStore.from_url(url, options, clock=clock)
    b = RedisStore.from_url(url, options, clock=clock)
    assert a.cluster == b.cluster == request.param.startswith("cluster")
    try:
        yield Stores(a, b, request.param, url, ports, clock)
    finally:
        await a.close()
        await b.close()


def ev(seq: int, private: dict[int, bytes] | None = None) -> StoredEvent:
    return StoredEvent(seq, f"public {seq}".encode(), private or {})


async def take(sub: Subscription, n: int, timeout: float = 5.0) -> list[StoredEvent]:
    out: list[StoredEvent] = []

    async def run() -> None:
        async for e in sub:
            out.append(e)
            if len(out) == n:
                return

    await asyncio.wait_for(run(), timeout)
    return out


async def test_create_load_and_version(stores: Stores) -> None:
    s = stores.store
    assert await s.load("t1") is None
    await s.create("t1", b"record v1", "", None)
    assert await s.load("t1") == (1, b"record v1")
    assert await stores.peer.load("t1") == (1, b"record v1")
    with pytest.raises(ValueError):
        await stores.peer.create("t1", b"again", "", None)
    assert await s.load("t1") == (1, b"record v1")
    out = await s.commit("t1", Commit(1, b"record v2", [ev(1)], status="waiting"))
    assert out.applied and out.version == 2
    assert await stores.peer.load("t1") == (2, b"record v2")


async def test_invite_codes(stores: Stores) -> None:
    await stores.store.create("priv", b"r", "CODE2345", None)
    assert await stores.peer.find_invite("CODE2345") == "priv"
    assert await stores.peer.find_invite("NOPE") is None
    assert await stores.store.lobby("", 0, None, 10) == []


async def test_commit_is_a_compare_and_set(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    await s.create("t", b"r1", "", None)
    first = await s.commit("t", Commit(1, b"r2 by s", [ev(1)]))
    lost = await p.commit("t", Commit(1, b"r2 by peer", [ev(1)]))
    assert first.applied and first.version == 2
    assert not lost.applied and lost.version == 2 and lost.duplicate_response is None
    assert await s.load("t") == (2, b"r2 by s")
    assert await s.events_after("t", 0) == [ev(1)]
    nothing = await s.commit("unknown", Commit(1, b"r", [ev(1)]))
    assert not nothing.applied


async def test_concurrent_commits_one_winner_per_version(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    await s.create("race", b"r1", "", None)
    outs = await asyncio.gather(
        *[
            (s if i % 2 else p).commit("race", Commit(1, f"r{i}".encode(), [ev(1)]))
            for i in range(8)
        ]
    )
    assert sum(o.applied for o in outs) == 1
    assert (await s.load("race"))[0] == 2  # type: ignore[index]


async def test_idempotency_key_returns_the_first_response(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    await s.create("t", b"r1", "", None)
    first = await s.commit(
        "t", Commit(1, b"r2", [ev(1)], idempotency_key="0:req", response=b"first")
    )
    assert first.applied
    again = await p.commit(
        "t", Commit(1, b"r2'", [ev(1)], idempotency_key="0:req", response=b"second")
    )
    assert not again.applied and again.duplicate_response == b"first"
    # even at the current version, a used key does not apply again
    again = await p.commit(
        "t", Commit(2, b"r3", [ev(2)], idempotency_key="0:req", response=b"third")
    )
    assert not again.applied and again.duplicate_response == b"first"
    assert await p.idempotent_response("t", "0:req") == b"first"
    assert await p.idempotent_response("t", "0:other") is None
    assert await s.load("t") == (2, b"r2")
    assert await s.events_after("t", 0) == [ev(1)]


async def test_events_after_is_gap_free_with_private_variants(stores: Stores) -> None:
    s = stores.store
    await s.create("t", b"r", "", None)
    expected: list[StoredEvent] = []
    seq = 0
    for version in range(1, 11):
        batch = []
        for _ in range(version % 3 + 1):
            seq += 1
            batch.append(ev(seq, {seq % 4: b"secret %d" % seq} if seq % 2 else None))
        assert (await s.commit("t", Commit(version, b"r", batch))).applied
        expected += batch
    got = await stores.peer.events_after("t", 0)
    assert got == expected
    assert [e.seq for e in got] == list(range(1, seq + 1))
    assert got[0].for_seat(1) == b"secret 1" and got[0].for_seat(0) == b"public 1"
    assert await s.events_after("t", 7) == expected[7:]
    assert await s.events_after("t", seq) == []
    assert await s.events_after("unknown", 0) is None


async def test_subscribers_receive_commits_in_order(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    await s.create("t", b"r", "", None)
    await s.commit("t", Commit(1, b"r", [ev(1)]))
    near = await s.subscribe("t")
    far = await p.subscribe("t")  # another replica, for Redis
    far2 = await p.subscribe("t")
    events = [ev(i, {i % 4: b"x"}) for i in range(2, 32)]
    for version, i in enumerate(range(0, 30, 3), start=2):
        assert (await s.commit("t", Commit(version, b"r", events[i : i + 3]))).applied
    for sub in (near, far, far2):
        assert await take(sub, 30) == events
        await sub.close()
    with pytest.raises(KeyError):
        await s.subscribe("unknown")


async def test_subscribe_then_load_loses_nothing(stores: Stores) -> None:
    """The app subscribes, then loads: every event after the loaded state arrives live."""
    s, p = stores.store, stores.peer
    await s.create("t", b"r", "", None)
    writing = True
    written = 0

    async def writer() -> None:
        nonlocal written
        version = 1  # the record at version v has events 1 .. v-1
        while writing:
            assert (await p.commit("t", Commit(version, b"r", [ev(version)]))).applied
            written = version
            version += 1
            await asyncio.sleep(0)  # the reader's turn between commits

    def written_past(n: int) -> Callable[[], bool]:
        return lambda: written >= n

    task = asyncio.create_task(writer())
    try:
        for _ in range(5):
            await eventually(written_past(written + 3), what="three more commits")
            sub = await s.subscribe("t")
            loaded = (await s.load("t"))[0] - 1  # type: ignore[index]
            await eventually(written_past(loaded + 3), what="commits after the load")
            target = (await s.load("t"))[0] - 1  # type: ignore[index]
            assert target > loaded
            live: list[int] = []
            async with asyncio.timeout(5):
                async for e in sub:
                    if e.seq > loaded:  # older ones may come again: the app drops them
                        live.append(e.seq)
                    if e.seq >= target:
                        break
            assert live == list(range(loaded + 1, target + 1))
            await sub.close()
    finally:
        writing = False
        await task


def cursor(entry: LobbyEntry) -> tuple[float, str]:
    return (entry.created_at, entry.table_id)


async def test_lobby_filters_and_pages(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    made: list[LobbyEntry] = []
    for i in range(12):
        preset, players = ("parejas", 4) if i % 3 else ("dos", 2)
        entry = LobbyEntry(f"t{i:02d}", preset, players, players - 1, 1000.0 + i)
        await s.create(entry.table_id, b"r", "", entry)
        made.insert(0, entry)  # newest first
    assert await p.lobby("", 0, None, 50) == made
    page1 = await p.lobby("", 0, None, 5)
    page2 = await p.lobby("", 0, cursor(page1[-1]), 5)
    page3 = await p.lobby("", 0, cursor(page2[-1]), 5)
    assert page1 + page2 + page3 == made and len(page3) == 2
    fours = [e for e in made if e.players == 4]
    assert await p.lobby("parejas", 0, None, 50) == fours
    assert await p.lobby("", 4, None, 3) == fours[:3]
    assert await p.lobby("", 4, cursor(fours[2]), 50) == fours[3:]
    # a cursor keeps its place when its table leaves the lobby
    assert (await s.commit(fours[2].table_id, Commit(1, b"r", [ev(1)], lobby=None))).applied
    assert await p.lobby("", 4, cursor(fours[2]), 50) == fours[3:]
    assert await p.lobby("", 0, cursor(fours[2]), 50) == made[made.index(fours[2]) + 1 :]
    assert await p.lobby("dos", 4, None, 50) == []
    # a commit updates the entry or takes the table off the lobby
    updated = LobbyEntry("t01", "parejas", 4, 1, 1001.0)
    assert (await s.commit("t01", Commit(1, b"r", [ev(1)], lobby=updated))).applied
    assert (await s.commit("t02", Commit(1, b"r", [ev(1)], lobby=None, status="playing"))).applied
    listed = await p.lobby("parejas", 0, None, 50)
    assert updated in listed and all(e.table_id != "t02" for e in listed)


async def test_lobby_tables_reads_a_page_with_records_and_presence(stores: Stores) -> None:
    s, p, clock = stores.store, stores.peer, stores.clock
    made: list[LobbyEntry] = []
    for i in range(6):
        entry = LobbyEntry(f"l{i}", "parejas", 4, 3, 2000.0 + i)
        await s.create(entry.table_id, b"record %d" % i, "", entry)
        made.insert(0, entry)
    assert (await s.commit("l4", Commit(1, b"record 4 v2", [ev(1)], lobby=made[1]))).applied
    now = clock.now()
    await s.set_presence("l5", "1.a", 0, now + 10)
    await s.set_presence("l5", "3.b", 2, now + 10)
    await s.set_presence("l3", "1.c", 1, now - 1)  # expired
    page = await p.lobby_tables("", 0, None, 4, now)
    assert [t.entry for t in page] == made[:4]
    assert [(t.version, t.record) for t in page] == [
        (1, b"record 5"),
        (2, b"record 4 v2"),
        (1, b"record 3"),
        (1, b"record 2"),
    ]
    assert [dict(t.watchers) for t in page] == [{"1.a": 0, "3.b": 2}, {}, {}, {}]
    rest = await p.lobby_tables("", 0, cursor(page[-1].entry), 4, now)
    assert [t.entry for t in rest] == made[4:]
    assert await p.lobby_tables("dos", 0, None, 4, now) == []
    # a table gone since it was listed (its hash expired or lost) comes with no record
    assert await s.delete("l1", 1)
    assert [t.entry.table_id for t in await p.lobby_tables("", 0, None, 10, now)] == [
        "l5",
        "l4",
        "l3",
        "l2",
        "l0",
    ]


def test_a_commit_keeps_a_response_only_under_an_idempotency_key() -> None:
    assert Commit(1, b"r", idempotency_key="0:k", response=b"first").response == b"first"
    with pytest.raises(ValueError, match="idempotency key"):
        Commit(1, b"r", response=b"nobody asks for it")


async def test_claim_due_leases_an_item_to_one_claimer(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    now = time.time()
    for i, due in enumerate((now - 2, now - 1, now + 60)):
        await s.create(f"d{i}", b"r", "", None)
        assert (
            await s.commit(f"d{i}", Commit(1, b"r", [ev(1)], due_at=due, status="playing"))
        ).applied
    assert await p.next_due() == pytest.approx(now - 2)
    first = await p.claim_due(now, 5.0, 10)
    assert [(d.table_id, d.due_at) for d in first] == [
        ("d0", pytest.approx(now - 2)),
        ("d1", pytest.approx(now - 1)),
    ]
    # claimed: nobody else gets them before the lease ends
    assert await s.claim_due(now + 1, 5.0, 10) == []
    assert await s.next_due() == pytest.approx(now + 5)
    # the claimer crashed: the lease ends and the items fall due again
    again = await s.claim_due(now + 5.5, 5.0, 10)
    assert sorted(d.table_id for d in again) == ["d0", "d1"]
    # limit, and a commit replaces the due time (0: nothing due)
    assert (await s.commit("d0", Commit(2, b"r", [ev(2)], due_at=0.0, status="playing"))).applied
    assert len(await p.claim_due(now + 100, 5.0, 1)) == 1
    assert [d.table_id for d in await p.claim_due(now + 100, 5.0, 10)] == ["d2"]


async def test_claim_due_concurrently_each_item_once(stores: Stores) -> None:
    """Concurrent claims (two replicas) take each due item once. What a scheduler does with an
    item it got (commit a new due time) takes it out; an item nobody got (a claim that failed
    with StoreUnavailable may have leased some before its reply was lost) falls due again
    when the lease ends, and only such items. The claims pass ``now``: no waiting."""
    s, p = stores.store, stores.peer
    now, lease = time.time(), 30.0
    tables = {f"c{i}" for i in range(20)}
    for t in sorted(tables):
        await s.create(t, b"r", "", None)
        await s.commit(t, Commit(1, b"r", [ev(1)], due_at=now - 1, status="playing"))
    failed: list[StoreUnavailable] = []

    async def claim(store: Store) -> list[DueItem]:
        try:
            return await store.claim_due(now, lease, 3)
        except StoreUnavailable as exc:  # allowed: the scheduler polls again later
            failed.append(exc)
            return []

    got = await asyncio.gather(*[claim(s if i % 2 else p) for i in range(10)])
    claimed = [d.table_id for batch in got for d in batch]
    assert len(claimed) == len(set(claimed)), "an item was claimed twice"
    assert set(claimed) <= tables
    if not failed:
        assert sorted(claimed) == sorted(tables), "a claim lost items without failing"
    for i, t in enumerate(claimed):  # acted on: nothing due any more
        assert (await (s if i % 2 else p).commit(t, Commit(2, b"r", [ev(2)], due_at=0.0))).applied
    later = await s.claim_due(now + lease + 1, lease, 100)
    assert sorted(d.table_id for d in later) == sorted(tables - set(claimed))


async def test_count_tables_by_status(stores: Stores) -> None:
    s = stores.store
    assert await s.count_tables() == {"waiting": 0, "playing": 0, "finished": 0}
    for i in range(5):
        await s.create(f"n{i}", b"r", "", None)
    await s.commit("n1", Commit(1, b"r", [], status="playing"))
    await s.commit("n2", Commit(1, b"r", [], status="playing"))
    await s.commit("n3", Commit(1, b"r", [], status="finished"))
    await s.commit("n4", Commit(1, b"r", [], status=""))  # unchanged: still waiting
    assert await stores.peer.count_tables() == {"waiting": 2, "playing": 2, "finished": 1}


async def test_finished_tables_expire_after_their_ttl(stores: Stores) -> None:
    async with stores.other(finished_ttl_s=FINISHED_TTL_S) as (s, p):
        await finished_tables_expire(s, p, stores.clock)


async def test_a_held_finished_table_outlives_the_finished_ttl(stores: Stores) -> None:
    """A finished table committed with ``hold`` (its rating still due) is kept as long as an
    active table; the commit that lets it go gives it the finished TTL."""
    async with stores.other(finished_ttl_s=FINISHED_TTL_S) as (s, p):
        clock = stores.clock
        await s.create("h", b"r", "", None)
        await s.commit("h", Commit(1, b"r", [ev(1)], status="playing"))
        held = Commit(2, b"r", [ev(2)], status="finished", due_at=clock.now(), hold=True)
        assert (await s.commit("h", held)).applied
        left = await ttl_left_ms(p, "h")
        assert left is None or left > FINISHED_TTL_S * 1000
        clock.advance(FINISHED_TTL_S + 0.3)
        await p.claim_due(clock.now(), 5.0, 10)  # the memory store drops what expired here
        assert await p.load("h") == (3, b"r")
        assert await p.count_tables() == {"waiting": 0, "playing": 0, "finished": 1}
        assert (await s.commit("h", Commit(3, b"r", [], status="finished"))).applied
        left = await ttl_left_ms(p, "h")
        assert left is None or 0 < left <= FINISHED_TTL_S * 1000


async def ttl_left_ms(store: Store, table_id: str) -> int | None:
    """The TTL Redis holds for a table's hash (ms; -2: gone); None for the memory store."""
    if not isinstance(store, RedisStore):
        return None
    return int(await store.link.client.pttl(store.keys.table(table_id)))


async def finished_tables_expire(s: Store, p: Store, clock: FakeClock) -> None:
    entry = LobbyEntry("f", "parejas", 4, 3, 1.0)
    await s.create("f", b"r", "INV23456", entry)
    await s.create("alive", b"r", "", None)
    assert (
        await s.commit("f", Commit(1, b"r", [ev(1)], status="playing", due_at=clock.now()))
    ).applied
    assert (await s.commit("f", Commit(2, b"r", [ev(2)], status="finished"))).applied
    left = await ttl_left_ms(p, "f")
    if left is None:  # the memory store: nothing expires until its clock moves
        assert await p.load("f") == (3, b"r")
    else:  # Redis expires it on its own clock: by now it has the finished TTL, or is gone
        assert left == -2 or 0 < left <= FINISHED_TTL_S * 1000
    clock.advance(FINISHED_TTL_S + 0.3)
    # The memory store expires on its clock; Redis expires its keys on its own.

    async def expired() -> bool:
        return await p.load("f") is None

    await eventually(expired, timeout=5, what="the finished table's expiry")
    assert await p.load("f") is None
    assert await p.events_after("f", 0) is None
    assert await p.find_invite("INV23456") is None
    await p.claim_due(clock.now(), 5.0, 10)  # the scheduler's pass drops what expired
    assert await p.count_tables() == {"waiting": 1, "playing": 0, "finished": 0}
    assert await p.next_due() is None
    assert await p.load("alive") == (1, b"r")


async def test_interrupt_ends_a_subscription_with_shutdown(stores: Stores) -> None:
    s = stores.store
    await s.create("t", b"r", "", None)
    sub = await stores.peer.subscribe("t")
    other = await stores.peer.subscribe("t")
    await s.commit("t", Commit(1, b"r", [ev(1)]))
    sub.interrupt()
    with pytest.raises(SubscriptionEnded) as ended:
        await take(sub, 5)
    assert ended.value.reason == "shutdown"
    await s.commit("t", Commit(2, b"r", [ev(2)]))
    assert await take(other, 2) == [ev(1), ev(2)]  # the others go on
    await sub.close()
    await other.close()


async def test_a_watcher_too_far_behind_is_ended(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "QUEUE_LIMIT", 5)
    monkeypatch.setattr(redis_reader, "QUEUE_LIMIT", 5)
    s = stores.store
    await s.create("t", b"r", "", None)
    slow = await stores.peer.subscribe("t")
    await s.commit("t", Commit(1, b"r", [ev(i) for i in range(1, 9)]))
    got: list[StoredEvent] = []
    with pytest.raises(SubscriptionEnded) as ended:
        async with asyncio.timeout(5):
            async for e in slow:
                got.append(e)
    assert ended.value.reason == "behind"
    assert got == [ev(i) for i in range(1, 6)]


async def test_ping(stores: Stores) -> None:
    await stores.store.ping()


async def test_presence_of_watchers_across_replicas(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    await s.create("pr", b"r", "", None)
    clock = stores.clock
    now = clock.now()
    assert await p.present_seats("pr", now) == frozenset()
    await s.set_presence("pr", "w1", 0, now + 30)
    await p.set_presence("pr", "w2", 2, now + 30)
    await p.set_presence("pr", "w3", 2, now + 30)  # a second stream of the same seat
    await s.set_presence("pr", "w4", 1, now + 0.2)  # a crashed replica's watcher: not renewed
    assert await p.present_seats("pr", now) == frozenset({0, 1, 2})
    clock.advance(0.3)
    assert await s.present_seats("pr", clock.now()) == frozenset({0, 2})
    await s.set_presence("pr", "w1", 0, clock.now() + 30)  # a renewal drops what expired
    assert await p.present_seats("pr", clock.now()) == frozenset({0, 2})
    await s.clear_presence("pr", "w2")
    assert await p.present_seats("pr", clock.now()) == frozenset({0, 2})
    await p.clear_presence("pr", "w3")
    await s.clear_presence("pr", "w1")
    assert await s.present_seats("pr", clock.now()) == frozenset()


# -- token buckets (per-caller limits), driven by explicit times ---------------------------------

T0 = 1_800_000_000.0


async def test_a_new_bucket_is_full_and_refills_at_its_rate(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    for _ in range(3):
        assert (await s.take_tokens("b", 0.5, 3, 1, T0)).allowed
    denied = await p.take_tokens("b", 0.5, 3, 1, T0)  # another replica sees the same bucket
    assert not denied.allowed
    assert denied.retry_after_s == pytest.approx(2.0)
    # a second later half a token is back: still denied, one second to go
    later = await s.take_tokens("b", 0.5, 3, 1, T0 + 1)
    assert not later.allowed
    assert later.retry_after_s == pytest.approx(1.0)
    # the denials took nothing: at T0 + 2 exactly one token is there
    assert (await p.take_tokens("b", 0.5, 3, 1, T0 + 2)).allowed
    assert not (await s.take_tokens("b", 0.5, 3, 1, T0 + 2)).allowed
    # a long pause fills it up to its burst, not beyond
    for _ in range(3):
        assert (await s.take_tokens("b", 0.5, 3, 1, T0 + 1000)).allowed
    assert not (await p.take_tokens("b", 0.5, 3, 1, T0 + 1000)).allowed
    # other keys are other buckets
    assert (await p.take_tokens("other", 0.5, 3, 3, T0 + 1000)).allowed


async def test_a_bucket_takes_a_cost_whole_or_not_at_all(stores: Stores) -> None:
    s = stores.store
    assert (await s.take_tokens("c", 1.0, 10, 7, T0)).allowed
    denied = await s.take_tokens("c", 1.0, 10, 4, T0)  # 3 left, 4 wanted
    assert not denied.allowed
    assert denied.retry_after_s == pytest.approx(1.0)
    assert (await s.take_tokens("c", 1.0, 10, 3, T0)).allowed
    assert (await s.take_tokens("c", 1.0, 10, 0.25, T0 + 0.25)).allowed


async def test_a_negative_cost_gives_tokens_back_up_to_the_burst(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    assert (await s.take_tokens("r", 0.01, 2, 1, T0)).allowed
    assert (await s.take_tokens("r", 0.01, 2, 1, T0)).allowed
    assert not (await p.take_tokens("r", 0.01, 2, 1, T0)).allowed
    assert (await p.take_tokens("r", 0.01, 2, -1, T0)).allowed  # one back
    assert (await s.take_tokens("r", 0.01, 2, -5, T0)).allowed  # never above the burst
    assert (await s.take_tokens("r", 0.01, 2, 1, T0)).allowed
    assert (await s.take_tokens("r", 0.01, 2, 1, T0)).allowed
    assert not (await s.take_tokens("r", 0.01, 2, 1, T0)).allowed


async def test_a_bucket_never_refills_for_a_clock_that_went_back(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    # one token a 100 s: Redis drops a bucket once it would be full again (after 100 s of
    # its own time), far beyond any pause of a busy machine between these calls
    rate = 0.01
    assert (await s.take_tokens("k", rate, 1, 1, T0 + 1000)).allowed
    # a replica whose clock is 1000 s behind: no refill, and the bucket keeps its later time
    behind = await p.take_tokens("k", rate, 1, 1, T0)
    assert not behind.allowed
    assert behind.retry_after_s == pytest.approx(100.0)
    half = await s.take_tokens("k", rate, 1, 1, T0 + 1050)
    assert not half.allowed
    assert half.retry_after_s == pytest.approx(50.0)
    assert (await p.take_tokens("k", rate, 1, 1, T0 + 1100)).allowed


async def test_concurrent_takes_on_two_replicas_never_overdraw(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    outcomes = await asyncio.gather(
        *((s if i % 2 else p).take_tokens("race", 0.001, 5, 1, T0 + i * 1e-6) for i in range(40))
    )
    assert sum(o.allowed for o in outcomes) == 5
    assert all(o.retry_after_s > 0 for o in outcomes if not o.allowed)


async def test_bot_seats_are_counted_for_waiting_and_playing_tables(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    assert await p.count_bot_seats() == 0
    for t in ("b1", "b2", "b3"):
        await s.create(t, b"r", "", None)
    assert (await s.commit("b1", Commit(1, b"r", [], bot_seats=2))).applied
    assert (await p.commit("b2", Commit(1, b"r", [], status="playing", bot_seats=3))).applied
    assert (await s.commit("b3", Commit(1, b"r", [], bot_seats=1))).applied
    assert await p.count_bot_seats() == 6
    assert (await p.commit("b1", Commit(2, b"r", [], bot_seats=3))).applied  # one bot more
    assert await s.count_bot_seats() == 7
    # a lost compare-and-set and a repeated idempotency key count nothing
    assert not (await s.commit("b3", Commit(1, b"r", [], bot_seats=4))).applied
    assert (await s.commit("b3", Commit(2, b"r", [], idempotency_key="k", bot_seats=1))).applied
    again = await p.commit("b3", Commit(3, b"r", [], idempotency_key="k", bot_seats=4))
    assert again.duplicate_response == b""
    assert await p.count_bot_seats() == 7
    # a finished table's bots count no more; a seat freed counts no more
    assert (await p.commit("b2", Commit(2, b"r", [], status="finished", bot_seats=3))).applied
    assert (await s.commit("b1", Commit(3, b"r", [], bot_seats=2))).applied
    assert await p.count_bot_seats() == 3
    assert (await s.commit("b1", Commit(4, b"r", [], status="playing", bot_seats=2))).applied
    assert (await s.commit("b1", Commit(5, b"r", [], status="playing", bot_seats=2))).applied
    assert await s.count_bot_seats() == 3


async def test_presence_lists_each_live_watcher_with_its_seat(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    await s.create("pw", b"r", "", None)
    now = time.time()
    await s.set_presence("pw", "7.a1", 0, now + 30)
    await p.set_presence("pw", "9.b2", 2, now + 30)  # (the times are passed: no waiting)
    await p.set_presence("pw", "9.b3", 2, now + 10)
    assert await p.present_watchers("pw", now) == {"7.a1": 0, "9.b2": 2, "9.b3": 2}
    assert await s.present_watchers("pw", now + 11) == {"7.a1": 0, "9.b2": 2}
    await s.clear_presence("pw", "9.b2")
    assert await p.present_watchers("pw", now) == {"7.a1": 0, "9.b3": 2}
    assert await p.present_watchers("unknown", now) == {}


async def test_events_past_the_retention_are_trimmed_and_resume_says_so(stores: Stores) -> None:
    """Every store keeps at least the last ``retention`` events of a table (a few more at
    most); events_after from a position no longer kept is None (the app sends a snapshot)."""
    async with stores.with_retention(8) as (s, p):
        await s.create("t", b"r", "", None)
        for v in range(1, 41):
            assert (await s.commit("t", Commit(v, b"r", [ev(v, {v % 4: b"own %d" % v})]))).applied
        for store in (s, p):
            assert await store.events_after("t", 0) is None  # event 1 is gone
            assert await store.events_after("t", 1) is None
            assert await store.events_after("t", 32) == [
                ev(i, {i % 4: b"own %d" % i}) for i in range(33, 41)
            ]
            assert await store.events_after("t", 40) == []
            assert await store.events_after("t", 20) is None  # 20 back: more than a few over
        # one commit of many events keeps them all up to the retention too
        await s.create("big", b"r", "", None)
        assert (await s.commit("big", Commit(1, b"r", [ev(i) for i in range(1, 31)]))).applied
        assert await p.events_after("big", 22) == [ev(i) for i in range(23, 31)]
        assert await p.events_after("big", 0) is None


async def test_a_table_is_created_with_its_due_time(stores: Stores) -> None:
    s, p = stores.store, stores.peer
    now = time.time()
    await s.create("due", b"r", "", None, due_at=now + 600)
    await s.create("none", b"r", "", None)
    assert await p.next_due() == pytest.approx(now + 600)
    assert await p.claim_due(now + 599, 5.0, 10) == []
    got = await p.claim_due(now + 601, 5.0, 10)
    assert [(d.table_id, d.due_at) for d in got] == [("due", pytest.approx(now + 600))]


async def test_delete_removes_a_table_at_its_version_with_everything_about_it(
    stores: Stores,
) -> None:
    s, p = stores.store, stores.peer
    now = time.time()
    entry = LobbyEntry("gone", "parejas", 4, 4, 5.0)
    await s.create("gone", b"r1", "GONE2345", entry, due_at=now + 600)
    await s.create(
        "kept", b"r1", "KEPT2345", LobbyEntry("kept", "parejas", 4, 4, 6.0), due_at=now + 600
    )
    assert (
        await s.commit(
            "gone",
            Commit(
                1,
                b"r2",
                [ev(1)],
                lobby=entry,
                due_at=now + 600,
                idempotency_key="0:k",
                response=b"first",
            ),
        )
    ).applied
    await s.set_presence("gone", "1.w", 0, now + 30)
    near = await s.subscribe("gone")
    far = await p.subscribe("gone")  # another replica's reader, for Redis
    assert not await p.delete("gone", 1)  # not at that version any more: nothing happens
    assert await s.load("gone") == (2, b"r2")
    assert await p.delete("gone", 2)
    assert not await s.delete("gone", 2)  # already gone
    assert await s.load("gone") is None and await p.load("gone") is None
    assert await p.events_after("gone", 0) is None
    assert await p.idempotent_response("gone", "0:k") is None
    assert await p.present_watchers("gone", now) == {}
    assert await p.find_invite("GONE2345") is None
    assert [e.table_id for e in await p.lobby("", 0, None, 10)] == ["kept"]
    assert await p.count_tables() == {"waiting": 1, "playing": 0, "finished": 0}
    assert [d.table_id for d in await p.claim_due(now + 601, 5.0, 10)] == ["kept"]
    assert await p.find_invite("KEPT2345") == "kept"
    for sub in (near, far):  # the watchers resume, and find no table
        with pytest.raises(SubscriptionEnded) as ended:
            await take(sub, 1)
        assert ended.value.reason == "behind"
        await sub.close()
    with pytest.raises(KeyError):
        await s.subscribe("gone")


async def test_renew_due_keeps_only_the_claims_still_held(stores: Stores) -> None:
    """A claim renewed before its lease ends stays the claimer's; a renewal finds nothing to
    keep once a commit moved the due time or another claimer took the item."""
    s, p = stores.store, stores.peer
    now = time.time()
    for t in ("r0", "r1", "r2"):
        await s.create(t, b"r", "", None)
        assert (
            await s.commit(t, Commit(1, b"r", [ev(1)], due_at=now - 1, status="playing"))
        ).applied
    claimed = await s.claim_due(now, 1.0, 10)
    assert sorted(d.table_id for d in claimed) == ["r0", "r1", "r2"]
    # renewed before its lease ends: r0 stays the claimer's
    assert await s.renew_due({"r0": now + 1.0}, now + 3.0) == ["r0"]
    # r1's turn moved on (a commit set its next due time); r2's lease ran out and the
    # peer claimed it
    assert (
        await p.commit("r1", Commit(2, b"r", [ev(2)], due_at=now + 60, status="playing"))
    ).applied
    assert [d.table_id for d in await p.claim_due(now + 1.5, 5.0, 10)] == ["r2"]
    held = {"r0": now + 3.0, "r1": now + 1.0, "r2": now + 1.0}
    assert await s.renew_due(held, now + 4.0) == ["r0"]
    assert await p.claim_due(now + 3.9, 1.0, 10) == []
    assert await p.next_due() == pytest.approx(now + 4.0)
    assert [d.table_id for d in await p.claim_due(now + 4.1, 1.0, 10)] == ["r0"]
    # a stale lease end renews nothing, and an empty request is fine
    assert await s.renew_due({"r0": now + 4.0, "gone": now}, now + 9.0) == []
    assert await s.renew_due({}, now + 9.0) == []
    assert await p.next_due() == pytest.approx(now + 5.1)
