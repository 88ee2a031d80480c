"""A watcher's queue (service.store.base.QueueSubscription): events pushed in batches
(``push_many``: a commit's, a read's) are taken in order up to the queue's limit, and the
queue then ends with ``behind``, however the events were split into batches."""

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
async def test_a_full_queue_keeps_what_fits_and_ends_behind(
    limit: int, before: int, batch: int
) -> None:
    total = before + batch
    expected = ([*range(1, min(total, limit) + 1)], "behind" if total > limit else None)
    singles, batches = _Queue(limit), _Queue(limit)
    for seq in range(1, total + 1):  # one event a push
        singles.push_many([_ev(seq)])
    batches.push_many([_ev(seq) for seq in range(1, before + 1)])  # two pushes
    batches.push_many([_ev(before + 1 + i) for i in range(batch)])
    for q in (singles, batches):
        assert await _drain(q) == expected
        assert q.detached == (1 if total > limit else 0)


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
