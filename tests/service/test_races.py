"""Races: concurrent submissions on the same version, and idempotent retries (request_id).

Every test runs twice: on the memory store as it is, and on the memory store behind a wrapper
that waits a little before and after every store call, as a networked store (Redis) does.
Without that, one request's whole mutation path never gives the event loop away and no two
requests interleave.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import grpc
import pytest

from service.server import create_server
from service.store.base import Store
from service.store.memory import MemoryStore
from tests.web.stub import open_stub
from tute.v1 import service_pb2, service_pb2_grpc

from .conftest import settings_for
from .helpers import Seated, auth, error_info, table_with_humans, view_of
from .matchplay import Watcher, kind

Stub = service_pb2_grpc.TuteServiceStub

LATENCY_S = 0.002
_STORE_METHODS = tuple(sorted(Store.__abstractmethods__ | {"close"}))


def _suspending(name: str):
    async def method(self, *args, **kwargs):
        await asyncio.sleep(self.rng.random() * LATENCY_S)
        try:
            return await getattr(self.inner, name)(*args, **kwargs)
        finally:
            await asyncio.sleep(self.rng.random() * LATENCY_S)

    method.__name__ = name
    return method


def _init(self, inner: Store) -> None:
    self.inner = inner
    self.rng = random.Random(1)


SuspendingStore = type(
    "SuspendingStore",
    (Store,),
    {"__init__": _init, **{name: _suspending(name) for name in _STORE_METHODS}},
)
"""The memory store behind a network-like latency: each call waits up to LATENCY_S before and
after it, so that concurrent requests really interleave between their store calls."""


@pytest.fixture(params=["memory", "suspending"])
async def racy(request, transport: str) -> AsyncIterator[Stub]:
    store = MemoryStore() if request.param == "memory" else SuspendingStore(MemoryStore())
    srv = await create_server(settings_for(transport), store=store)
    try:
        async with open_stub(srv, transport) as stub:
            yield stub
    finally:
        await srv.shutdown()


async def events_after(stub: Stub, table_id: str, seq: int) -> list[object]:
    """The table's events after ``seq`` up to now, as a spectator receives them."""
    last = (await view_of(stub, table_id, None)).last_event_sequence
    w = Watcher(stub, table_id, resume_after=seq)
    try:
        if last > seq:
            await w.wait_for_seq(last)
    finally:
        await w.close()
    assert [e.sequence for e in w.events] == list(range(seq + 1, last + 1))
    return list(w.events)


async def turn_of(stub: Stub, seated: Seated):
    """(seat on turn, its view)."""
    seat = (await view_of(stub, seated.table_id, None)).turn_seat
    return seat, await view_of(stub, seated.table_id, seated.tokens[seat])


def cards_played(events: list[object]) -> int:
    return sum(kind(e) == "card_played" for e in events)  # type: ignore[arg-type]


@pytest.mark.parametrize("preset", ["parejas", "corriente-6"])
async def test_64_submissions_on_one_version_apply_once(racy: Stub, preset: str) -> None:
    seated = await table_with_humans(racy, preset)
    tid = seated.table_id
    for _ in range(6):  # lead and follow turns
        seat, view = await turn_of(racy, seated)
        cards = [a for a in view.legal_actions if a.HasField("play_card")]
        requests = [
            service_pb2.SubmitActionRequest(
                table_id=tid, action=cards[i % len(cards)], expected_version=view.version
            )
            for i in range(64)
        ]
        results = await asyncio.gather(
            *(racy.SubmitAction(r, metadata=auth(seated.tokens[seat])) for r in requests),
            return_exceptions=True,
        )
        applied = [r for r in results if isinstance(r, service_pb2.SubmitActionResponse)]
        failed = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
        assert len(applied) == 1 and len(failed) == 63, results[:3]
        for err in failed:
            assert err.code() == grpc.StatusCode.ABORTED, err
            info = error_info(err)
            assert info is not None and info.reason == "STALE_VERSION"
            assert int(info.metadata["current_version"]) >= view.version + 1
        after = await view_of(racy, tid, None)
        assert after.version == view.version + 1 == applied[0].table_version
        events = await events_after(racy, tid, view.last_event_sequence)
        assert cards_played(events) == 1
        assert {e.table_version for e in events} == {view.version + 1}  # type: ignore[attr-defined]


async def test_a_repeated_request_id_returns_the_first_answer(racy: Stub) -> None:
    seated = await table_with_humans(racy, "parejas")
    tid = seated.table_id
    seat, view = await turn_of(racy, seated)
    token = seated.tokens[seat]
    cards = [a for a in view.legal_actions if a.HasField("play_card")]
    req = service_pb2.SubmitActionRequest(table_id=tid, action=cards[0], request_id="req-1")
    first = await racy.SubmitAction(req, metadata=auth(token))
    assert first.table_version == view.version + 1
    again = await racy.SubmitAction(req, metadata=auth(token))
    assert again == first
    # The same id with another action (or an expected_version now stale) still gets the first
    # answer and applies nothing.
    other = service_pb2.SubmitActionRequest(
        table_id=tid, action=cards[-1], request_id="req-1", expected_version=view.version
    )
    assert await racy.SubmitAction(other, metadata=auth(token)) == first
    after = await view_of(racy, tid, None)
    assert after.version == first.table_version
    assert cards_played(await events_after(racy, tid, view.last_event_sequence)) == 1
    # The id belongs to the seat: another seat using it acts for itself.
    seat2, view2 = await turn_of(racy, seated)
    assert seat2 != seat
    mine = await racy.SubmitAction(
        service_pb2.SubmitActionRequest(
            table_id=tid, action=view2.legal_actions[0], request_id="req-1"
        ),
        metadata=auth(seated.tokens[seat2]),
    )
    assert mine.table_version == after.version + 1 and mine.view.my_seat == seat2


@pytest.mark.parametrize("with_version", [False, True])
async def test_concurrent_repeats_of_a_request_id_apply_once(
    racy: Stub, with_version: bool
) -> None:
    seated = await table_with_humans(racy, "corriente-6")
    tid = seated.table_id
    for round_ in range(4):
        seat, view = await turn_of(racy, seated)
        cards = [a for a in view.legal_actions if a.HasField("play_card")]
        requests = []
        for i in range(32):
            req = service_pb2.SubmitActionRequest(
                table_id=tid, action=cards[i % len(cards)], request_id=f"same-{round_}"
            )
            if with_version:
                req.expected_version = view.version
            requests.append(req)
        results = await asyncio.gather(
            *(racy.SubmitAction(r, metadata=auth(seated.tokens[seat])) for r in requests),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert not errors, errors[:3]
        assert all(r == results[0] for r in results), "every repeat gets the first answer"
        assert results[0].table_version == view.version + 1  # type: ignore[union-attr]
        assert (await view_of(racy, tid, None)).version == view.version + 1
        assert cards_played(await events_after(racy, tid, view.last_event_sequence)) == 1
