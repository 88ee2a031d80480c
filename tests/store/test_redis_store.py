"""What only the Redis store has: retention, key layout and TTLs, one subscriber connection
(or with ``pubsub=0`` one stream reader per table) per replica, and behaviour while Redis is
down (fail fast, recover by itself)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from redis.crc import key_slot

from service.store.base import (
    REWOUND,
    Commit,
    LobbyEntry,
    StoredEvent,
    StoreUnavailable,
    SubscriptionEnded,
)
from service.store.redis import RedisOptions, RedisStore
from service.store.redis.connect import Link
from service.store.redis.keys import Keys, Shard
from service.store.redis.options import URL_OPTIONS
from service.store.redis.reader import (
    CATCH_UPS_AT_ONCE,
    RECORD_SEQ,
    LiveFeeds,
    Readers,
    message_record,
    pack_events,
    stored_event,
    unpack_events,
)
from tests.support.redis import RedisProcess
from tests.support.wait import eventually


def ev(seq: int) -> StoredEvent:
    return StoredEvent(seq, b"public %d" % seq, {seq % 4: b"private %d" % seq})


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisStore]:
    s = RedisStore.from_url(redis_url)
    try:
        yield s
    finally:
        await s.close()


async def test_url_options_are_the_stores_and_the_rest_goes_to_redis(redis_url: str) -> None:
    s = RedisStore.from_url(
        redis_url + "?retention=7&finished_ttl_s=2.5&abandoned_ttl_s=60&prefix=x&timeout_s=0.5"
        "&health_check_interval=5"
    )
    try:
        o = s.options
        assert (o.retention, o.finished_ttl_s, o.abandoned_ttl_s, o.timeout_s) == (
            7,
            2.5,
            60.0,
            0.5,
        )
        given = RedisStore.from_url(
            redis_url + "?finished_ttl_s=5", RedisOptions(finished_ttl_s=60)
        )
        assert given.options.finished_ttl_s == 5.0  # the URL is the more specific
        await given.close()
        other = RedisStore.from_url(redis_url, RedisOptions(finished_ttl_s=60))
        assert other.options.finished_ttl_s == 60.0
        await other.close()
        await s.create("t", b"r", "", None)
        with redis.Redis.from_url(redis_url) as r:
            assert r.exists("x:{t}")
    finally:
        await s.close()


async def test_events_past_the_retention_are_trimmed_and_resume_says_so(redis_url: str) -> None:
    with redis.Redis.from_url(redis_url) as r:
        r.config_set("stream-node-max-entries", 4)  # so that MAXLEN ~ trims at small sizes
    s = RedisStore.from_url(redis_url, RedisOptions(retention=8))
    try:
        await s.create("t", b"r", "", None)
        for v in range(1, 41):
            assert (await s.commit("t", Commit(v, b"r", [ev(v)]))).applied
        assert await s.events_after("t", 0) is None  # event 1 is gone: the app sends a snapshot
        tail = await s.events_after("t", 35)
        assert tail == [ev(i) for i in range(36, 41)]
        with redis.Redis.from_url(redis_url) as r:
            assert 8 <= r.xlen("tute:{t}:x") <= 12
    finally:
        await s.close()


async def test_keys_of_a_table_share_one_slot_and_the_indexes_another(
    store: RedisStore, redis_url: str
) -> None:
    await store.create("abc", b"r", "CODE2345", LobbyEntry("abc", "parejas", 4, 3, 1.0))
    await store.commit(
        "abc",
        Commit(
            1,
            b"r",
            [ev(1)],
            idempotency_key="k",
            response=b"x",
            due_at=time.time() + 30,
            status="playing",
        ),
    )
    with redis.Redis.from_url(redis_url) as r:
        keys = [k.decode() for k in r.keys("*")]
    table = [k for k in keys if "{abc}" in k]
    indexes = [k for k in keys if "{abc}" not in k]
    assert sorted(table) == ["tute:{abc}", "tute:{abc}:i", "tute:{abc}:x"]
    assert len({key_slot(k.encode()) for k in table}) == 1
    assert len({key_slot(k.encode()) for k in indexes}) == 1 and len(indexes) >= 4


async def test_ttls_follow_the_status(redis_url: str) -> None:
    s = RedisStore.from_url(redis_url, RedisOptions(finished_ttl_s=60, abandoned_ttl_s=3600))
    try:
        await s.create("t", b"r", "", None)
        with redis.Redis.from_url(redis_url) as r:
            assert 3500_000 < r.pttl("tute:{t}") <= 3600_000
            await s.commit("t", Commit(1, b"r", [ev(1)], idempotency_key="k", status="playing"))
            for key in ("tute:{t}", "tute:{t}:x", "tute:{t}:i"):
                assert 3500_000 < r.pttl(key) <= 3600_000
            await s.commit("t", Commit(2, b"r", [ev(2)], status="finished"))
            for key in ("tute:{t}", "tute:{t}:x", "tute:{t}:i"):
                assert 50_000 < r.pttl(key) <= 60_000
    finally:
        await s.close()


async def test_one_reader_per_table_per_replica_whatever_the_watchers(redis_url: str) -> None:
    """The ``XREAD`` readers (a Cluster's, or ``pubsub=0``): one per watched table."""
    store = RedisStore.from_url(redis_url + "?pubsub=0")
    await store.create("a", b"r", "", None)
    await store.create("b", b"r", "", None)
    writer = RedisStore.from_url(redis_url)
    r = aredis.Redis.from_url(redis_url)
    try:
        before = len(await r.client_list())
        subs = [await store.subscribe("a") for _ in range(10)]
        subs += [await store.subscribe("b") for _ in range(10)]
        assert isinstance(store.readers, Readers)
        assert sorted(store.readers.active) == ["a", "b"]
        await writer.commit("a", Commit(1, b"r", [ev(1)]))
        for sub in subs[:10]:
            got = await asyncio.wait_for(sub.__aiter__().__anext__(), 5)
            assert got == ev(1)

        async def both_readers_block_again() -> bool:
            return sum(c.get("cmd") == "xread" for c in await r.client_list()) == 2

        await eventually(both_readers_block_again)
        after = len(await r.client_list())
        # two blocked readers (+ the store's pool and the writer's pipelined connection), not 20
        assert after - before <= 4
        task = store.readers.active["a"].task
        for sub in subs[:10]:
            await sub.close()
        assert "a" not in store.readers.active  # the last watcher left: the reader stops
        assert task is not None
        await asyncio.wait_for(asyncio.wait({task}), 10)
        assert task.done()
        for sub in subs[10:]:
            await sub.close()
        assert store.readers.active == {}
    finally:
        await store.close()
        await writer.close()
        await r.aclose()


async def test_one_subscriber_connection_per_replica_whatever_the_tables(
    store: RedisStore, redis_url: str
) -> None:
    """On a single Redis a replica takes live events from Pub/Sub: one connection subscribed
    to the channel of each watched table, whatever the tables and their watchers."""
    tables = [f"t{i}" for i in range(2 * CATCH_UPS_AT_ONCE + 8)]
    n = len(tables)
    for t in tables:
        await store.create(t, b"r", "", None)
    writer = RedisStore.from_url(redis_url)
    r = aredis.Redis.from_url(redis_url)

    async def subscribed() -> list[int]:
        return [int(c["sub"]) for c in await r.client_list() if int(c["sub"])]

    try:
        before = len(await r.client_list())
        subs = {t: [await store.subscribe(t) for _ in range(3)] for t in tables}
        assert isinstance(store.readers, LiveFeeds)
        assert sorted(store.readers.active) == sorted(tables)

        async def all_subscribed() -> bool:
            return await subscribed() == [n]

        await eventually(all_subscribed, what="the subscriber connection")
        assert await subscribed() == [n]  # one connection, one channel per table
        for t in tables:
            await writer.commit(t, Commit(1, b"r", [ev(1), ev(2)]))
        for t in tables:
            for sub in subs[t]:
                got = aiter(sub)
                assert [await asyncio.wait_for(anext(got), 5) for _ in range(2)] == [ev(1), ev(2)]
        # the subscriber, the catch-up reads at once, the writer's: not one per table
        assert len(await r.client_list()) - before <= 1 + CATCH_UPS_AT_ONCE + 2
        for t in tables[:8]:
            for sub in subs[t]:
                await sub.close()
        assert sorted(store.readers.active) == sorted(tables[8:])

        async def eight_fewer() -> bool:
            return await subscribed() == [n - 8]

        await eventually(eight_fewer)
        for t in tables[8:]:
            for sub in subs[t]:
                await sub.close()
        assert store.readers.active == {}
    finally:
        await writer.close()
        await r.aclose()


@pytest.mark.parametrize("live", ["", "?pubsub=0"], ids=["pubsub", "xread"])
async def test_a_watched_table_that_expires_ends_its_watchers(redis_url: str, live: str) -> None:
    s = RedisStore.from_url(redis_url + live, RedisOptions(finished_ttl_s=0.3, block_ms=200))
    try:
        await s.create("t", b"r", "", None)
        sub = await s.subscribe("t")
        await s.commit("t", Commit(1, b"r", [ev(1)], status="finished"))
        got = []
        with pytest.raises(SubscriptionEnded) as ended:
            async with asyncio.timeout(5):
                async for e in sub:
                    got.append(e)
        assert got == [ev(1)] and ended.value.reason == "behind"
    finally:
        await s.close()


async def test_redis_down_fails_fast_and_recovers_by_itself(tmp_path: Path) -> None:
    proc = RedisProcess(tmp_path / "redis").start()
    s = RedisStore.from_url(proc.url)
    try:
        await s.create("t", b"r", "", None)
        sub = await s.subscribe("t")
        proc.kill()
        calls = [
            s.ping(),
            s.load("t"),
            s.create("u", b"r", "", None),
            s.commit("t", Commit(1, b"r", [ev(1)])),
            s.events_after("t", 0),
            s.subscribe("t"),
            s.lobby("", 0, None, 10),
            s.claim_due(time.time(), 5, 10),
            s.next_due(),
            s.count_tables(),
            s.find_invite("X"),
            s.idempotent_response("t", "k"),
        ]
        # each fails with StoreUnavailable rather than waiting for Redis (bounded: a call
        # that hangs fails the test with TimeoutError instead)
        for call in calls:
            with pytest.raises(StoreUnavailable, match=r"Redis at 127\.0\.0\.1"):
                async with asyncio.timeout(30):
                    await call
        # the watcher is told once the readers' grace has passed, not left hanging
        with pytest.raises(SubscriptionEnded) as ended:
            async with asyncio.timeout(30):
                async for _ in sub:
                    pass
        assert ended.value.reason == "unavailable"
        proc.start(same_port=True)  # no persistence: an empty Redis
        await s.ping()
        assert await s.load("t") is None
        await s.create("t2", b"r", "", None)
        assert (await s.commit("t2", Commit(1, b"r", [ev(1)]))).applied
        sub2 = await s.subscribe("t2")
        await s.commit("t2", Commit(2, b"r", [ev(2)]))
        assert await asyncio.wait_for(sub2.__aiter__().__anext__(), 5) == ev(2)
        await sub2.close()
    finally:
        await s.close()
        proc.stop()


async def test_with_persistence_a_restart_keeps_tables_and_watchers_resume(
    tmp_path: Path,
) -> None:
    proc = RedisProcess(tmp_path / "redis", persist=True).start()
    s = RedisStore.from_url(proc.url)
    try:
        await s.create("t", b"r", "", None)
        assert (
            await s.commit("t", Commit(1, b"r1", [ev(1)], due_at=123.0, status="playing"))
        ).applied
        sub = await s.subscribe("t")
        proc.restart()  # kill -9 and start again within the readers' grace
        await s.ping()
        assert await s.load("t") == (2, b"r1")
        assert (await s.commit("t", Commit(2, b"r2", [ev(2)], due_at=124.0))).applied
        assert await asyncio.wait_for(sub.__aiter__().__anext__(), 5) == ev(2)
        assert await s.events_after("t", 0) == [ev(1), ev(2)]
        assert await s.next_due() == 124.0
        await sub.close()
    finally:
        await s.close()
        proc.stop()


async def test_a_commit_sent_twice_applies_once(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client resends a call whose connection broke: Redis may have run it already."""
    import service.store.redis as module

    await store.create("t", b"r", "", None)
    await store.create("t", b"r", "", None)  # the same create again: recognised
    with pytest.raises(ValueError):
        await store.create("t", b"another record", "", None)
    monkeypatch.setattr(module.secrets, "token_hex", lambda n: "same-nonce")
    first = await store.commit("t", Commit(1, b"r2", [ev(1)]))
    again = await store.commit("t", Commit(1, b"r2", [ev(1)]))
    assert first.applied and again.applied and again.version == first.version == 2
    assert await store.events_after("t", 0) == [ev(1)]
    monkeypatch.setattr(module.secrets, "token_hex", lambda n: "other")
    assert not (await store.commit("t", Commit(1, b"r2", [ev(1)]))).applied


def test_replies_that_mean_redis_cannot_serve_now_are_store_unavailable() -> None:
    """redis-py strips the code off the replies it knows (READONLY, LOADING, CLUSTERDOWN...)."""
    from redis.exceptions import (
        ClusterDownError,
        MasterDownError,
        ReadOnlyError,
        ResponseError,
        SlotNotCoveredError,
    )

    from service.store.redis.connect import guard

    for exc in (
        ReadOnlyError("You can't write against a read only replica.", status_code="READONLY"),
        ClusterDownError("The cluster is down", status_code="CLUSTERDOWN"),
        MasterDownError("Link with MASTER is down", status_code="MASTERDOWN"),
        ResponseError("NOREPLICAS Not enough good replicas to write."),
        SlotNotCoveredError('Slot "5" is not covered by the cluster.'),
    ):
        with pytest.raises(StoreUnavailable), guard("Redis at here"):
            raise exc
    with pytest.raises(ResponseError), guard("Redis at here"):
        raise ResponseError("tute: event 3 is not after 5")


@pytest.mark.parametrize("live", ["", "?pubsub=0"], ids=["pubsub", "xread"])
@pytest.mark.parametrize("play_past", [False, True], ids=["behind", "past"])
async def test_a_restart_from_an_older_snapshot_rewinds_the_watchers(
    tmp_path: Path, play_past: bool, live: str
) -> None:
    """Redis restarted from an RDB snapshot older than what a reader delivered: the reader
    notices (the table's last sequence number is below it, or, played on past it, the entry
    there is another) and its subscriptions get REWOUND, then the new history: never an
    event of the new history as if it continued the old one."""
    proc = RedisProcess(tmp_path / "redis").start()
    watching, writer = RedisStore.from_url(proc.url + live), RedisStore.from_url(proc.url)
    try:
        await writer.create("t", b"r", "", None)
        for v in range(1, 6):
            assert (await writer.commit("t", Commit(v, b"r", [ev(v)]))).applied
        sub = await watching.subscribe("t")
        got = aiter(sub)
        with redis.Redis.from_url(proc.url) as r:
            r.save()  # the snapshot: the table at sequence 5
        for v in range(6, 11):
            assert (await writer.commit("t", Commit(v, b"r", [ev(v)]))).applied
        assert [await asyncio.wait_for(anext(got), 5) for _ in range(5)] == [
            ev(v) for v in range(6, 11)
        ]
        proc.restart()  # kill -9, and start again from the snapshot within the grace
        assert await writer.load("t") == (6, b"r")
        new = [StoredEvent(v, b"new %d" % v) for v in range(6, 17)]
        if play_past:  # the new history passes the old position before the reader is back
            for v in range(6, 15):
                assert (await writer.commit("t", Commit(v, b"r", [new[v - 6]]))).applied
        first = await asyncio.wait_for(anext(got), 10)
        assert first is REWOUND
        for v in range(15 if play_past else 6, 17):
            assert (await writer.commit("t", Commit(v, b"r", [new[v - 6]]))).applied
        after: list[StoredEvent] = []
        while not after or after[-1].seq < 16:
            after.append(await asyncio.wait_for(anext(got), 5))
        # from where the reader found the table on: the new history, gap-free
        assert after == new[len(new) - len(after) :]
        await sub.close()
    finally:
        await watching.close()
        await writer.close()
        proc.stop()


class _CountingConnection(aredis.Connection):
    """A connection that counts what it sends: one count per round trip (a pipeline sends
    all its commands at once)."""

    sent = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        type(self).sent += 1
        await super().send_packed_command(command, check_health)


async def test_a_lobby_page_of_fifty_tables_takes_three_round_trips(redis_url: str) -> None:
    pool = aredis.ConnectionPool.from_url(redis_url, connection_class=_CountingConnection)
    counted = RedisStore(Link(aredis.Redis(connection_pool=pool), aredis.Redis.from_url(redis_url)))
    s = RedisStore.from_url(redis_url)
    try:
        for i in range(60):
            entry = LobbyEntry(f"p{i:02d}", "parejas", 4, 3, 100.0 + i)
            await s.create(entry.table_id, b"record %d" % i, "", entry)
            await s.set_presence(entry.table_id, f"1.w{i}", i % 4, time.time() + 60)
        with redis.Redis.from_url(redis_url) as r:
            r.delete("tute:{p58}")  # a table whose hash is gone, still listed
        await counted.ping()  # the connection is made (its handshake is not the page's)
        _CountingConnection.sent = 0
        page = await counted.lobby_tables("", 0, None, 50, time.time())
        assert 1 <= _CountingConnection.sent <= 3, _CountingConnection.sent
        assert [t.entry.table_id for t in page] == [f"p{i:02d}" for i in range(59, 9, -1)]
        assert page[1].record is None and page[1].version == 0 and page[1].watchers == {}
        assert page[0].record == b"record 59" and page[0].watchers == {"1.w59": 3}
    finally:
        await counted.close()
        await s.close()


def test_the_design_document_lists_every_key_and_no_other() -> None:
    """docs/redis-store.md's key tables name exactly the keys of keys.Keys."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "redis-store.md").read_text()
    section = doc.split("## Keys", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([^`]+)` \|", section, re.M))
    k = Keys("tute")
    (g,) = k.shards  # one shard: the global slot
    single = {
        "applied",
        "born",
        "bots",
        "bots_total",
        "due",
        "invite_of",
        "invites",
        "lobby",
        "lobby_entries",
        "markers",
        "rebuild",
    }
    assert set(Shard.__slots__) == single | {"claim", "index", "number", "status"}
    made = {getattr(g, name) for name in single}
    made |= {
        k.table("T"),
        k.stream("T"),
        k.idempotency("T"),
        k.presence("T"),
        k.acknowledged("T"),
        k.bucket("<key>"),
        f"{g.claim}:<n>",
    }
    assert {s.rsplit(":", 1)[0] for s in g.status} == {"{tute:g}:st"}
    made.add("{tute:g}:st:<s>")
    assert listed == made


def test_a_commits_events_pack_into_one_message_and_back() -> None:
    events = [
        StoredEvent(7, b"public", {0: b"mine", 3: b""}, time=1765000000.25, ended_seat=2),
        StoredEvent(8, b"", {}),
        StoredEvent(2**31, bytes(range(256)) * 3, {1: b"\x00" * 70_000}),
    ]
    got = [stored_event(e) for e in unpack_events(pack_events(events))]
    assert got == events
    assert [(e.time, e.ended_seat) for e in got] == [(1765000000.25, 2), (0.0, -1), (0.0, -1)]
    assert unpack_events(pack_events([])) == []
    packed = pack_events(events)
    for bad in (packed[:-1], packed + b"x", b"", b"\x00\x00\x00\x05"):
        with pytest.raises(ValueError, match="not a live events message"):
            unpack_events(bad)
    assert message_record(unpack_events(packed)) is None


def test_a_message_carries_the_committed_record_as_an_entry_older_readers_skip() -> None:
    events = [StoredEvent(7, b"public", {0: b"mine"}), StoredEvent(8, b"", {})]
    record = b'{"f":1}' + bytes(range(256)) * 20
    entries = unpack_events(pack_events(events, (12, record)))
    assert message_record(entries) == (12, record)
    assert entries[0][0] == RECORD_SEQ == 0
    # what a reader delivers is every entry past the last it delivered (0 at the least):
    # the events, never the record's entry
    assert [stored_event(e) for e in entries if e[0] > 0] == events
    assert unpack_events(pack_events(events)) == entries[1:]


async def test_a_following_replica_knows_the_record_a_commit_published(redis_url: str) -> None:
    """A replica that follows a table (it has watchers of it) knows the record of the last
    commit it delivered: the record that commit stored, at the version it stored it at. It
    knows none of a table it does not follow, none once a commit came without one (from a
    replica of an older version) until the next, and none on the ``XREAD`` path."""
    follower = RedisStore.from_url(redis_url)
    writer = RedisStore.from_url(redis_url)
    silent = RedisStore.from_url(redis_url)
    silent.publish = False
    xread = RedisStore.from_url(redis_url + "?pubsub=0")
    try:
        await writer.create("t", b"r0", "", None)
        assert follower.recent("t") is None
        sub = await follower.subscribe("t")
        xsub = await xread.subscribe("t")
        got = aiter(sub)
        feeds = follower.readers
        assert isinstance(feeds, LiveFeeds)
        await eventually(lambda: feeds.connected, what="the subscription")
        await writer.commit("t", Commit(1, b"r1", [ev(1)]))
        assert await asyncio.wait_for(anext(got), 5) == ev(1)
        assert follower.recent("t") == (2, b"r1") == await follower.load("t")
        assert writer.recent("t") is None  # it follows no table
        await silent.commit("t", Commit(2, b"r2", [ev(2)]))
        await writer.commit("t", Commit(3, b"r3", [ev(3)]))  # after a gap: read, then known
        assert [await asyncio.wait_for(anext(got), 5) for _ in range(2)] == [ev(2), ev(3)]
        await eventually(lambda: follower.recent("t") == (4, b"r3"), what="the record")
        assert xread.recent("t") is None
        await sub.close()
        await xsub.close()
        assert follower.recent("t") is None  # no longer followed
    finally:
        for store in (follower, writer, silent, xread):
            await store.close()


async def test_a_missed_message_reaches_the_watchers_from_the_stream(redis_url: str) -> None:
    """A commit whose message a feed does not get (here: from a replica that does not
    publish, as one of an older version) reaches its watchers in order all the same: at the
    next message (which does not follow what was delivered) or when the table has been quiet
    for ``block_ms``."""
    s = RedisStore.from_url(redis_url, RedisOptions(block_ms=200))
    silent = RedisStore.from_url(redis_url)
    silent.publish = False
    loud = RedisStore.from_url(redis_url)
    try:
        await s.create("t", b"r", "", None)
        sub = await s.subscribe("t")
        got = aiter(sub)
        await loud.commit("t", Commit(1, b"r", [ev(1)]))
        assert await asyncio.wait_for(anext(got), 5) == ev(1)
        await silent.commit("t", Commit(2, b"r", [ev(2), ev(3)]))
        await loud.commit("t", Commit(3, b"r", [ev(4)]))  # after a gap: the feed reads
        assert [await asyncio.wait_for(anext(got), 5) for _ in range(3)] == [ev(2), ev(3), ev(4)]
        await silent.commit("t", Commit(4, b"r", [ev(5)]))  # then quiet: the sweep reads
        assert await asyncio.wait_for(anext(got), 5) == ev(5)
        await sub.close()
    finally:
        for store in (s, silent, loud):
            await store.close()


def test_the_live_path_is_a_url_option(redis_url: str) -> None:
    for url, kind in ((redis_url, LiveFeeds), (redis_url + "?pubsub=0", Readers)):
        store = RedisStore.from_url(url)
        assert isinstance(store.readers, kind) and store.publish
    with pytest.raises(ValueError, match="pubsub must be 1 or 0, not 'maybe'"):
        RedisStore.from_url(redis_url + "?pubsub=maybe")


def test_the_design_document_names_every_url_option() -> None:
    """docs/redis-store.md's "Choosing it" names every store option a URL may carry."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "redis-store.md").read_text()
    section = doc.split("## Choosing it", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in (*URL_OPTIONS, "cluster") if f"`{name}`" not in section]
    assert missing == []
