"""SubmitAction acts on the record the replica saw committed last when the store offers one
(``Store.recent``: on Redis, the record a commit publishes with its events), without reading
the table first. That record may be stale: the commit then finds the table moved on and the
action runs again on the table as it is, and whatever the stale record made wrong (not the
seat's turn, no such seat, an illegal card) is checked again on a fresh read before it is
answered. Here the memory store's ``recent`` is made to give a record from the past."""

from __future__ import annotations

import random
from typing import Any

import grpc
import pytest

from service.server import Server
from service.store.base import RecordData
from tute.v1 import rules_pb2, service_pb2

from .helpers import Seated, auth, error_info, table_with_humans, view_of


async def _turn(stub: Any, seated: Seated) -> tuple[str, list[Any]]:
    """The token of the seat whose turn it is, and its legal actions."""
    for token in seated.tokens.values():
        v = await view_of(stub, seated.table_id, token)
        if v.legal_actions:
            return token, list(v.legal_actions)
    raise AssertionError("nobody can act")


def _loads(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table ids the store is read for from now on."""
    loaded: list[str] = []
    load = store.load

    async def counting(table_id: str) -> Any:
        loaded.append(table_id)
        return await load(table_id)

    monkeypatch.setattr(store, "load", counting)
    return loaded


def _recent(store: Any, monkeypatch: pytest.MonkeyPatch, found: tuple[int, RecordData]) -> None:
    monkeypatch.setattr(store, "recent", lambda table_id: found)


async def _started(server: Server, stub: Any) -> tuple[Any, Seated, str, list[Any], Any]:
    """A match under way: the store, the table, the token on turn, its legal actions, and the
    table's (version, record) now."""
    seated = await table_with_humans(stub)
    store = server.app.commits.ctx.store
    token, legal = await _turn(stub, seated)
    found = await store.load(seated.table_id)
    assert found is not None
    return store, seated, token, legal, found


async def _submit(stub: Any, table_id: str, token: str, action: Any) -> Any:
    return await stub.SubmitAction(
        service_pb2.SubmitActionRequest(table_id=table_id, action=action, omit_view=True),
        metadata=auth(token),
    )


async def test_an_action_on_the_current_record_reads_nothing_from_the_store(
    server: Server, stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, seated, token, legal, found = await _started(server, stub)
    _recent(store, monkeypatch, found)
    loaded = _loads(store, monkeypatch)
    done = await _submit(stub, seated.table_id, token, legal[0])
    assert done.table_version == found[0] + 1
    assert loaded == []


async def test_an_action_on_a_stale_record_runs_on_the_table_as_it_is(
    server: Server, stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    seated = await table_with_humans(stub)
    store = server.app.commits.ctx.store
    old = await store.load(seated.table_id)
    assert old is not None
    for _ in range(3):  # the table moves on past the record the replica will offer
        token, legal = await _turn(stub, seated)
        await _submit(stub, seated.table_id, token, rng.choice(legal))
    _recent(store, monkeypatch, old)
    loaded = _loads(store, monkeypatch)
    # on the stale record it is another seat's turn (or the card is not in its hand): the
    # action is checked again on the table as it is, and goes through, once
    token, legal = await _turn(stub, seated)
    before = (await view_of(stub, seated.table_id, token)).version
    done = await _submit(stub, seated.table_id, token, rng.choice(legal))
    assert done.table_version == before + 1
    assert loaded  # it read the table afresh
    # the next seat's action too, and the seat that just played may not play again
    token2, legal2 = await _turn(stub, seated)
    if token2 != token:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _submit(stub, seated.table_id, token, legal2[0])
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        info = error_info(err.value)
        assert info is not None and info.reason == "NOT_YOUR_TURN"
        assert (await view_of(stub, seated.table_id, None)).version == done.table_version
    done2 = await _submit(stub, seated.table_id, token2, legal2[0])
    assert done2.table_version == done.table_version + 1


async def test_a_seat_taken_after_the_stale_record_still_acts(
    server: Server, stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="corriente-8"), take_seat=True, display_name="p0"
        )
    )
    tid = created.table_id
    store = server.app.commits.ctx.store
    before_join = await store.load(tid)
    assert before_join is not None
    joined = await stub.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="p1"))
    seated = Seated(tid, {created.seat: created.seat_token, joined.seat: joined.seat_token})
    token, legal = await _turn(stub, seated)
    if token != joined.seat_token:  # the joined player acts: the creator plays first
        await _submit(stub, tid, token, legal[0])
        token, legal = await _turn(stub, seated)
    assert token == joined.seat_token
    version = (await view_of(stub, tid, None)).version
    # the stale record has no match and one seat free: the token opens no seat there
    _recent(store, monkeypatch, before_join)
    done = await _submit(stub, tid, token, legal[0])
    assert done.table_version == version + 1


async def test_an_error_on_a_stale_record_is_the_fresh_records_error(
    server: Server, stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, seated, token, legal, stale = await _started(server, stub)
    await _submit(stub, seated.table_id, token, legal[0])
    version = (await view_of(stub, seated.table_id, None)).version
    _recent(store, monkeypatch, stale)
    # legal on the stale record (it was this seat's turn there), not on the table as it is
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _submit(stub, seated.table_id, token, legal[0])
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    info = error_info(err.value)
    assert info is not None and info.reason == "NOT_YOUR_TURN"
    assert (await view_of(stub, seated.table_id, None)).version == version
    # a token no seat has: the same answer as without a record known
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _submit(stub, seated.table_id, "x" * 43, legal[0])
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    info = error_info(err.value)
    assert info is not None and info.reason == "NOT_SEATED"
