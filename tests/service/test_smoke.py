"""A first end-to-end check: a human and three bots finish a match through the API."""

from __future__ import annotations

import grpc
import pytest

from tests.support.wait import eventually
from tute.v1 import rules_pb2, service_pb2

from .helpers import FINISHED, auth, bad_request_fields, error_info, view_of


async def test_one_human_three_bots_finish_a_match(stub) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="parejas"), take_seat=True, display_name="ana"
        )
    )
    for _ in range(3):
        await stub.AddBot(
            service_pb2.AddBotRequest(table_id=created.table_id), metadata=auth(created.owner_token)
        )
    for _ in range(500):
        v = await view_of(stub, created.table_id, created.seat_token)
        if v.status == FINISHED:
            break
        if v.legal_actions:
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=created.table_id, action=v.legal_actions[0]
                ),
                metadata=auth(created.seat_token),
            )
    assert v.status == FINISHED
    assert list(v.match_result.winner_sides) in ([0], [1])


async def test_unknown_table_is_not_found_and_bad_id_names_the_field(stub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetTable(service_pb2.GetTableRequest(table_id="nope"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    info = error_info(err.value)
    assert info is not None and info.reason == "TABLE_NOT_FOUND"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetTable(service_pb2.GetTableRequest(table_id=""))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_request_fields(err.value) == ["table_id"]


async def test_seats_show_connected_while_their_stream_is_open(stub) -> None:

    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="corriente-8"), take_seat=True, display_name="ana"
        )
    )
    v = await view_of(stub, created.table_id, created.seat_token)
    assert not v.seats[0].connected
    stream = stub.WatchTable(
        service_pb2.WatchTableRequest(table_id=created.table_id),
        metadata=auth(created.seat_token),
    )
    first = await stream.read()
    assert first.HasField("snapshot")
    v = await view_of(stub, created.table_id, None)
    assert v.seats[0].connected and not v.seats[1].connected
    stream.cancel()

    async def gone() -> bool:
        return not (await view_of(stub, created.table_id, None)).seats[0].connected

    await eventually(gone, what="seat 0 not connected once its stream ended")


async def test_a_seat_watching_on_one_replica_shows_connected_on_another() -> None:

    from service.server import create_server
    from service.store.memory import MemoryStore
    from tute.v1 import service_pb2_grpc

    from .conftest import FAST

    shared = MemoryStore()
    a, b = await create_server(FAST, shared), await create_server(FAST, shared)
    try:
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{a.port}") as ca,
            grpc.aio.insecure_channel(f"127.0.0.1:{b.port}") as cb,
        ):
            stub_a = service_pb2_grpc.TuteServiceStub(ca)
            stub_b = service_pb2_grpc.TuteServiceStub(cb)
            created = await stub_a.CreateTable(
                service_pb2.CreateTableRequest(
                    rules=rules_pb2.Rules(preset="tres"),
                    take_seat=True,
                    seat=2,
                    display_name="ana",
                )
            )
            stream = stub_a.WatchTable(
                service_pb2.WatchTableRequest(table_id=created.table_id),
                metadata=auth(created.seat_token),
            )
            assert (await stream.read()).HasField("snapshot")
            v = await view_of(stub_b, created.table_id, None)
            assert [s.connected for s in v.seats] == [False, False, True]
            stream.cancel()

            async def gone() -> bool:
                return not (await view_of(stub_b, created.table_id, None)).seats[2].connected

            await eventually(gone, what="seat 2 not connected on the other replica")
    finally:
        await a.shutdown()
        await b.shutdown()
