"""Small helpers for service tests: auth metadata, tables with seated players, playing."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

import engine
from service.reasons import STATUS, Reason
from service.tables import changes
from service.tables.model import TableRecord
from tute.v1 import errors_pb2, rules_pb2, service_pb2, service_pb2_grpc, view_pb2

Stub = service_pb2_grpc.TuteServiceStub
FINISHED = 3  # TABLE_STATUS_FINISHED


def auth(token: str) -> tuple[tuple[str, str], ...]:
    """Metadata carrying a seat token."""
    return (("authorization", f"Bearer {token}"),)


@dataclass
class Seated:
    table_id: str
    tokens: dict[int, str]


async def table_with_humans(stub: Stub, preset: str = "parejas", **options: Any) -> Seated:
    """A public table of ``preset`` with every seat taken by a test player (the match starts)."""
    rules = rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(**options))
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="p0")
    )
    tokens = {created.seat: created.seat_token}
    players = len(created.table.seats)
    for i in range(1, players):
        joined = await stub.JoinTable(
            service_pb2.JoinTableRequest(table_id=created.table_id, display_name=f"p{i}")
        )
        tokens[joined.seat] = joined.seat_token
    return Seated(created.table_id, tokens)


async def view_of(stub: Stub, table_id: str, token: str | None) -> view_pb2.TableView:
    md = auth(token) if token else None
    return (await stub.GetTable(service_pb2.GetTableRequest(table_id=table_id), metadata=md)).view


async def play_random_until_over(stub: Stub, seated: Seated, rng: random.Random) -> int:
    """Every seat plays random legal actions until the match ends; returns actions sent."""
    sent = 0
    while True:
        acted = False
        for token in seated.tokens.values():
            v = await view_of(stub, seated.table_id, token)
            if v.status == FINISHED:
                return sent
            if v.legal_actions:
                action = rng.choice(list(v.legal_actions))
                await stub.SubmitAction(
                    service_pb2.SubmitActionRequest(table_id=seated.table_id, action=action),
                    metadata=auth(token),
                )
                sent += 1
                acted = True
        if not acted:
            raise AssertionError("nobody could act but the match is not over")


def error_info(err: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo | None:
    """The google.rpc.ErrorInfo detail of a failed call, if any."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info
    return None


def bad_request_fields(err: grpc.aio.AioRpcError) -> list[str]:
    """The fields named by a google.rpc.BadRequest detail."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    fields: list[str] = []
    if status is None:
        return fields
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
    return fields


LIBRARY_CODES = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNIMPLEMENTED)
"""Codes the gRPC library answers by itself (a message or metadata over its size limit, an
unknown method), before the server sees the call: no rich status (errors.proto says so)."""


def registered_reason(err: grpc.aio.AioRpcError, *, library: bool = False) -> str:
    """The ErrorInfo reason of a failed call, checked against the contract: the status has
    exactly one ErrorInfo, of domain "tute.v1", whose reason is a value of the proto enum
    tute.v1.ErrorReason and of the server's registry, sent with that reason's status code.

    With ``library``, a status without any rich status of a :data:`LIBRARY_CODES` code (the
    gRPC library's own) is allowed too; its reason is ``""``."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    if status is None and library and err.code() in LIBRARY_CODES:
        return ""
    assert status is not None, f"{err.code().name} without a rich status: {err.details()!r}"
    infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(infos) == 1, f"{err.code().name} with {len(infos)} ErrorInfo: {err.details()!r}"
    info = error_details_pb2.ErrorInfo()
    infos[0].Unpack(info)
    assert info.domain == "tute.v1", info
    names = errors_pb2.ErrorReason.keys()
    assert f"ERROR_REASON_{info.reason}" in names, f"reason {info.reason!r} is not documented"
    assert info.reason in Reason.__members__, f"reason {info.reason!r} is not registered"
    expected = STATUS[Reason(info.reason)]
    assert err.code() == expected, f"{info.reason} sent with {err.code().name}, not {expected.name}"
    return info.reason


def new_record(table_id: str = "t0", preset: str = "parejas-manos") -> TableRecord:
    """A new public table's record of ``preset``, no seat taken (for tests that drive
    :mod:`service.tables.changes` or the committer without a server)."""
    return changes.new_table(
        table_id,
        preset,
        engine.PRESETS[preset],
        private=False,
        invite_code="",
        created_at=0.0,
        owner_token_hash="",
    )
