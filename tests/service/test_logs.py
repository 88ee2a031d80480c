"""The server's log as an operator reads it: one JSON object per line; every table call's lines
(its errors and its access line) name the table and, once known, the caller's seat; one ``rpc``
access line per call (method, code, duration_ms, peer; a stream's when it ends) unless the
``access_log`` setting is off; the match's start and end; never a card or a token."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from service.server import Server, create_server
from tests.support.wait import eventually
from tute.v1 import service_pb2, service_pb2_grpc

from .conftest import FAST
from .helpers import Stub, auth, table_with_humans
from .visibility import LogBuffer, card_texts_in

UNKNOWN_TABLE = "0123456789abcdef"


def lines_of(buf: LogBuffer) -> list[dict[str, Any]]:
    """Every line of the captured log, parsed (a line that is not one JSON object fails)."""
    out = []
    for line in buf.text.splitlines():
        obj = json.loads(line)
        assert isinstance(obj, dict), line
        out.append(obj)
    return out


@pytest.fixture
async def quiet_server() -> AsyncIterator[Server]:
    srv = await create_server(dataclasses.replace(FAST, access_log=False))
    try:
        yield srv
    finally:
        await srv.shutdown()


async def _errors(stub: Stub, tid: str, tokens: dict[int, str]) -> int:
    """One failing call of each table RPC, by a seated caller where the RPC takes one; returns
    the seat whose action was refused."""
    turn = (
        await stub.GetTable(service_pb2.GetTableRequest(table_id=tid), metadata=auth(tokens[0]))
    ).view.turn_seat
    view = (
        await stub.GetTable(service_pb2.GetTableRequest(table_id=tid), metadata=auth(tokens[turn]))
    ).view
    off_turn = next(s for s in tokens if s != turn)
    calls = [
        stub.SubmitAction(
            service_pb2.SubmitActionRequest(table_id=tid, action=view.legal_actions[0]),
            metadata=auth(tokens[off_turn]),
        ),
        stub.GetTable(service_pb2.GetTableRequest(table_id=tid), metadata=auth("not-a-token")),
        stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=UNKNOWN_TABLE), metadata=auth(tokens[0])
        ),
        stub.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="late")),
    ]
    for call in calls:
        with pytest.raises(grpc.aio.AioRpcError):
            await call
    watch = stub.WatchTable(service_pb2.WatchTableRequest(table_id=UNKNOWN_TABLE))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await watch.read()
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    return off_turn


async def test_every_line_is_json_and_table_calls_name_their_table(
    server: Server, stub: Stub
) -> None:
    with LogBuffer() as buf:
        seated = await table_with_humans(stub, "parejas", turn_time_s=0)
        tid, tokens = seated.table_id, seated.tokens
        stream = stub.WatchTable(
            service_pb2.WatchTableRequest(table_id=tid), metadata=auth(tokens[1])
        )
        await stream.read()  # the snapshot
        refused = await _errors(stub, tid, tokens)
        # seat 2 leaves the match: it forfeits, the match ends
        await stub.LeaveTable(service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(tokens[2]))
        stream.cancel()

        def stream_ended() -> None:
            access = [ln for ln in lines_of(buf) if ln["event"] == "rpc"]
            watch = [ln for ln in access if ln["method"] == "WatchTable"]
            assert len(watch) == 2, watch  # the unknown table's, and this one
            # (each access line is written once its call is over)
            assert any(ln["method"] == "LeaveTable" for ln in access)

        await eventually(stream_ended)
    lines = lines_of(buf)
    text = buf.text

    rpc = [ln for ln in lines if ln["event"] == "rpc"]
    for ln in rpc:
        assert isinstance(ln["duration_ms"], float) and ln["duration_ms"] >= 0, ln
        assert ln["peer"].startswith(("ipv4:127.0.0.1:", "ipv6:")), ln
        assert ln["service"] == "tute.v1.TuteService", ln
        assert ln["level"] == "info" and "timestamp" in ln, ln

    def calls(method: str, code: str) -> list[dict[str, Any]]:
        return [ln for ln in rpc if ln["method"] == method and ln["code"] == code]

    # one access line per call, naming the table (the seat, where the call had one)
    assert [(ln["table_id"], ln["seat"]) for ln in calls("CreateTable", "OK")] == [(tid, 0)]
    joined = [(ln["table_id"], ln["seat"]) for ln in calls("JoinTable", "OK")]
    assert sorted(joined) == [(tid, 1), (tid, 2), (tid, 3)], joined
    assert len(calls("GetTable", "OK")) == 2
    assert len(calls("LeaveTable", "OK")) == 1
    # the errors: each call's error line and access line name the table (and the seat)
    failed = {
        "SubmitAction": "FAILED_PRECONDITION",
        "GetTable": "PERMISSION_DENIED",
        "LeaveTable": "NOT_FOUND",
        "JoinTable": "FAILED_PRECONDITION",
        "WatchTable": "NOT_FOUND",
    }
    for method, code in failed.items():
        (access,) = calls(method, code)
        errors = [ln for ln in lines if ln["event"] == "rpc_error" and ln["method"] == method]
        assert len(errors) == 1 and errors[0]["code"] == code, errors
        want = UNKNOWN_TABLE if method in ("LeaveTable", "WatchTable") else tid
        assert access["table_id"] == errors[0]["table_id"] == want, (access, errors)
    (submit,) = calls("SubmitAction", "FAILED_PRECONDITION")
    assert submit["seat"] == refused, submit
    for ln in calls("GetTable", "OK") + calls("LeaveTable", "OK"):
        assert ln["table_id"] == tid and ln["seat"] in tokens, ln
    (watched,) = [ln for ln in rpc if ln["method"] == "WatchTable" and ln["table_id"] == tid]
    assert watched["code"] == "CANCELLED" and watched["seat"] == 1, watched
    assert "seat" not in calls("GetTable", "PERMISSION_DENIED")[0]  # its token opened no seat

    # the match's start and end
    (started,) = [ln for ln in lines if ln["event"] == "match_started"]
    assert started["table_id"] == tid and started["players"] == 4, started
    (ended,) = [ln for ln in lines if ln["event"] == "match_ended"]
    assert ended["table_id"] == tid and ended["end_reason"] == "forfeit", ended
    assert ended["forfeited_seat"] == 2 and ended["winners"] == [1], ended

    # nothing hidden: no card, no token
    assert not card_texts_in(text), sorted(card_texts_in(text))
    assert not [t for t in tokens.values() if t in text]


async def test_access_log_off_keeps_the_other_lines(quiet_server: Server) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{quiet_server.port}") as channel:
        stub = service_pb2_grpc.TuteServiceStub(channel)
        with LogBuffer() as buf:
            await stub.ListTables(service_pb2.ListTablesRequest())
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.GetTable(service_pb2.GetTableRequest(table_id=UNKNOWN_TABLE))
    lines = lines_of(buf)
    assert [ln["event"] for ln in lines] == ["rpc_error"], lines
    assert lines[0]["table_id"] == UNKNOWN_TABLE and lines[0]["code"] == "NOT_FOUND"


async def test_a_malformed_table_id_is_not_logged(server: Server, stub: Stub) -> None:
    """The request's table_id joins the log context only when it looks like a table id."""
    junk = "x" * 65 + "\n{}"
    with LogBuffer() as buf:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.GetTable(service_pb2.GetTableRequest(table_id=junk))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        # the access line is written once the call is over, maybe after the client saw it end
        await eventually(lambda: len(lines_of(buf)) >= 2, what="the access line")
    lines = lines_of(buf)
    assert [ln["event"] for ln in lines] == ["rpc_error", "rpc"], lines
    assert all("table_id" not in ln for ln in lines), lines
