"""A change that lost a race to another commit runs again on the table as it is now; a seat
that changed hands meanwhile is not acted for by the token that opened it before."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from service.server import Server
from tute.v1 import rules_pb2, service_pb2, table_pb2

from .helpers import auth, error_info, view_of


async def test_a_leave_that_lost_a_race_does_not_unseat_the_next_player(
    server: Server, stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="parejas"), take_seat=True, display_name="creator"
        )
    )
    tid = created.table_id
    a = await stub.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="a"))
    store = server.app.commits.ctx.store
    commit = store.commit
    raced = False

    async def racing_commit(table_id: str, change: Any) -> Any:
        # The first commit of the leave below waits while a's other leave lands and b takes
        # the seat: it then loses its race and runs again on the table as it is now.
        nonlocal raced
        if not raced:
            raced = True
            leave = service_pb2.LeaveTableRequest(table_id=tid)
            await stub.LeaveTable(leave, metadata=auth(a.seat_token))
            b = await stub.JoinTable(
                service_pb2.JoinTableRequest(table_id=tid, seat=a.seat, display_name="b")
            )
            assert b.seat == a.seat
        return await commit(table_id, change)

    monkeypatch.setattr(store, "commit", racing_commit)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(a.seat_token)
        )
    assert raced
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    info = error_info(err.value)
    assert info is not None and info.reason == "NOT_SEATED"
    seat = (await view_of(stub, tid, None)).seats[a.seat]
    assert (seat.display_name, seat.occupant) == ("b", table_pb2.OCCUPANT_KIND_HUMAN)
