"""The ticket queue's contract, on the memory store, a real Redis and a real Redis Cluster (the
scripts build keys in their one slot): one live ticket per player (a matched one too, while it
is kept, unless the caller replaces it), claims all or none, a cancelled or dead ticket never
claimed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from service.store.memory import MemoryStore
from service.store.queue import MATCHED, Ticket, TicketQueue
from service.store.redis import RedisStore

NOW = 1_800_000_000.0


@pytest.fixture(params=["memory", "redis", "cluster"])
async def queue(request: pytest.FixtureRequest) -> AsyncIterator[TicketQueue]:
    if request.param == "memory":
        yield MemoryStore().tickets()
        return
    url = request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")
    store = RedisStore.from_url(url)
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


async def test_concurrent_claims_of_overlapping_groups_win_once(queue: TicketQueue) -> None:
    ids = [(await queue.enqueue(ticket(n), NOW)).ticket_id for n in range(6)]
    groups = [ids[i : i + 4] for i in range(3)] * 4
    won = await asyncio.gather(*(queue.claim(g, b"p", NOW, 60) for g in groups))
    assert sum(won) == 1


def fresh(n: int, player: str = "p0", mode: str = "4p", at: float = NOW) -> Ticket:
    """A new ticket of ``player`` (``n`` names it)."""
    return Ticket(f"{0xF00 + n:016x}", mode, player, 1500.0, at, at + 10)


async def test_a_matched_ticket_stays_its_players_while_it_is_kept(queue: TicketQueue) -> None:
    ids = [(await queue.enqueue(ticket(n), NOW)).ticket_id for n in range(2)]
    assert await queue.claim(ids, b"the plan", NOW, 60)
    for at, mode in ((NOW + 1, "4p"), (NOW + 30, "2p"), (NOW + 60, "4p")):
        again = await queue.enqueue(fresh(1, mode=mode, at=at), at)
        assert again.ticket_id == ids[0], at  # the matched ticket, in whatever mode asked
        assert (again.state, again.plan, again.mode) == (MATCHED, b"the plan", "4p")
        assert again.alive_until == NOW + 60  # kept until then
        assert await queue.get(fresh(1).ticket_id, at) is None  # nothing else queued
        assert [await queue.count(m) for m in ("2p", "4p")] == [0, 0]
    assert not await queue.cancel(ids[0]) and not await queue.touch(ids[0], NOW + 99, NOW + 2)
    # no longer kept: gone, and its player queues a new ticket
    assert await queue.get(ids[0], NOW + 61) is None
    renewed = await queue.enqueue(fresh(2, at=NOW + 61), NOW + 61)
    assert (renewed.ticket_id, renewed.state) == (fresh(2).ticket_id, "waiting")
    assert [t.ticket_id for t in await queue.waiting("4p", NOW + 61)] == [renewed.ticket_id]
    # the other player's matched ticket was not touched by it
    other = await queue.get(ids[1], NOW + 60)
    assert other is not None and other.state == MATCHED


async def test_a_matched_ticket_named_is_replaced(queue: TicketQueue) -> None:
    matched = (await queue.enqueue(ticket(0), NOW)).ticket_id
    assert await queue.claim([matched], b"plan", NOW, 60)
    wrong = await queue.enqueue(fresh(1), NOW + 1, replace_matched="00000000000000ee")
    assert wrong.ticket_id == matched  # another id named: the matched one stays the player's
    new = await queue.enqueue(fresh(2, mode="2p"), NOW + 1, replace_matched=matched)
    assert (new.ticket_id, new.state, new.mode) == (fresh(2).ticket_id, "waiting", "2p")
    assert [t.ticket_id for t in await queue.waiting("2p", NOW + 1)] == [new.ticket_id]
    kept = await queue.get(matched, NOW + 2)  # still readable by its watchers
    assert kept is not None and kept.state == MATCHED
    # the new ticket is the player's now: naming the matched one again, or a waiting one,
    # replaces nothing
    assert (await queue.enqueue(fresh(3), NOW + 2, replace_matched=matched)) == new
    assert (await queue.enqueue(fresh(4), NOW + 2, replace_matched=new.ticket_id)) == new
    assert await queue.count("2p") == 1 and await queue.count("4p") == 0
    # and it is matched and cancelled as any waiting ticket
    assert await queue.cancel(new.ticket_id)
    assert (await queue.enqueue(fresh(5), NOW + 3)).ticket_id == fresh(5).ticket_id


async def test_concurrent_enqueues_of_one_player_leave_one_waiting_ticket(
    queue: TicketQueue,
) -> None:
    matched = (await queue.enqueue(ticket(0), NOW)).ticket_id
    assert await queue.claim([matched], b"plan", NOW, 60)
    # several FindMatch calls of the player, each having found the match over
    got = await asyncio.gather(
        *(queue.enqueue(fresh(n), NOW + 1, replace_matched=matched) for n in range(8))
    )
    assert len({t.ticket_id for t in got}) == 1 and got[0].state == "waiting"
    assert [t.ticket_id for t in await queue.waiting("4p", NOW + 1)] == [got[0].ticket_id]
    # and while it is still kept, calls that do not replace it only return it
    other = (await queue.enqueue(ticket(1), NOW)).ticket_id
    assert await queue.claim([other], b"plan", NOW, 60)
    got = await asyncio.gather(
        *(queue.enqueue(fresh(10 + n, player="p1"), NOW + 1) for n in range(8))
    )
    assert {t.ticket_id for t in got} == {other}
    assert [t.player_id for t in await queue.waiting("4p", NOW + 1)] == ["p0"]
