"""Redis Cluster, and the two steps of a Redis commit that make it possible: the table's own
slot first, then the indexes in the global slot, with write-ahead markers and repair (see
``service/store/redis.py``). Every test runs on a real three-node Redis Cluster; those about
the index step run on a single Redis too (the same code paths).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
import redis.cluster
from redis.crc import key_slot

from service.store.base import Commit, LobbyEntry, StoredEvent, StoreUnavailable
from service.store.redis import RedisOptions, RedisStore
from tests.support.redis import RedisClusterProcess
from tests.support.wait import eventually

GLOBAL_SLOT = key_slot(b"{tute:g}")


def ev(seq: int) -> StoredEvent:
    return StoredEvent(seq, b"public %d" % seq, {seq % 4: b"private %d" % seq})


@pytest.fixture(params=["redis", "cluster"])
def url(request: pytest.FixtureRequest) -> str:
    return str(
        request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")
    )


@contextmanager
def raw(url: str) -> Iterator[Any]:
    """A plain synchronous client of the same Redis or Redis Cluster, to look inside."""
    if "cluster=1" in url:
        parts = urlsplit(url)
        assert parts.port is not None
        client: Any = redis.cluster.RedisCluster(host=parts.hostname, port=parts.port)
    else:
        client = redis.Redis.from_url(url)
    try:
        yield client
    finally:
        client.close()


QUICK = RedisOptions(fence_s=300.0, repair_after_s=600.0, maintain_every_s=0.0, inline_index=False)
"""The two steps on a single Redis too (``inline_index=False``). Repair on every claim.
Markers age only where a test ages them (:func:`age_markers`, :func:`counting_marks`): the
fence and the repair age are far beyond any stall of a busy machine, so a commit never meets
its own marker's fence by accident."""


def quick(url: str, **options: Any) -> RedisStore:
    """A store on ``url`` with the :data:`QUICK` options (and ``options``)."""
    return RedisStore.from_url(url, dataclasses.replace(QUICK, **options))


def tune(store: RedisStore, **options: Any) -> None:
    """Change the options of ``store``'s repair passes from now on."""
    store.index.options = dataclasses.replace(store.index.options, **options)


async def born(store: RedisStore) -> RedisStore:
    """Run the first repair pass to its end (it rebuilds the indexes of an empty database)."""
    await store.repair()
    if store.index.rebuild_task is not None:
        await store.index.rebuild_task
    return store


@pytest.fixture
async def pair(url: str) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    """Two replicas' stores: ``s`` writes (and may crash), ``p`` repairs."""
    s = quick(url)
    p = await born(quick(url))
    try:
        yield s, p
    finally:
        await s.close()
        await p.close()


class Crash(Exception):
    """The replica dies between the table step and the index step of a commit or create."""


def crash_before_the_index_step(store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> None:
    async def die(*args: object, **kwargs: object) -> None:
        raise Crash

    monkeypatch.setattr(store.index, "apply", die)


def hold_index_steps(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[Any, ...]], Any]:
    """Keep ``store``'s index steps back (their arguments, in order) instead of applying
    them; also returns the real step, to apply one late."""
    held: list[tuple[Any, ...]] = []
    real = store.index.apply

    async def hold(*args: Any) -> None:
        held.append(args)

    monkeypatch.setattr(store.index, "apply", hold)
    return held, real


def markers(url: str) -> int:
    with raw(url) as r:
        return int(r.zcard("{tute:g}:pend"))


def age_markers(r: Any, seconds: float) -> None:
    """Make every write-ahead marker ``seconds`` older (as if written that much earlier by
    Redis's clock), so that repair takes them now; ``r`` reaches the global slot."""
    for member, score in r.zrange("{tute:g}:pend", 0, -1, withscores=True):
        r.zadd("{tute:g}:pend", {member: score - seconds * 1000})


def counting_marks(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch, age_first_ms: int = 0
) -> list[str]:
    """Record the markers ``store`` writes; the first one as if written ``age_first_ms`` ago."""
    real = store.index.mark
    made: list[str] = []

    async def mark(table_id: str) -> tuple[str, int]:
        member, ms = await real(table_id)
        made.append(member)
        return member, ms - (age_first_ms if len(made) == 1 else 0)

    monkeypatch.setattr(store.index, "mark", mark)
    return made


