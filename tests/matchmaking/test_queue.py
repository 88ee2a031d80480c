"""The ticket queue's contract, on the memory store and on a real Redis: one live ticket per
player, claims all or none, a cancelled or dead ticket never claimed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from service.store.memory import MemoryStore
from service.store.queue import MATCHED, Ticket, TicketQueue
from service.store.redis import RedisStore

NOW = 1_800_000_000.0


@pytest.fixture(params=["memory", "redis"])
async def queue(request: pytest.FixtureRequest) -> AsyncIterator[TicketQueue]:
    if request.param == "memory":
        yield MemoryStore().tickets()
        return
    store = RedisStore.from_url(request.getfixturevalue("redis_url"))
    try:
        yield store.tickets()
    finally:
        await store.close()


def ticket(n: int, mode: str = "4p", *, at: float = NOW, alive: float = 10.0) -> Ticket:
    return Ticket(f"{n:016x}", mode, f"p{n}", 1500.0 + n, at, at + alive, entry=b"e%d" % n)


async def test_one_live_ticket_per_player(queue: TicketQueue) -> None:
    first = await queue.enqueue(ticket(1), NOW)
    again = await queue.enqueue(
        Ticket("00000000000000ff", "2p", "p1", 1.0, NOW + 1, NOW + 11), NOW + 1
    )
    assert again == first  # the same ticket, unchanged, whatever the mode asked
    assert [t.ticket_id for t in await queue.waiting("4p", NOW + 1)] == [first.ticket_id]
    assert (await queue.count("4p"), await queue.count("2p")) == (1, 0)
    assert await queue.waiting("2p", NOW + 1) == []
    got = await queue.get(first.ticket_id, NOW + 1)
    assert got is not None and got.entry == b"e1" and got.rating == 1501.0


async def test_a_dead_ticket_is_gone_and_its_player_may_queue_again(queue: TicketQueue) -> None:
    dead = await queue.enqueue(ticket(1, alive=5.0), NOW)
    assert await queue.get(dead.ticket_id, NOW + 6) is None
    assert not await queue.touch(dead.ticket_id, NOW + 20, NOW + 6)
    assert not await queue.claim([dead.ticket_id], b"plan", NOW + 6, 60)
    renewed = Ticket("00000000000000aa", "4p", "p1", 1500.0, NOW + 6, NOW + 16)
    assert (await queue.enqueue(renewed, NOW + 6)).ticket_id == renewed.ticket_id
    assert [t.ticket_id for t in await queue.waiting("4p", NOW + 6)] == [renewed.ticket_id]


async def test_touch_keeps_a_ticket_alive(queue: TicketQueue) -> None:
    t = await queue.enqueue(ticket(1, alive=5.0), NOW)
    assert await queue.touch(t.ticket_id, NOW + 9, NOW + 4)
    assert await queue.get(t.ticket_id, NOW + 8) is not None
    assert await queue.claim([t.ticket_id], b"plan", NOW + 8, 60)


async def test_claims_are_all_or_none(queue: TicketQueue) -> None:
    ts = [await queue.enqueue(ticket(n), NOW) for n in range(5)]
    ids = [t.ticket_id for t in ts]
    assert await queue.cancel(ids[4])
    assert not await queue.claim(ids[2:5], b"x", NOW, 60)  # one cancelled: nothing changes
    assert not await queue.claim([ids[0], ids[0]], b"x", NOW, 60)  # one ticket twice
    assert [t.ticket_id for t in await queue.waiting("4p", NOW)] == ids[:4]
    assert await queue.claim(ids[:4], b"the plan", NOW, 60)
    assert not await queue.claim(ids[:1], b"again", NOW, 60)  # matched: never twice
    assert not await queue.cancel(ids[0])  # a matched ticket stays matched
    got = await queue.get(ids[0], NOW + 1)
    assert got is not None and got.state == MATCHED and got.plan == b"the plan"
    assert await queue.waiting("4p", NOW) == []
    assert await queue.get(ids[4], NOW) is None
    # a matched player may queue again
    again = Ticket("00000000000000bb", "4p", "p0", 1500.0, NOW, NOW + 10)
    assert (await queue.enqueue(again, NOW)).ticket_id == again.ticket_id


async def test_concurrent_claims_of_overlapping_groups_win_once(queue: TicketQueue) -> None:
    ids = [(await queue.enqueue(ticket(n), NOW)).ticket_id for n in range(6)]
    groups = [ids[i : i + 4] for i in range(3)] * 4
    won = await asyncio.gather(*(queue.claim(g, b"p", NOW, 60) for g in groups))
    assert sum(won) == 1
