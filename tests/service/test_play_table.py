"""PlayTable: a seat plays over one bidirectional stream (WatchTable and SubmitAction together).

Whole matches are played over PlayTable alone, each seat answering its own TurnStarted with
one submit; every submit gets one result, in order, and what the stream watches is exactly what
WatchTable sends the same token. A submit SubmitAction would refuse is answered with a
rejected result naming the same code, reason and field, nothing is applied, and the stream
goes on; a stream whose first message is not a watch ends with INVALID_ARGUMENT. Over the
browsers' HTTP transports PlayTable is UNIMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from typing import Any

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError

from service.server import Server, create_server
from tute.v1 import action_pb2, card_pb2, service_connect, service_pb2

from .conftest import settings_for
from .helpers import (
    FINISHED,
    Stub,
    auth,
    bad_request_fields,
    error_info,
    table_with_humans,
    view_of,
)
from .matchplay import kind

PlayResponse = service_pb2.PlayTableResponse


def watch_msg(table_id: str, **kw: Any) -> service_pb2.PlayTableRequest:
    return service_pb2.PlayTableRequest(
        watch=service_pb2.WatchTableRequest(table_id=table_id, **kw)
    )


def submit_msg(action: Any = None, **kw: Any) -> service_pb2.PlayTableRequest:
    return service_pb2.PlayTableRequest(submit=service_pb2.SubmitActionRequest(action=action, **kw))


async def read(call: Any) -> PlayResponse:
    """The next message of a PlayTable call (bounded: a stalled stream fails the test)."""
    msg = await asyncio.wait_for(call.read(), 30)
    assert msg is not grpc.aio.EOF, "the stream ended"  # type: ignore[attr-defined]
    return msg


async def next_result(call: Any) -> service_pb2.ActionResult:
    """The next result on the stream, skipping what it watches."""
    while True:
        msg = await read(call)
        if msg.WhichOneof("kind") == "result":
            return msg.result


@dataclasses.dataclass
class Seat:
    """One seat playing over its PlayTable stream: it answers its own TurnStarted."""

    call: Any
    seat: int
    rng: random.Random
    watched: list[service_pb2.WatchTableResponse] = dataclasses.field(default_factory=list)
    results: list[service_pb2.ActionResult] = dataclasses.field(default_factory=list)
    sent: list[str] = dataclasses.field(default_factory=list)

    async def run(self) -> None:
        while True:
            msg = await read(self.call)
            if msg.WhichOneof("kind") == "result":
                self.results.append(msg.result)
                continue
            self.watched.append(msg.watch)
            assert msg.watch.WhichOneof("kind") == "events", "batch_events was asked"
            for ev in msg.watch.events.events:
                if kind(ev) == "match_ended":
                    return
                if kind(ev) == "turn_started" and ev.turn_started.seat == self.seat:
                    action = self.rng.choice(list(ev.turn_started.legal_actions))
                    rid = f"{self.seat}-{len(self.sent)}"
                    self.sent.append(rid)
                    await self.call.write(submit_msg(action, request_id=rid))


async def collect_watch(call: Any, until_seq: int) -> list[service_pb2.WatchTableResponse]:
    """A WatchTable stream's messages up to the event ``until_seq``."""
    got: list[service_pb2.WatchTableResponse] = []
    async for msg in call:
        got.append(msg)
        if msg.events.events and msg.events.events[-1].sequence >= until_seq:
            return got
    raise AssertionError("the watch stream ended early")