async def test_a_crash_between_the_two_steps_is_repaired(
    pair: tuple[RedisStore, RedisStore], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, p = pair
    tune(p, scrub_batch=0)  # only the markers may lead repair to these tables here
    listed = LobbyEntry("a", "parejas", 4, 3, 100.0)
    await s.create("a", b"r1", "", listed)
    crash_before_the_index_step(s, monkeypatch)
    now = time.time()
    # a: the last seat is taken by a third bot, one is on turn (due now); the replica dies
    # before the lobby, the due set, the status sets and the bot count hear of it
    with pytest.raises(Crash):
        await s.commit(
            "a",
            Commit(1, b"r2", [ev(1)], lobby=None, due_at=now - 1, status="playing", bot_seats=3),
        )
    # b: created, and the replica dies before it is listed
    entry_b = LobbyEntry("b", "dos", 2, 1, 200.0)
    with pytest.raises(Crash):
        await s.create("b", b"r1", "INVITE22", entry_b)
    assert await p.load("a") == (2, b"r2") and await p.load("b") == (1, b"r1")
    assert markers(url) == 2
    # the indexes still say what they said before; a young marker is left alone (its
    # commit might still be on its way)
    await p.repair()
    assert await p.next_due() is None
    assert await p.lobby("", 0, None, 10) == [listed]
    assert await p.find_invite("INVITE22") is None
    assert await p.count_tables() == {"waiting": 1, "playing": 0, "finished": 0}
    assert await p.count_bot_seats() == 0
    with raw(url) as r:
        age_markers(r, p.options.repair_after_s + 0.1)
    claimed = await p.claim_due(time.time(), 30.0, 10)  # repairs first, then claims
    assert [(d.table_id, d.due_at) for d in claimed] == [("a", pytest.approx(now - 1))]
    assert await p.lobby("", 0, None, 10) == [entry_b]
    assert await p.find_invite("INVITE22") == "b"
    assert await p.count_tables() == {"waiting": 1, "playing": 1, "finished": 0}
    assert await p.count_bot_seats() == 3
    assert markers(url) == 0
    # a move that keeps the index, then a repair pass that applies that state again: the
    # claim's lease holds (the due time did not change), the bots are counted once
    assert (
        await p.commit(
            "a", Commit(2, b"r3", [ev(2)], due_at=now - 1, status="playing", bot_seats=3)
        )
    ).applied
    tune(p, scrub_batch=100)
    await p.repair()
    assert await p.claim_due(time.time(), 30.0, 10) == []
    assert await p.count_bot_seats() == 3
    # the table goes on as usual from any replica
    assert (
        await p.commit("a", Commit(3, b"r4", [ev(3)], due_at=0.0, status="finished", bot_seats=3))
    ).applied
    assert await p.next_due() is None
    assert await p.count_tables() == {"waiting": 1, "playing": 0, "finished": 1}
    assert await p.count_bot_seats() == 0


async def test_a_late_index_step_never_puts_an_older_state_back(
    pair: tuple[RedisStore, RedisStore], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two replicas commit one after the other; the first one's index step arrives last."""
    s, p = pair
    await s.create("t", b"r", "", LobbyEntry("t", "parejas", 4, 3, 5.0))
    held, real = hold_index_steps(s, monkeypatch)
    assert (
        await s.commit(
            "t",
            Commit(
                1,
                b"r2",
                [ev(1)],
                lobby=LobbyEntry("t", "parejas", 4, 2, 5.0),
                due_at=50.0,
                status="waiting",
            ),
        )
    ).applied
    assert (
        await p.commit("t", Commit(2, b"r3", [ev(2)], lobby=None, due_at=60.0, status="playing"))
    ).applied
    await real(*held[0])  # version 2's state, after version 3's
    assert await p.lobby("", 0, None, 10) == []
    assert await p.next_due() == 60.0
    assert await p.count_tables() == {"waiting": 0, "playing": 1, "finished": 0}
    assert markers(url) == 0


async def test_a_commit_marks_again_when_its_marker_is_stale_or_missing(
    pair: tuple[RedisStore, RedisStore], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, p = pair
    await s.create("t", b"r", "", None)
    # a marker older than the fence (the replica stalled): refused, marked again, applied
    made = counting_marks(s, monkeypatch, age_first_ms=int(QUICK.fence_s * 1000) + 1000)
    assert (await s.commit("t", Commit(1, b"r2", [ev(1)], due_at=123.0, status="playing"))).applied
    assert len(made) == 2
    assert await p.next_due() == 123.0
    # a replica that wrongly thinks the index stays as it was sends no marker: refused too
    s.index.known["t"] = (2, (b"", b"0", b"0", b"finished", b"0"))
    assert (await s.commit("t", Commit(2, b"r3", [ev(2)], due_at=0.0, status="finished"))).applied
    assert len(made) == 3
    assert await p.next_due() is None
    assert await p.count_tables() == {"waiting": 0, "playing": 0, "finished": 1}
    assert markers(url) == 0
    assert await p.events_after("t", 0) == [ev(1), ev(2)]


async def test_moves_that_keep_the_index_need_no_index_step_and_the_table_stays_counted(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Redis keeps the TTLs in real time: the moves go on for longer than the TTL, and the
    # TTL is wide beside the pause between two moves, so a stalled machine cannot let the
    # table expire between them.
    ttl_s = 2.0
    s = await born(quick(url, abandoned_ttl_s=ttl_s))
    try:
        made = counting_marks(s, monkeypatch)
        await s.create("t", b"r", "", None)
        assert (await s.commit("t", Commit(1, b"r", [ev(1)], due_at=0.0, status="playing"))).applied
        assert len(made) == 2
        # moves for longer than the TTL: each refreshes the table's TTL, none touches the
        # index (one round trip each), so its status entry's expiry falls behind
        version = 2
        t0 = time.monotonic()
        while time.monotonic() - t0 < ttl_s * 1.5:
            assert (
                await s.commit("t", Commit(version, b"r", [ev(version)], status="playing"))
            ).applied
            version += 1
            await asyncio.sleep(0.05)
        assert len(made) == 2
        await s.claim_due(time.time(), 5.0, 10)  # repair: the table is there, scored again
        assert await s.count_tables() == {"waiting": 0, "playing": 1, "finished": 0}

        async def expired() -> bool:  # no more moves: it expires
            return await s.load("t") is None

        await eventually(expired, timeout=30)
        await s.claim_due(time.time(), 5.0, 10)
        assert await s.count_tables() == {"waiting": 0, "playing": 0, "finished": 0}
    finally:
        await s.close()


async def test_index_entries_of_tables_that_vanished_are_removed(
    pair: tuple[RedisStore, RedisStore], url: str
) -> None:
    s, p = pair
    await s.create("x", b"r", "CODE3456", LobbyEntry("x", "parejas", 4, 3, 1.0))
    await s.create("y", b"r", "", None)
    await s.commit(
        "y", Commit(1, b"r", [ev(1)], due_at=time.time() + 60, status="playing", bot_seats=2)
    )
    await s.create("z", b"r", "", None)
    await s.commit("z", Commit(1, b"r", [], bot_seats=1))
    assert await p.count_bot_seats() == 3
    with raw(url) as r:  # as a Cluster node that restarted empty would leave them
        for t in ("x", "y"):
            r.delete(f"tute:{{{t}}}", f"tute:{{{t}}}:x", f"tute:{{{t}}}:i")
    assert await p.count_tables() == {"waiting": 2, "playing": 1, "finished": 0}
    await p.repair()
    assert await p.count_bot_seats() == 1  # z's bot alone
    assert await p.lobby("", 0, None, 10) == []
    assert await p.find_invite("CODE3456") is None
    assert await p.next_due() is None
    assert await p.count_tables() == {"waiting": 1, "playing": 0, "finished": 0}
    with raw(url) as r:
        assert r.hkeys("{tute:g}:ver") == [b"z"] and r.hlen("{tute:g}:invof") == 0


async def test_on_a_single_redis_a_change_indexes_in_its_own_script(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default on a single Redis: a create, a commit or a delete and its index step are
    one script, so a replica that dies after it leaves nothing to repair, and no marker is
    written."""
    s = await born(quick(redis_url, inline_index=True))
    two_step = await born(quick(redis_url))  # a replica still on the two steps, beside it
    try:
        assert s.inline_index and not two_step.inline_index
        made = counting_marks(s, monkeypatch)
        crash_before_the_index_step(s, monkeypatch)  # any separate index step would raise
        listed = LobbyEntry("a", "parejas", 4, 3, 100.0)
        await s.create("a", b"r1", "INVITE22", listed)
        with pytest.raises(ValueError, match="table id already used"):
            await s.create("a", b"other", "", None)
        assert await two_step.lobby("", 0, None, 10) == [listed]
        assert await two_step.find_invite("INVITE22") == "a"
        assert await two_step.count_tables() == {"waiting": 1, "playing": 0, "finished": 0}
        now = time.time()
        # the last seat taken by a third bot, one on turn: every index changes at once
        assert (
            await s.commit(
                "a",
                Commit(
                    1, b"r2", [ev(1)], lobby=None, due_at=now - 1, status="playing", bot_seats=3
                ),
            )
        ).applied
        assert made == [] and markers(redis_url) == 0
        assert await two_step.lobby("", 0, None, 10) == []
        assert await two_step.next_due() == pytest.approx(now - 1)
        assert await two_step.count_tables() == {"waiting": 0, "playing": 1, "finished": 0}
        assert await two_step.count_bot_seats() == 3
        assert await two_step.find_invite("INVITE22") == "a"
        # a move that keeps the due time keeps a claim's lease, as the index step does
        claimed = await two_step.claim_due(time.time(), 30.0, 10)
        assert [d.table_id for d in claimed] == ["a"]
        assert (
            await s.commit(
                "a", Commit(2, b"r3", [ev(2)], due_at=now - 1, status="playing", bot_seats=3)
            )
        ).applied
        assert await two_step.claim_due(time.time(), 30.0, 10) == []
        # a conflict and a refused commit change nothing
        stale = await s.commit("a", Commit(2, b"rX", [ev(3)], due_at=0.0, status="finished"))
        assert not stale.applied and stale.version == 3
        with pytest.raises(redis.exceptions.ResponseError, match="is not after"):
            await s.commit("a", Commit(3, b"rX", [ev(2)], due_at=0.0, status="finished"))
        assert await two_step.load("a") == (3, b"r3")
        assert await two_step.count_tables() == {"waiting": 0, "playing": 1, "finished": 0}
        # the two-step replica's late index step of an older version puts nothing back
        held, real = hold_index_steps(two_step, monkeypatch)
        assert (
            await two_step.commit("a", Commit(3, b"r4", [ev(3)], due_at=50.0, status="playing"))
        ).applied
        assert (
            await s.commit(
                "a", Commit(4, b"r5", [ev(4)], due_at=0.0, status="finished", bot_seats=3)
            )
        ).applied
        await real(*held[0])
        assert await s.next_due() is None
        assert await s.count_tables() == {"waiting": 0, "playing": 0, "finished": 1}
        assert await s.count_bot_seats() == 0
        assert markers(redis_url) == 0
        assert await s.events_after("a", 0) == [ev(1), ev(2), ev(3), ev(4)]
        # a delete at a version the table has left deletes nothing; at its version, the
        # table leaves every index with its keys
        assert not await s.delete("a", 4)
        assert await s.count_tables() == {"waiting": 0, "playing": 0, "finished": 1}
        assert await s.delete("a", 5)
        assert await two_step.load("a") is None
        assert await two_step.count_tables() == {"waiting": 0, "playing": 0, "finished": 0}
        assert await two_step.find_invite("INVITE22") is None
        assert not await s.delete("a", 5)
        with raw(redis_url) as r:
            assert r.hlen("{tute:g}:ver") == 0 and r.hlen("{tute:g}:invof") == 0
        assert made == [] and markers(redis_url) == 0
        assert s.index.known == {}  # nothing to predict: no marker is ever needed
    finally:
        await s.close()
        await two_step.close()


async def test_a_cluster_always_takes_the_two_steps(redis_cluster_url: str) -> None:
    s = quick(redis_cluster_url, inline_index=True)
    try:
        assert not s.inline_index
    finally:
        await s.close()


def test_the_inline_index_step_is_a_url_option() -> None:
    assert not RedisOptions().with_url_options({"inline_index": "0"}).inline_index
    assert RedisOptions(inline_index=False).with_url_options({"inline_index": "on"}).inline_index
    with pytest.raises(ValueError, match="inline_index must be 1 or 0, not 'maybe'"):
        RedisOptions().with_url_options({"inline_index": "maybe"})


def wipe_the_global_slot(url: str, request: pytest.FixtureRequest) -> None:
    """Lose every index: on a Cluster, the global slot's node restarts empty (FLUSHALL)."""
    if "cluster=1" in url:
        cluster: RedisClusterProcess = request.getfixturevalue("redis_cluster")
        with redis.Redis(port=cluster.node_of_slot(GLOBAL_SLOT)) as r:
            r.flushall()
    else:
        with redis.Redis.from_url(url) as r:
            r.delete(*r.keys("{tute:g}*"))


def ids_off_the_global_node(url: str, request: pytest.FixtureRequest, n: int) -> list[str]:
    if "cluster=1" not in url:
        return [f"t{i}" for i in range(n)]
    cluster: RedisClusterProcess = request.getfixturevalue("redis_cluster")
    home = cluster.node_of_slot(GLOBAL_SLOT)
    candidates = (f"t{i}" for i in range(1000))
    return [t for t in candidates if cluster.node_of_slot(key_slot(t.encode())) != home][:n]


async def test_lost_indexes_are_rebuilt_from_the_tables(
    pair: tuple[RedisStore, RedisStore], url: str, request: pytest.FixtureRequest
) -> None:
    s, p = pair
    w, q, f = ids_off_the_global_node(url, request, 3)
    listed = LobbyEntry(w, "parejas", 4, 3, 7.0)
    await s.create(w, b"r", "CODE7777", listed)
    await s.create(q, b"r", "", None)
    await s.commit(
        q, Commit(1, b"r", [ev(1)], due_at=time.time() - 1, status="playing", bot_seats=3)
    )
    await s.create(f, b"r", "", None)
    await s.commit(f, Commit(1, b"r", [ev(1)], status="finished", bot_seats=4))
    wipe_the_global_slot(url, request)
    assert await p.count_bot_seats() == 0
    assert await p.lobby("", 0, None, 10) == []
    assert await p.claim_due(time.time(), 5.0, 10) == []  # repair sees the loss, rebuilds
    assert p.index.rebuild_task is not None
    await p.index.rebuild_task
    assert await p.lobby("", 0, None, 10) == [listed]
    assert await p.find_invite("CODE7777") == w
    assert [d.table_id for d in await p.claim_due(time.time(), 5.0, 10)] == [q]
    assert await p.count_tables() == {"waiting": 1, "playing": 1, "finished": 1}
    assert await p.count_bot_seats() == 3


async def test_tables_are_spread_over_every_node_of_the_cluster(
    redis_cluster: RedisClusterProcess, redis_cluster_url: str
) -> None:
    ids = [f"spread-{i}" for i in range(24)]
    with redis.Redis(port=redis_cluster.ports[0]) as r:
        slots = {t: int(r.execute_command("CLUSTER KEYSLOT", f"tute:{{{t}}}")) for t in ids}
        assert slots == {
            t: int(r.execute_command("CLUSTER KEYSLOT", f"tute:{{{t}}}:x")) for t in ids
        }
        global_slot = int(r.execute_command("CLUSTER KEYSLOT", "{tute:g}:due"))
    node_of = {t: redis_cluster.node_of_slot(slot) for t, slot in slots.items()}
    assert set(node_of.values()) == set(redis_cluster.ports)  # every node holds tables
    assert global_slot == GLOBAL_SLOT
    s = RedisStore.from_url(redis_cluster_url)
    p = RedisStore.from_url(redis_cluster_url)
    try:
        now = time.time()
        entries = {t: LobbyEntry(t, "parejas", 4, 3, 1000.0 + i) for i, t in enumerate(ids)}
        for i, t in enumerate(ids):
            await s.create(t, b"r1", f"CODE{i:04d}", entries[t] if i % 2 else None)
        subs = {t: await p.subscribe(t) for t in ids}  # one reader per table, on its node
        for i, t in enumerate(ids):
            assert (
                await s.commit(
                    t,
                    Commit(
                        1,
                        b"r2",
                        [ev(1), ev(2)],
                        idempotency_key="k",
                        response=b"first",
                        lobby=entries[t] if i % 3 else None,
                        due_at=now - 1 if i % 4 == 0 else 0.0,
                        status="waiting" if i % 3 else "playing",
                    ),
                )
            ).applied
        for t in ids:
            got = [await asyncio.wait_for(subs[t].__aiter__().__anext__(), 5) for _ in range(2)]
            assert got == [ev(1), ev(2)]
            await subs[t].close()
        listed = [entries[t] for i, t in enumerate(ids) if i % 3]
        assert await p.lobby("", 0, None, 50) == listed[::-1]
        assert [await p.find_invite(f"CODE{i:04d}") for i in range(len(ids))] == ids
        due = sorted(d.table_id for d in await p.claim_due(now, 5.0, 50))
        assert due == sorted(t for i, t in enumerate(ids) if i % 4 == 0)
        playing = sum(1 for i in range(len(ids)) if i % 3 == 0)
        assert await p.count_tables() == {
            "waiting": len(ids) - playing,
            "playing": playing,
            "finished": 0,
        }
        dup = await p.commit(ids[5], Commit(1, b"again", [ev(1)], idempotency_key="k"))
        assert dup.duplicate_response == b"first"
        assert all([await p.events_after(t, 0) == [ev(1), ev(2)] for t in ids])
        # each table's keys sit on the node of its slot, the indexes on the global one
        for port in redis_cluster.ports:
            with redis.Redis(port=port) as r:
                here = {k.decode() for k in r.keys("tute:*")}
                expected = {
                    f"tute:{{{t}}}{tail}"
                    for t in ids
                    if node_of[t] == port
                    for tail in ("", ":x", ":i")
                }
                assert here == expected
                has_global = bool(r.keys("{tute:g}:*"))
                assert has_global == (port == redis_cluster.node_of_slot(GLOBAL_SLOT))
    finally:
        await s.close()
        await p.close()


async def test_the_cluster_url(redis_cluster_url: str) -> None:
    store = RedisStore.from_url(redis_cluster_url + "&retention=50&prefix=c")
    try:
        assert store.cluster and store.options.retention == 50
        await store.create("t", b"r", "", None)
        await store.ping()
        assert await store.load("t") == (1, b"r")
    finally:
        await store.close()
    plain = RedisStore.from_url(redis_cluster_url.replace("?cluster=1", "?cluster=0"))
    assert not plain.cluster
    await plain.close()
    with pytest.raises(ValueError, match="database 0 only"):
        RedisStore.from_url(redis_cluster_url.replace("/0?", "/1?"))
    with pytest.raises(ValueError, match=r"redis://host:port\?cluster=1"):
        RedisStore.from_url("unix:///tmp/redis.sock?cluster=1")


async def test_a_node_down_fails_only_its_own_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One primary of the cluster is killed: calls about its tables fail with
    StoreUnavailable, the others (and the lobby, the scheduler, repair) go on; it comes back
    empty, and repair takes its tables out of the indexes."""
    cluster = RedisClusterProcess(tmp_path / "cluster").start()
    s = quick(cluster.url)
    p = quick(cluster.url)
    try:
        home = cluster.node_of_slot(GLOBAL_SLOT)
        first = cluster.node_of_slot(0)  # the node redis-py's client turns to first
        assert first != home
        node_of = {f"n{i}": cluster.node_of_slot(key_slot(b"n%d" % i)) for i in range(100)}
        alive = next(t for t, port in node_of.items() if port == home)
        lost = next(t for t, port in node_of.items() if port == first)
        await born(p)
        await s.create(alive, b"r", "", None)
        await s.create(lost, b"r", "LOST2345", LobbyEntry(lost, "dos", 2, 1, 3.0))
        crash_before_the_index_step(s, monkeypatch)
        now = time.time()
        with pytest.raises(Crash):
            await s.commit(alive, Commit(1, b"r2", [ev(1)], due_at=now - 1, status="playing"))
        victim = next(n for n in cluster.nodes if n.port == node_of[lost])
        victim.kill()
        # it fails with StoreUnavailable rather than waiting on the dead node (bounded: a
        # load that hangs fails the test with TimeoutError instead)
        async with asyncio.timeout(30):
            with pytest.raises(StoreUnavailable):
                await p.load(lost)
        assert await p.load(alive) == (2, b"r2")
        await p.ping()  # the global slot's node answers: still serving
        with redis.Redis(port=home) as r:  # the global slot's node, still up
            age_markers(r, p.options.repair_after_s + 0.1)
        claimed = await p.claim_due(time.time(), 30.0, 10)  # repair skips the lost node
        assert [d.table_id for d in claimed] == [alive]
        assert await p.count_tables() == {"waiting": 1, "playing": 1, "finished": 0}
        victim.start(same_port=True)  # no persistence: back without its tables
        async with asyncio.timeout(20):
            while not all(cluster._state_ok(port) for port in cluster.ports):
                await asyncio.sleep(0.1)
        await p.repair()
        assert await p.load(lost) is None
        assert await p.lobby("", 0, None, 10) == []
        assert await p.find_invite("LOST2345") is None
        assert await p.count_tables() == {"waiting": 0, "playing": 1, "finished": 0}
    finally:
        await s.close()
        await p.close()
        cluster.stop()


def lose_the_next_reply(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The next reply that is a list is read, then the connection "breaks": Redis ran the call
    but the caller never sees its reply, and redis-py sends the call again."""
    from redis.asyncio.connection import AbstractConnection
    from redis.exceptions import ConnectionError as RedisConnectionError

    real = AbstractConnection.read_response
    lost: list[object] = []

    async def read_response(self: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
        reply = await real(self, *args, **kwargs)
        if not lost and isinstance(reply, list):
            lost.append(reply)
            raise RedisConnectionError("the reply was lost")
        return reply

    monkeypatch.setattr(AbstractConnection, "read_response", read_response)
    return lost


async def test_a_claim_sent_again_returns_what_it_took(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redis-py sends a call again when its connection broke (on a Cluster, also when its reply
    timed out), though Redis may have run it. A claim sent again returns what it took the first
    time: the items are not left leased to nobody until the lease ends."""
    store = await born(RedisStore.from_url(url, RedisOptions(maintain_every_s=3600.0)))
    try:
        now = time.time()
        for t in ("d0", "d1", "d2"):
            await store.create(t, b"r", "", None)
            await store.commit(t, Commit(1, b"r", [ev(1)], due_at=now - 1, status="playing"))
        assert await store.claim_due(now - 10, 30.0, 10) == []  # runs the hour's repair pass
        lost = lose_the_next_reply(monkeypatch)
        claimed = await store.claim_due(now, 30.0, 10)
        assert len(lost) == 1  # Redis ran the claim, its reply was lost, it was sent again
        assert sorted(d.table_id for d in claimed) == ["d0", "d1", "d2"]
        assert await store.claim_due(now, 30.0, 10) == []  # leased: a new claim gets nothing
        assert sorted(d.table_id for d in await store.claim_due(now + 31, 30.0, 10)) == [
            "d0",
            "d1",
            "d2",
        ]  # the record of the first claim does not outlive its lease
    finally:
        await store.close()


async def test_calls_in_flight_survive_a_fresh_client_and_moved_replies(
    redis_cluster_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh store's concurrent first calls go straight to the right node (redis-py routes
    the calls of a client that has not learnt the layout yet to any node), and a MOVED reply
    moves its slot alone (redis-py's default drops every connection of every node on each
    fifth MOVED, under the calls still running on them, which then fail or are sent again)."""
    from redis.asyncio.cluster import NodesManager, RedisCluster

    moved: list[int] = []
    dropped: list[RedisCluster] = []
    real_move, real_close = NodesManager.move_slot, RedisCluster.aclose

    async def move_slot(self: NodesManager, e: Any) -> None:
        moved.append(e.slot_id)
        await real_move(self, e)

    async def aclose(self: RedisCluster) -> None:
        dropped.append(self)
        await real_close(self)

    monkeypatch.setattr(NodesManager, "move_slot", move_slot)
    monkeypatch.setattr(RedisCluster, "aclose", aclose)
    writer = RedisStore.from_url(redis_cluster_url)
    fresh = RedisStore.from_url(redis_cluster_url)
    try:
        now = time.time()
        tables = sorted(f"m{i}" for i in range(20))
        for t in tables:
            await writer.create(t, b"r", "", None)
            await writer.commit(t, Commit(1, b"r", [ev(1)], due_at=now - 1, status="playing"))
        got = await asyncio.gather(*[fresh.claim_due(now, 30.0, 2) for _ in range(10)])
        assert sorted(d.table_id for batch in got for d in batch) == tables
        assert moved == [] and dropped == []
        # The client's layout is stale: it sends the global slot's calls to another node.
        client = fresh.link.client
        assert isinstance(client, RedisCluster)
        home = client.nodes_manager.slots_cache[GLOBAL_SLOT][0]
        other = next(n for n in client.get_primaries() if n.name != home.name)
        client.nodes_manager.slots_cache[GLOBAL_SLOT] = [other]
        got = await asyncio.gather(*[fresh.claim_due(now + 31, 30.0, 2) for _ in range(10)])
        assert sorted(d.table_id for batch in got for d in batch) == tables
        assert GLOBAL_SLOT in moved and dropped == []
    finally:
        await writer.close()
        await fresh.close()
