"""Every refusal reaches the SDK's caller as a typed exception with the status, the
ErrorInfo reason and the BadRequest field (from the ``grpc-status-details-bin`` trailer)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from clients import (
    Aborted,
    Backoff,
    FailedPrecondition,
    IllegalMove,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RateLimited,
    ResourceExhausted,
    SeatLost,
    StaleVersion,
    TuteClient,
    TuteError,
    Unauthenticated,
    Unavailable,
)
from clients.cards import card_text, parse_card
from clients.errors import error_from_rpc
from service.server import Server, create_server
from tests.support.redis import free_port

from .conftest import QUICK
from .helpers import SHORT_4P


@pytest.fixture
async def client(address: str) -> AsyncIterator[TuteClient]:
    async with TuteClient(address) as c:
        yield c


async def test_invalid_argument_names_the_field(client: TuteClient) -> None:
    with pytest.raises(InvalidArgument) as err:
        await client.create_table(preset="no-such-preset")
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.field == "rules.preset"
    assert "unknown preset" in err.value.message
    with pytest.raises(InvalidArgument) as err:
        await client.create_table(options={"players": 5})
    assert err.value.field == "rules.options.players"
    created = await client.create_table(preset="corriente-6", take_seat=True, display_name="A")
    with pytest.raises(InvalidArgument) as err:
        await client.submit(table_id=created.table_id, action="13Z")
    assert err.value.field == "action"


async def test_not_found(client: TuteClient) -> None:
    with pytest.raises(NotFound) as err:
        await client.get_table(table_id="no-such-table")
    assert err.value.reason == "TABLE_NOT_FOUND"
    with pytest.raises(NotFound) as err:
        await client.join_table(invite_code="ZZZZZZZZ", display_name="B")
    assert err.value.reason == "INVITE_NOT_FOUND"


async def test_failed_precondition_and_illegal_moves(address: str) -> None:
    a, b = TuteClient(address), TuteClient(address)
    try:
        created = await a.create_table(
            preset="corriente-6", options={"turn_time_s": 0}, take_seat=True, display_name="A"
        )
        table_id = created.table_id
        with pytest.raises(IllegalMove) as move:
            await a.submit(table_id=table_id, action="1O")
        assert move.value.reason == "MATCH_NOT_STARTED"
        with pytest.raises(FailedPrecondition) as taken:
            await b.join_table(table_id=table_id, seat=0, display_name="B")
        assert taken.value.reason == "SEAT_TAKEN" and not isinstance(taken.value, IllegalMove)
        await b.join_table(table_id=table_id, display_name="B")
        view = await a.get_table(table_id=table_id)
        on_turn, waiting = (a, b) if view.turn_seat == view.my_seat else (b, a)
        idle = await waiting.get_table(table_id=table_id)
        with pytest.raises(IllegalMove) as move:
            await waiting.submit(table_id=table_id, action=card_text(idle.hand[0]))
        assert move.value.reason == "NOT_YOUR_TURN"
        assert move.value.code == grpc.StatusCode.FAILED_PRECONDITION
        mine = await on_turn.get_table(table_id=table_id)
        held = {card_text(c) for c in mine.hand}
        missing = next(t for t in ("1O", "3O", "1C", "3C", "1E", "1B", "2O") if t not in held)
        with pytest.raises(IllegalMove) as move:
            await on_turn.submit(table_id=table_id, action=missing)
        assert move.value.reason == "CARD_NOT_HELD"
        assert parse_card(missing) not in mine.hand
    finally:
        await a.close()
        await b.close()


async def test_must_follow_suit(address: str) -> None:
    """In 4 players a follower holding the led suit may not play another suit."""
    clients = [TuteClient(address) for _ in range(4)]
    try:
        created = await clients[0].create_table(
            preset="parejas", options=SHORT_4P, take_seat=True, display_name="p0"
        )
        table_id = created.table_id
        for i, c in enumerate(clients[1:], 1):
            await c.join_table(table_id=table_id, display_name=f"p{i}")
        rng = random.Random(1)
        refused = None
        while refused is None:
            views = [await c.get_table(table_id=table_id) for c in clients]
            seat = views[0].turn_seat
            view, client = views[seat], clients[seat]
            trick = view.current_trick.cards
            legal = [a.play_card for a in view.legal_actions if a.HasField("play_card")]
            if trick:
                led = trick[0].card.suit
                other = [c for c in view.hand if c.suit != led]
                if any(c.suit == led for c in view.hand) and other:
                    with pytest.raises(IllegalMove) as move:
                        await client.submit(table_id=table_id, action=card_text(other[0]))
                    refused = move.value
                    break
            await client.submit(table_id=table_id, action=card_text(rng.choice(legal)))
        assert refused.reason == "MUST_FOLLOW_SUIT"
        assert "follow" in refused.message
        assert repr(refused).startswith("IllegalMove(reason='MUST_FOLLOW_SUIT'")
        after = await clients[seat].get_table(table_id=table_id)
        assert after.last_event_sequence == view.last_event_sequence  # nothing changed
    finally:
        for c in clients:
            await c.close()


async def test_stale_version_unauthenticated_permission_denied(address: str) -> None:
    a, b, nobody = TuteClient(address), TuteClient(address), TuteClient(address)
    try:
        first = await a.create_table(
            preset="corriente-6", options={"turn_time_s": 0}, take_seat=True, display_name="A"
        )
        await b.join_table(table_id=first.table_id, display_name="B")
        view = await a.get_table(table_id=first.table_id)
        client = a if view.turn_seat == view.my_seat else b
        mine = await client.get_table(table_id=first.table_id)
        with pytest.raises(StaleVersion) as stale:
            await client.submit(
                table_id=first.table_id, action=mine.legal_actions[0], expected_version=1
            )
        assert isinstance(stale.value, Aborted)
        assert stale.value.reason == "STALE_VERSION"
        assert stale.value.current_version == mine.version
        with pytest.raises(Unauthenticated) as unauth:
            await nobody.submit(table_id=first.table_id, action=mine.legal_actions[0])
        assert unauth.value.code == grpc.StatusCode.UNAUTHENTICATED
        # a's token is for the first table only
        other = await b.create_table(preset="corriente-6", display_name="B")
        nobody.import_tokens({other.table_id: {"seat_token": a.seat_tokens[first.table_id]}})
        with pytest.raises(PermissionDenied) as denied:
            await nobody.get_table(table_id=other.table_id)
        assert denied.value.reason == "NOT_SEATED"
        private = await b.create_table(preset="corriente-6", private=True)
        with pytest.raises(PermissionDenied) as denied:
            await nobody.join_table(table_id=private.table_id, display_name="C")
        assert denied.value.reason == "PRIVATE_TABLE"
    finally:
        for c in (a, b, nobody):
            await c.close()


async def test_resource_exhausted() -> None:
    srv: Server = await create_server(dataclasses.replace(QUICK, max_tables=1))
    try:
        async with TuteClient(f"127.0.0.1:{srv.port}") as client:
            await client.create_table(preset="corriente-6")
            with pytest.raises(ResourceExhausted) as err:
                await client.create_table(preset="corriente-6")
            assert err.value.reason == "TOO_MANY_TABLES"
    finally:
        await srv.shutdown()


async def test_unavailable_after_bounded_backoff() -> None:
    """No server at the address: GetTable is retried with growing, jittered, bounded delays
    (on an injected clock and sleep) and then gives up with Unavailable."""
    now = [0.0]
    delays: list[float] = []

    async def sleep(d: float) -> None:
        delays.append(d)
        now[0] += d

    backoff = Backoff(initial_s=0.1, max_s=1.0, multiplier=2.0, jitter=0.5, give_up_after_s=5.0)
    async with TuteClient(
        f"127.0.0.1:{free_port()}",
        backoff=backoff,
        sleep=sleep,
        clock=lambda: now[0],
        rng=random.Random(3),
        connect_timeout_s=0.01,
    ) as client:
        with pytest.raises(Unavailable) as err:
            await client.get_table(table_id="abc")
        assert err.value.code == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(Unavailable):  # not retried: it could create a table twice
            await client.create_table(preset="corriente-6")
    assert sum(delays) >= 5.0 and sum(delays[:-1]) < 5.0
    for i, d in enumerate(delays):
        cap = min(1.0, 0.1 * 2**i)
        assert cap * 0.5 <= d <= cap
    assert max(delays) > 0.5  # it grew to the cap


def _rpc_error(code: grpc.StatusCode, *details: object) -> grpc.aio.AioRpcError:
    status = status_pb2.Status(code=code.value[0], message="refused")
    for d in details:
        packed = any_pb2.Any()
        packed.Pack(d)  # type: ignore[arg-type]
        status.details.append(packed)
    trailer = grpc.aio.Metadata(("grpc-status-details-bin", status.SerializeToString()))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailer, details="refused")  # type: ignore[call-arg]


def test_reasons_of_other_branches_map_to_their_classes() -> None:
    """RATE_LIMITED (with RetryInfo) and SEAT_LOST, which servers of this contract send, have
    their own classes; an unknown code stays a TuteError."""
    limited = error_from_rpc(
        _rpc_error(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            error_details_pb2.ErrorInfo(reason="RATE_LIMITED", domain="tute.v1"),
            error_details_pb2.RetryInfo(
                retry_delay=duration_pb2.Duration(seconds=1, nanos=500_000_000)
            ),
        ),
        "GetTable",
    )
    assert isinstance(limited, RateLimited) and limited.retry_after == 1.5
    lost = error_from_rpc(
        _rpc_error(
            grpc.StatusCode.PERMISSION_DENIED,
            error_details_pb2.ErrorInfo(reason="SEAT_LOST", domain="tute.v1"),
        ),
        "WatchTable",
    )
    assert isinstance(lost, SeatLost) and isinstance(lost, PermissionDenied)
    internal = error_from_rpc(_rpc_error(grpc.StatusCode.INTERNAL), "GetTable")
    assert type(internal) is TuteError and internal.code == grpc.StatusCode.INTERNAL
    assert str(internal) == "INTERNAL: refused"
