"""The committing replica keeps its last committed record of a playing table decoded: a load
that finds the same bytes in the store gets a copy of it, equal to what decoding the stored
bytes gives, that a change may edit without touching what is kept; a record another replica
committed since is decoded afresh. On Redis, whose loads give back the bytes the commit sent,
the same: a replica decodes only what another one committed."""

from __future__ import annotations

import random

import pytest

import engine
from service.config import Settings
from service.metrics import Metrics
from service.store.base import Deferred, Store, record_bytes
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from service.tables import changes, commit
from service.tables.model import (
    HUMAN,
    PLAYING,
    GameRecord,
    TableRecord,
    decode_record,
    encode_record,
)
from service.tables.service import TableService
from tests.support.redis_fixtures import redis_proc, redis_url

from .helpers import new_record

__all__ = ["redis_proc", "redis_url"]  # the fixtures, for pytest

SETTINGS = Settings(create_rate_per_s=0, watch_rate_per_s=0, max_streams_per_caller=0)


async def _decoded(store: Store, table_id: str) -> TableRecord:
    found = await store.load(table_id)
    assert found is not None
    rec = decode_record(record_bytes(found[1]))
    rec.version = found[0]
    return rec


async def _playing_table(app: TableService, table_id: str = "t0") -> str:
    rec = new_record(table_id)
    await app.commits.create(rec)
    for seat in range(4):

        def sit(r: TableRecord, s: int = seat) -> changes.Changed[int]:
            return changes.take_seat(
                r, s, HUMAN, f"p{s}", f"{s:064x}", "", now=1.0, away_from_start=False
            )

        await app.commits.mutate(table_id, sit)
    return table_id


async def test_a_kept_record_is_what_the_stored_bytes_decode_to() -> None:
    store = MemoryStore()
    app = TableService(store, SETTINGS, Metrics())
    other = TableService(store, SETTINGS, Metrics())  # another replica on the same store
    rng = random.Random(7)
    try:
        table_id = await _playing_table(app)
        actions = 0
        while True:
            rec = await app.load(table_id, presence=False)
            assert rec == await _decoded(store, table_id)
            if rec.status != PLAYING or rec.state is None:
                break
            again = await app.load(table_id, presence=False)
            rec.seats[0].name = "edited"  # an edit of one copy is not in the next
            rec.away[1] = 5.0
            rec.games.append(GameRecord(99, 0, (0, 0), False))
            if rec.fair is not None:
                rec.fair.actions.append([0, 0, 0])
            assert again == await _decoded(store, table_id)
            seat = rec.state.turn
            action = rng.choice(engine.legal_actions(rec.state, seat))
            committer = other if actions % 5 == 4 else app  # now and then the other replica

            def play(
                r: TableRecord, s: int = seat, a: int = action, t: float = 2.0 + actions
            ) -> changes.Changed[None]:
                return changes.act(r, s, a, now=t)

            await committer.commits.mutate(table_id, play)
            actions += 1
        assert actions > 40
        assert rec.status != PLAYING
    finally:
        app.close_bots()
        other.close_bots()


async def test_the_memory_store_keeps_a_playing_record_unencoded_until_it_is_evicted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[str] = []

    def counting(rec: TableRecord) -> bytes:
        encoded.append(rec.table_id)
        return encode_record(rec)

    monkeypatch.setattr(commit, "encode_record", counting)
    monkeypatch.setattr(commit, "DECODED_MAX", 2)
    store = MemoryStore()
    app = TableService(store, SETTINGS, Metrics())
    try:
        ids = [await _playing_table(app, f"t{i}") for i in range(3)]
        encoded.clear()
        rec = await app.load(ids[0], presence=False)
        assert rec.state is not None
        seat = rec.state.turn
        action = engine.legal_actions(rec.state, seat)[0]
        await app.commits.mutate(ids[0], lambda r: changes.act(r, seat, action, now=9.0))
        # t0 committed and kept decoded, never encoded; t1, the oldest kept, made way for it
        assert encoded == [ids[1]]
        found = await store.load(ids[0])
        assert found is not None and isinstance(found[1], Deferred)
        # two other tables committed after it push it out of the decoded ones: its bytes
        # are made then, and they decode to the record a load gives
        for table_id in ids[1:]:
            r = await app.load(table_id, presence=False)
            assert r.state is not None
            s, a = r.state.turn, engine.legal_actions(r.state, r.state.turn)[0]

            def play(x: TableRecord, s: int = s, a: int = a) -> changes.Changed[None]:
                return changes.act(x, s, a, now=9.0)

            await app.commits.mutate(table_id, play)
        assert ids[0] in encoded
        assert await app.load(ids[0], presence=False) == await _decoded(store, ids[0])
    finally:
        app.close_bots()


async def test_on_redis_a_replica_decodes_only_what_another_one_committed(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []

    def counting(data: bytes) -> TableRecord:
        decoded.append("x")
        return decode_record(data)

    monkeypatch.setattr(commit, "decode_record", counting)
    stores = [RedisStore.from_url(redis_url), RedisStore.from_url(redis_url)]
    app, other = (TableService(s, SETTINGS, Metrics()) for s in stores)
    rng = random.Random(3)
    try:
        table_id = await _playing_table(app)
        last = app  # the match started on its commit
        for turn in range(24):
            committer = other if turn % 3 == 2 else app
            decoded.clear()
            rec = await committer.load(table_id, presence=False)
            # the replica that committed last loads its kept copy; the other decodes
            assert len(decoded) == (0 if committer is last else 1), turn
            assert rec == await _decoded(stores[0], table_id)
            assert rec.state is not None and rec.status == PLAYING
            seat = rec.state.turn
            action = rng.choice(engine.legal_actions(rec.state, seat))

            def play(r: TableRecord, s: int = seat, a: int = action) -> changes.Changed[None]:
                return changes.act(r, s, a, now=3.0)

            await committer.commits.mutate(table_id, play, loaded=rec)
            last = committer
    finally:
        for a in (app, other):
            a.close_bots()
        for s in stores:
            await s.close()
