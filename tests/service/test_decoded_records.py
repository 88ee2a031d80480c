"""The committing replica keeps its last committed record of a playing table decoded: a load
that finds the same bytes in the store gets a copy of it, equal to what decoding the stored
bytes gives, that a change may edit without touching what is kept; a record another replica
committed since is decoded afresh."""

from __future__ import annotations

import random

import engine
from service.config import Settings
from service.metrics import Metrics
from service.store.memory import MemoryStore
from service.tables import changes
from service.tables.model import HUMAN, PLAYING, TableRecord, decode_record
from service.tables.service import TableService

SETTINGS = Settings(create_rate_per_s=0, watch_rate_per_s=0, max_streams_per_caller=0)


async def _decoded(store: MemoryStore, table_id: str) -> TableRecord:
    found = await store.load(table_id)
    assert found is not None
    rec = decode_record(found[1])
    rec.version = found[0]
    return rec


async def _playing_table(app: TableService) -> str:
    rules = engine.PRESETS["parejas-manos"]
    rec = changes.new_table(
        "t0",
        "parejas-manos",
        rules,
        private=False,
        invite_code="",
        created_at=0.0,
        owner_token_hash="",
    )
    await app.commits.create(rec)
    for seat in range(4):

        def sit(r: TableRecord, s: int = seat) -> changes.Changed[int]:
            return changes.take_seat(
                r, s, HUMAN, f"p{s}", f"{s:064x}", "", now=1.0, away_from_start=False
            )

        await app.commits.mutate("t0", sit)
    return "t0"


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