@pytest.mark.parametrize("preset", ["corriente-6", "tres", "parejas"])
async def test_a_match_played_over_play_streams_alone(stub: Stub, preset: str) -> None:
    seated = await table_with_humans(stub, preset, turn_time_s=0)
    tid = seated.table_id
    rng = random.Random(preset)
    seats = []
    for seat, token in seated.tokens.items():
        call = stub.PlayTable(metadata=auth(token))
        await call.write(watch_msg(tid, resume_after=0, batch_events=True))
        seats.append(Seat(call, seat, rng))
    try:
        await asyncio.wait_for(asyncio.gather(*(s.run() for s in seats)), 60)
        for s in seats:  # the results of the last submits may follow MatchEnded
            while len(s.results) < len(s.sent):
                s.results.append(await next_result(s.call))
        view = await view_of(stub, tid, None)
        assert view.status == FINISHED
        for s in seats:
            assert [r.request_id for r in s.results] == s.sent, "one result per submit, in order"
            assert all(not r.HasField("rejected") and r.table_version > 0 for r in s.results)
        assert sum(len(s.sent) for s in seats) > 20
        # What a PlayTable stream watches is what WatchTable sends the same token.
        last = view.last_event_sequence
        for s in seats:
            w = stub.WatchTable(
                service_pb2.WatchTableRequest(table_id=tid, resume_after=0, batch_events=True),
                metadata=auth(seated.tokens[s.seat]),
            )
            try:
                expected = await asyncio.wait_for(collect_watch(w, last), 30)
            finally:
                w.cancel()
            flat = [e for m in s.watched for e in m.events.events]
            assert flat == [e for m in expected for e in m.events.events]
    finally:
        for s in seats:
            s.call.cancel()


async def on_turn(stub: Stub, tid: str, tokens: dict[int, str]) -> tuple[int, list[Any]]:
    view = await view_of(stub, tid, None)
    seat = view.turn_seat
    own = await view_of(stub, tid, tokens[seat])
    return seat, list(own.legal_actions)


async def test_refused_submits_are_answered_and_the_stream_goes_on(stub: Stub) -> None:
    seated = await table_with_humans(stub, "parejas", turn_time_s=0)
    tid, tokens = seated.table_id, seated.tokens
    seat, legal = await on_turn(stub, tid, tokens)
    other = (seat + 1) % 4
    call = stub.PlayTable(metadata=auth(tokens[other]))
    await call.write(watch_msg(tid))
    first = await read(call)
    assert first.watch.HasField("snapshot")
    before = (await view_of(stub, tid, None)).version
    other_legal = list((await view_of(stub, tid, tokens[other])).legal_actions)
    assert not other_legal
    theirs = next(a for a in legal if a.HasField("play_card"))
    cases = [
        (submit_msg(theirs, request_id="a"), 9, "NOT_YOUR_TURN", ""),
        (submit_msg(None, request_id="b"), 3, "INVALID_ARGUMENT", "action"),
        (
            submit_msg(theirs, request_id="c", table_id="some-other-table"),
            3,
            "INVALID_ARGUMENT",
            "submit.table_id",
        ),
        (
            submit_msg(theirs, request_id="x" * 65),
            3,
            "INVALID_ARGUMENT",
            "request_id",
        ),
        (watch_msg(tid), 3, "INVALID_ARGUMENT", "submit"),
    ]
    for request, code, reason, field in cases:
        await call.write(request)
        result = await next_result(call)
        assert result.HasField("rejected"), request
        rej = result.rejected
        assert (rej.code, rej.reason, rej.field) == (code, reason, field), rej
        assert rej.message
        assert result.table_version == 0
        assert result.request_id == request.submit.request_id[:64]
    assert (await view_of(stub, tid, None)).version == before, "nothing was applied"

    # The seat on turn: a card it does not hold is refused by its rule, then a legal one plays.
    mine = stub.PlayTable(metadata=auth(tokens[seat]))
    await mine.write(watch_msg(tid))
    await read(mine)  # the snapshot
    view = await view_of(stub, tid, tokens[seat])
    held = {(c.suit, c.rank) for c in view.hand}
    missing = next(
        (s, r) for s in range(1, 5) for r in (1, 2, 3, 4, 5, 6, 7, 10, 11, 12) if (s, r) not in held
    )
    bad = action_pb2.Action(
        play_card=card_pb2.Card(suit=card_pb2.Suit.Name(missing[0]), rank=missing[1])
    )
    await mine.write(submit_msg(bad, request_id="d"))
    result = await next_result(mine)
    assert (result.rejected.code, result.rejected.reason) == (9, "CARD_NOT_HELD")
    await mine.write(submit_msg(legal[0], request_id="e"))
    result = await next_result(mine)
    assert not result.HasField("rejected") and result.table_version == before + 1
    # The same request_id again: the first answer, nothing applied twice.
    await mine.write(submit_msg(legal[0], request_id="e"))
    again = await next_result(mine)
    assert again == result
    assert (await view_of(stub, tid, None)).version == before + 1
    call.cancel()
    mine.cancel()


