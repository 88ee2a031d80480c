"""Memory-store behaviour beyond the contract suite: abandoned tables expire like on Redis."""

from __future__ import annotations

from service.store.base import Commit, StoredEvent
from service.store.memory import MemoryStore
from tests.support.clock import FakeClock


async def test_a_table_without_commits_expires_after_the_abandoned_ttl() -> None:
    clock = FakeClock()
    store = MemoryStore(finished_ttl_s=60, abandoned_ttl_s=0.3, clock=clock)
    await store.create("idle", b"r", "CODE", None)
    await store.create("busy", b"r", "", None)
    for i in range(4):
        clock.advance(0.1)
        outcome = await store.commit(
            "busy", Commit(i + 1, b"r", [StoredEvent(i + 1, b"e")], status="playing")
        )
        assert outcome.applied
    assert await store.load("idle") is None
    assert await store.find_invite("CODE") is None
    assert await store.load("busy") is not None
    assert (await store.count_tables())["playing"] == 1
