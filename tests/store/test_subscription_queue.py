"""A watcher's queue (service.store.base.QueueSubscription): a commit's events pushed at once
(``push_many``) leave the queue as pushing them one by one does, at every fill and limit."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from service.store.base import QueueSubscription, StoredEvent, SubscriptionEnded


class _Queue(QueueSubscription):
    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.detached = 0

    def _detach(self) -> None:
        self.detached += 1


def _ev(seq: int) -> StoredEvent:
    return StoredEvent(seq, b"e%d" % seq)


async def _drain(q: _Queue) -> tuple[list[int], str | None]:
    got: list[int] = []
    while q._items:  # what is queued, then the reason it ended, if it did
        try:
            got += [e.seq for e in await q.take(100)]
        except SubscriptionEnded as ended:
            return got, ended.reason
    return got, None


@pytest.mark.parametrize(
    ("limit", "before", "batch"), list(itertools.product((1, 3, 5), (0, 1, 3, 5), (0, 1, 2, 4, 7)))
)
async def test_push_many_is_push_of_each(limit: int, before: int, batch: int) -> None:
    queues = _Queue(limit), _Queue(limit)
    for q in queues:
        for seq in range(1, before + 1):
            q.push(_ev(seq))
    events = [_ev(before + 1 + i) for i in range(batch)]
    one, many = queues
    for e in events:
        one.push(e)
    many.push_many(events)
    assert (await _drain(many), many.detached) == (await _drain(one), one.detached)


async def test_push_many_wakes_a_waiting_watcher_once_with_every_event() -> None:
    q = _Queue(10)
    waiting = asyncio.ensure_future(q.take(10))
    await asyncio.sleep(0)  # the watcher waits on its empty queue
    assert not waiting.done()
    q.push_many([_ev(1), _ev(2), _ev(3)])
    assert [e.seq for e in await asyncio.wait_for(waiting, 5)] == [1, 2, 3]
    q.end("shutdown")
    q.push_many([_ev(4)])  # after the end: nothing more
    with pytest.raises(SubscriptionEnded, match="shutdown"):
        await q.take(10)