async def test_a_spectator_stream_cannot_submit(stub: Stub) -> None:
    seated = await table_with_humans(stub, "tres", turn_time_s=0)
    call = stub.PlayTable()
    await call.write(watch_msg(seated.table_id))
    assert (await read(call)).watch.HasField("snapshot")
    _seat, legal = await on_turn(stub, seated.table_id, seated.tokens)
    await call.write(submit_msg(legal[0]))
    result = await next_result(call)
    assert (result.rejected.code, result.rejected.reason) == (16, "TOKEN_REQUIRED")
    call.cancel()


async def test_closing_the_sending_side_keeps_the_watch(stub: Stub) -> None:
    seated = await table_with_humans(stub, "tres", turn_time_s=0)
    tid = seated.table_id
    call = stub.PlayTable()
    await call.write(watch_msg(tid, batch_events=True))
    await call.done_writing()
    assert (await read(call)).watch.HasField("snapshot")
    seat, legal = await on_turn(stub, tid, seated.tokens)
    await stub.SubmitAction(
        service_pb2.SubmitActionRequest(table_id=tid, action=legal[0]),
        metadata=auth(seated.tokens[seat]),
    )
    msg = await read(call)
    assert kind(msg.watch.events.events[0]) == "card_played"
    call.cancel()


@pytest.mark.parametrize(
    ("first", "field"),
    [
        (submit_msg(action_pb2.Action()), "watch"),
        (service_pb2.PlayTableRequest(), "watch"),
    ],
)
async def test_a_stream_must_open_with_a_watch(stub: Stub, first: Any, field: str) -> None:
    seated = await table_with_humans(stub, "tres")
    call = stub.PlayTable(metadata=auth(seated.tokens[0]))
    await call.write(first)
    with pytest.raises(grpc.aio.AioRpcError) as got:
        await asyncio.wait_for(call.read(), 30)
    assert got.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info(got.value)
    assert info is not None and info.reason == "INVALID_ARGUMENT"
    assert bad_request_fields(got.value) == [field]


async def test_watch_errors_end_the_stream(stub: Stub) -> None:
    call = stub.PlayTable(metadata=auth("not-a-token"))
    await call.write(watch_msg("no-such-table"))
    with pytest.raises(grpc.aio.AioRpcError) as got:
        await asyncio.wait_for(call.read(), 30)
    assert got.value.code() == grpc.StatusCode.NOT_FOUND
    info = error_info(got.value)
    assert info is not None and info.reason == "TABLE_NOT_FOUND"


async def test_a_client_that_sends_nothing_gets_an_empty_ok_stream(stub: Stub) -> None:
    call = stub.PlayTable()
    await call.done_writing()
    assert await asyncio.wait_for(call.read(), 30) is grpc.aio.EOF  # type: ignore[attr-defined]
    assert await call.code() == grpc.StatusCode.OK


async def test_browsers_are_told_to_use_watch_and_submit(http_server: Server) -> None:
    """Over Connect, PlayTable is UNIMPLEMENTED with a message that says what to use."""
    client = service_connect.TuteServiceClient(f"http://127.0.0.1:{http_server.http_port}")

    async def requests() -> Any:
        yield watch_msg("t")

    async with client:
        with pytest.raises(ConnectError) as got:
            async for _ in client.play_table(requests()):
                pass
    assert got.value.code is Code.UNIMPLEMENTED
    assert "WatchTable and SubmitAction" in got.value.message


@pytest.fixture
async def http_server() -> Any:
    srv = await create_server(settings_for("connect"))
    try:
        yield srv
    finally:
        await srv.shutdown()
