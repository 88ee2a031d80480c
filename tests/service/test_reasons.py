"""The one list of error reasons (:class:`service.reasons.Reason`, documented as the proto enum
tute.v1.ErrorReason): the engine's codes are in it, the service sends nothing outside it (each
reason with its own status code), and every reason is sent somewhere: over real gRPC for all
but the engine's input codes, which only the engine's own API can cause.

tests/test_protos.py checks the proto side (the enum's values and comments, the service
comment); tests/service/helpers.registered_reason checks every error that test_errors and
the fuzz receive.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import re
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import engine
from engine.errors import INPUT_REASONS, REASONS
from engine.game import _RULE_TEXT
from service import errors as service_errors
from service.auth import hash_token
from service.reasons import STATUS, Reason, from_engine
from service.server import Server, create_server
from service.store import memory
from service.store.base import Commit, CommitOutcome, RecordData, StoreUnavailable
from service.store.memory import MemoryStore
from tests.engine.positions import deck_for
from tests.support import jwts
from tests.support.jwts import jwt_settings
from tute.v1 import action_pb2, card_pb2, rules_pb2, service_pb2, service_pb2_grpc, table_pb2

from .conftest import FAST
from .helpers import Stub, auth, registered_reason

ROOT = Path(__file__).resolve().parents[2]
Code = grpc.StatusCode

ENGINE_INPUT = {from_engine(code) for code in INPUT_REASONS} - {Reason.INVALID_OPTION} | {
    Reason.UNKNOWN_ACTION
}
"""The engine's codes for malformed engine input (text forms, decks, seats, state bytes, action
numbers): the server converts every request itself, so no request causes them."""
NOT_YET_EMITTED: set[Reason] = set()
"""Registered and documented, but sent by code that is not on this branch; a test fails as soon
as the service refers to one of them, so that it moves out of this set."""


# ---------------------------------------------------------------------------------------------
# static: the engine's codes, the service's references
# ---------------------------------------------------------------------------------------------


def _trees(folder: str) -> Iterator[tuple[Path, ast.AST]]:
    for path in sorted((ROOT / folder).rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def engine_codes() -> dict[str, str]:
    """Every reason code a raise in engine/ uses -> the error class raised."""
    out: dict[str, str] = {}
    for path, tree in _trees("engine"):
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            name = node.func.id
            if name == "InvalidOption":
                out["invalid_option"] = name
            elif name in ("IllegalAction", "InvalidInput") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out[arg.value] = name
                else:  # the arrastre's rule, a key of _RULE_TEXT (engine/game.py)
                    assert path.name == "game.py", f"{path}: a computed reason code"
                    out.update(dict.fromkeys(_RULE_TEXT, name))
    return out


def test_the_engines_codes_are_its_lists_and_registered_with_their_codes() -> None:
    codes = engine_codes()
    assert len(codes) >= 19
    assert set(codes) == set(REASONS) | set(INPUT_REASONS)
    for code, cls in codes.items():
        reason = from_engine(code)
        expected = Code.FAILED_PRECONDITION if cls == "IllegalAction" else Code.INVALID_ARGUMENT
        assert STATUS[reason] == expected, (code, cls)
    with pytest.raises(LookupError):
        from_engine("no_such_rule")


def service_references() -> tuple[set[str], list[tuple[str, str, str]]]:
    """The reasons the service code refers to (``Reason.X``, or a literal ``reason="X"``), and
    every ``ErrorClass(..., reason=Reason.X)`` call as (file:line, class, reason)."""
    refs: set[str] = set()
    raises: list[tuple[str, str, str]] = []
    for path, tree in _trees("service"):
        if path.name == "reasons.py":
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Reason"
            ):
                refs.add(node.attr)
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg != "reason":
                        continue
                    value = kw.value
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        refs.add(value.value)
                    if (
                        isinstance(node.func, ast.Name)
                        and isinstance(value, ast.Attribute)
                        and isinstance(value.value, ast.Name)
                        and value.value.id == "Reason"
                    ):
                        where = f"{path.relative_to(ROOT)}:{node.lineno}"
                        raises.append((where, node.func.id, value.attr))
    return refs, raises


def test_the_service_raises_each_reason_with_its_status_code() -> None:
    refs, raises = service_references()
    assert refs <= set(Reason.__members__), refs - set(Reason.__members__)
    assert len(raises) > 25
    for where, cls_name, reason in raises:
        cls = getattr(service_errors, cls_name, None)
        if cls is None:  # not an error class (BadField carries a reason for one)
            continue
        assert STATUS[Reason[reason]] == cls.code, f"{where}: {cls_name}(reason={reason})"


def test_every_reason_is_sent_somewhere() -> None:
    refs, _ = service_references()
    emitted = {Reason[r] for r in refs} | {from_engine(c) for c in engine_codes()}
    assert not NOT_YET_EMITTED & emitted, (
        f"now emitted, take them out of NOT_YET_EMITTED: {NOT_YET_EMITTED & emitted}"
    )
    missing = set(Reason) - emitted - NOT_YET_EMITTED
    assert not missing, f"registered but never sent: {missing}"


# ---------------------------------------------------------------------------------------------
# over gRPC: every reason a request can cause, caused
# ---------------------------------------------------------------------------------------------


class FlakyStore(MemoryStore):
    """The memory store, made to fail on demand: ``down`` (unreachable), ``bug`` (an
    unexpected exception) or ``conflict`` (every commit loses its race)."""

    mode = ""

    async def load(self, table_id: str) -> tuple[int, RecordData] | None:
        if self.mode == "down":
            raise StoreUnavailable("switched off by the test")
        if self.mode == "bug":
            raise RuntimeError("a bug planted by the test")
        return await super().load(table_id)

    async def commit(self, table_id: str, commit: Commit) -> CommitOutcome:
        if self.mode == "conflict":
            return CommitOutcome(False, commit.expected_version + 1)
        return await super().commit(table_id, commit)


HANDS = {
    0: "4C 1C 3C 5C 6C 1E 3E 4E 6E 7E",
    1: "12C 2C 7C 10C 11C 2E 10E 11E 12E 1B",
    2: "5O 5E 2B 3B 4B 5B 6B 7B 10B 11B",
    3: "3O 4O 1O 2O 6O 7O 10O 11O 12B 12O",
}
"""A 4-player first hand dealt by seat 3 (trumps: oros) where seat 0 leads 4C and the three
followers can each break one rule of the arrastre."""


def _card(text: str) -> action_pb2.Action:
    c = engine.parse_card(text)
    return action_pb2.Action(
        play_card=card_pb2.Card(suit=engine.cards.SUIT_OF[c] + 1, rank=engine.cards.RANK_OF[c])  # type: ignore[arg-type]
    )


@dataclasses.dataclass
class Caller:
    stub: Stub
    seen: set[str] = dataclasses.field(default_factory=set)

    async def fails(self, call: Awaitable[Any], code: grpc.StatusCode, reason: Reason) -> None:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        got = registered_reason(caught.value)
        assert (caught.value.code(), got) == (code, reason.value), caught.value.details()
        self.seen.add(got)

    async def stream_fails(
        self,
        request: service_pb2.WatchTableRequest,
        code: grpc.StatusCode,
        reason: Reason,
        md: Any = None,
        *,
        skip: int = 0,
    ) -> None:
        call = self.stub.WatchTable(request, metadata=md)
        try:
            for _ in range(skip):
                await call.read()
            await self.fails(call.read(), code, reason)
        finally:
            call.cancel()


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[Server, FlakyStore]]:
    store = FlakyStore()
    srv = await create_server(jwt_settings(FAST), store=store)
    try:
        yield srv, store
    finally:
        store.mode = ""
        await srv.shutdown()


def _rules(preset: str, **options: Any) -> rules_pb2.Rules:
    return rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(turn_time_s=0, **options))


async def test_every_reason_a_request_can_cause_is_sent_over_grpc(
    flaky: tuple[Server, FlakyStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, store = flaky
    real_new_match = engine.new_match

    def new_match(rules, seed_rng, decks=()):
        if rules.players == 4 and rules.first_dealer == 3:  # hand 1 from this deck
            decks = [deck_for(rules, 3, HANDS)]
        return real_new_match(rules, seed_rng, decks)

    monkeypatch.setattr(engine, "new_match", new_match)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as channel:
        stub = service_pb2_grpc.TuteServiceStub(channel)
        c = Caller(stub)
        C, J, S = service_pb2.CreateTableRequest, service_pb2.JoinTableRequest, service_pb2
        get = service_pb2.GetTableRequest

        # requests and tokens
        await c.fails(stub.GetTable(get()), Code.INVALID_ARGUMENT, Reason.INVALID_ARGUMENT)

        # players
        player, other = [
            (await stub.CreatePlayer(S.CreatePlayerRequest(display_name=n))).player_token
            for n in ("a", "b")
        ]
        await c.fails(
            stub.GetPlayer(S.GetPlayerRequest(player_id="p0123")),
            Code.NOT_FOUND,
            Reason.PLAYER_NOT_FOUND,
        )
        await c.fails(
            stub.FindMatch(S.FindMatchRequest(mode="3p"), metadata=auth("forged")),
            Code.UNAUTHENTICATED,
            Reason.UNKNOWN_PLAYER,
        )
        now = 4_000_000_000  # a JWT valid until long after the test, or expired long before
        for token, reason in (
            (jwts.signed(jwts.claims(now, iat=None, exp=1000)), Reason.TOKEN_EXPIRED),
            (jwts.signed(jwts.claims(now, nbf=now)), Reason.TOKEN_NOT_YET_VALID),
            (jwts.signed(jwts.claims(now, iat=None, iss="https://x.example")), Reason.WRONG_ISSUER),
            (jwts.signed(jwts.claims(now, iat=None, aud="other")), Reason.WRONG_AUDIENCE),
            (jwts.signed(jwts.claims(now, iat=None), key="x" * 40), Reason.INVALID_SIGNATURE),
            (jwts.unsigned(jwts.claims(now, iat=None)), Reason.UNSUPPORTED_ALGORITHM),
            (jwts.signed(jwts.claims(now, iat=None, exp=None)), Reason.MALFORMED_TOKEN),
        ):
            await c.fails(
                stub.FindMatch(S.FindMatchRequest(mode="3p"), metadata=auth(token)),
                Code.UNAUTHENTICATED,
                reason,
            )

        # matchmaking
        queued = (
            await stub.FindMatch(S.FindMatchRequest(mode="3p"), metadata=auth(player))
        ).ticket_id
        await c.fails(
            stub.FindMatch(S.FindMatchRequest(mode="2p"), metadata=auth(player)),
            Code.FAILED_PRECONDITION,
            Reason.ALREADY_QUEUED,
        )
        # a player who left a ranked match, within its cooldown (the store's guest of a token)
        assert srv.matchmaker is not None
        players = srv.app.players
        leaver = await players.create_guest("Leaver", hash_token("a-leaver"))
        await players.record_ranked(
            "00cooldown000000", [], cooldowns={leaver.player_id: srv.app.clock() + 300}
        )
        await c.fails(
            stub.FindMatch(S.FindMatchRequest(mode="4p"), metadata=auth("a-leaver")),
            Code.FAILED_PRECONDITION,
            Reason.RANKED_COOLDOWN,
        )
        for ticket_id, token, code, reason in (
            ("0123456789abcdef", player, Code.NOT_FOUND, Reason.TICKET_NOT_FOUND),
            (queued, other, Code.PERMISSION_DENIED, Reason.NOT_YOUR_TICKET),
        ):
            ticket_call = stub.WatchTicket(
                S.WatchTicketRequest(ticket_id=ticket_id), metadata=auth(token)
            )
            await c.fails(ticket_call.read(), code, reason)
        await c.fails(
            stub.CreateTable(C(rules=rules_pb2.Rules(preset="mus"))),
            Code.INVALID_ARGUMENT,
            Reason.INVALID_OPTION,
        )
        await c.fails(
            stub.CreateTable(C(rules=_rules("parejas", target_points=0))),
            Code.INVALID_ARGUMENT,
            Reason.INVALID_OPTION,
        )
        raw = channel.unary_unary(
            "/tute.v1.TuteService/GetTable", request_serializer=None, response_deserializer=None
        )
        await c.fails(raw(b"\x0a\xff"), Code.INVALID_ARGUMENT, Reason.MALFORMED_REQUEST)
        await c.fails(
            stub.GetTable(get(table_id="0123456789abcdef")), Code.NOT_FOUND, Reason.TABLE_NOT_FOUND
        )
        await c.fails(
            stub.JoinTable(J(display_name="p", invite_code="ZZZZZZZZ")),
            Code.NOT_FOUND,
            Reason.INVITE_NOT_FOUND,
        )
        private = await stub.CreateTable(
            C(rules=_rules("tres"), visibility=table_pb2.VISIBILITY_PRIVATE)
        )
        await c.fails(
            stub.JoinTable(J(display_name="p", table_id=private.table_id)),
            Code.PERMISSION_DENIED,
            Reason.PRIVATE_TABLE,
        )

        # seats
        tres = await stub.CreateTable(C(rules=_rules("tres"), take_seat=True, display_name="a"))
        tid, mine = tres.table_id, auth(tres.seat_token)
        await c.fails(
            stub.GetTable(get(table_id=tid), metadata=(("authorization", "Basic x"),)),
            Code.UNAUTHENTICATED,
            Reason.MALFORMED_AUTHORIZATION,
        )
        await c.fails(
            stub.GetTable(get(table_id=tid), metadata=auth("forged")),
            Code.PERMISSION_DENIED,
            Reason.NOT_SEATED,
        )
        await c.fails(
            stub.LeaveTable(S.LeaveTableRequest(table_id=tid)),
            Code.UNAUTHENTICATED,
            Reason.TOKEN_REQUIRED,
        )
        await c.fails(
            stub.JoinTable(J(display_name="p", table_id=tid), metadata=mine),
            Code.FAILED_PRECONDITION,
            Reason.ALREADY_SEATED,
        )
        await c.fails(
            stub.JoinTable(J(display_name="p", table_id=tid, seat=0)),
            Code.FAILED_PRECONDITION,
            Reason.SEAT_TAKEN,
        )
        await c.fails(
            stub.SubmitAction(
                S.SubmitActionRequest(table_id=tid, action=_card("1C")), metadata=mine
            ),
            Code.FAILED_PRECONDITION,
            Reason.MATCH_NOT_STARTED,
        )
        await c.fails(
            stub.GetMatchRecord(S.GetMatchRecordRequest(table_id=tid)),
            Code.FAILED_PRECONDITION,
            Reason.MATCH_NOT_OVER,
        )
        # a seat token of another table is no reason to refuse a join
        other = await stub.CreateTable(C(rules=_rules("tres"), take_seat=True, display_name="o"))
        await stub.JoinTable(J(display_name="p", table_id=tid), metadata=auth(other.seat_token))
        await stub.JoinTable(J(display_name="p", table_id=tid))
        await c.fails(
            stub.JoinTable(J(display_name="p", table_id=tid)),
            Code.FAILED_PRECONDITION,
            Reason.MATCH_ALREADY_STARTED,
        )
        seated = stub.WatchTable(S.WatchTableRequest(table_id=tid), metadata=mine)
        assert (await seated.read()).HasField("snapshot")
        await stub.LeaveTable(S.LeaveTableRequest(table_id=tid), metadata=mine)  # forfeits
        with pytest.raises(grpc.aio.AioRpcError) as lost:
            for _ in range(1000):  # the forfeit, the match's end, then the seat is lost
                await asyncio.wait_for(seated.read(), 10)
        assert (lost.value.code(), registered_reason(lost.value)) == (
            Code.PERMISSION_DENIED,
            Reason.SEAT_LOST.value,
        )
        c.seen.add(Reason.SEAT_LOST.value)
        await c.fails(
            stub.AddBot(S.AddBotRequest(table_id=tid)), Code.UNAUTHENTICATED, Reason.TOKEN_REQUIRED
        )
        await c.fails(
            stub.AddBot(S.AddBotRequest(table_id=tid), metadata=auth(tres.owner_token)),
            Code.FAILED_PRECONDITION,
            Reason.MATCH_OVER,
        )

        # moves, on the rigged deal: seat 0 leads, seats 1, 2 and 3 follow
        created = await stub.CreateTable(
            C(rules=_rules("parejas", first_dealer=3), take_seat=True, display_name="p0")
        )
        pid, tokens = created.table_id, {0: created.seat_token}
        for _ in range(3):
            joined = await stub.JoinTable(J(table_id=pid, display_name="p"))
            tokens[joined.seat] = joined.seat_token

        def submit(seat: int, action: action_pb2.Action, **kw: Any) -> Awaitable[Any]:
            req = S.SubmitActionRequest(table_id=pid, action=action, **kw)
            return stub.SubmitAction(req, metadata=auth(tokens[seat]))

        failed = Code.FAILED_PRECONDITION
        await c.fails(submit(1, _card("2E")), failed, Reason.NOT_YOUR_TURN)
        await c.fails(submit(0, _card("2E")), failed, Reason.CARD_NOT_HELD)
        await c.fails(
            submit(0, action_pb2.Action(sing=card_pb2.SUIT_COPAS)), failed, Reason.CANTE_NOT_ALLOWED
        )
        await c.fails(
            submit(0, action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=12))),
            failed,
            Reason.TUTE_NOT_ALLOWED,
        )
        await c.fails(
            submit(0, action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump())),
            failed,
            Reason.EXCHANGE_NOT_ALLOWED,
        )
        await c.fails(
            submit(0, _card("4C"), expected_version=1), Code.ABORTED, Reason.STALE_VERSION
        )
        await submit(0, _card("4C"))
        await c.fails(submit(1, _card("2E")), failed, Reason.MUST_FOLLOW_SUIT)
        await c.fails(submit(1, _card("2C")), failed, Reason.MUST_BEAT)
        await submit(1, _card("12C"))
        await c.fails(submit(2, _card("5E")), failed, Reason.MUST_TRUMP)
        await submit(2, _card("5O"))
        await c.fails(submit(3, _card("4O")), failed, Reason.MUST_OVERTRUMP)

        # the store
        store.mode = "conflict"
        await c.fails(submit(3, _card("3O")), Code.ABORTED, Reason.CONTENTION)
        store.mode = "down"
        await c.fails(stub.GetTable(get(table_id=pid)), Code.UNAVAILABLE, Reason.STORE_UNAVAILABLE)
        store.mode = "bug"
        await c.fails(stub.GetTable(get(table_id=pid)), Code.INTERNAL, Reason.INTERNAL)
        store.mode = ""

        # a stream that falls behind: four events in one commit, for a queue of two
        monkeypatch.setattr(memory, "QUEUE_LIMIT", 2)
        slow = await stub.CreateTable(C(rules=_rules("tres")))
        for _ in range(2):
            await stub.JoinTable(J(display_name="p", table_id=slow.table_id))
        watch = stub.WatchTable(S.WatchTableRequest(table_id=slow.table_id))
        assert (await watch.read()).HasField("snapshot")
        await stub.JoinTable(J(display_name="p", table_id=slow.table_id))  # SeatJoined ..
        msg = watch.read()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            while True:
                assert (await msg).HasField("event")
                msg = watch.read()
        c.seen.add(registered_reason(caught.value))
        assert caught.value.code() == Code.UNAVAILABLE
        monkeypatch.setattr(memory, "QUEUE_LIMIT", 10_000)

    # server limits, and a server shutting down
    limited = await create_server(
        dataclasses.replace(
            FAST,
            max_tables=1,
            max_spectator_streams_per_table=1,
            max_bot_seats=1,
            invite_rate_per_s=0.001,
            invite_burst=1,
        )
    )
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{limited.port}") as channel:
            stub = service_pb2_grpc.TuteServiceStub(channel)
            lc = Caller(stub, c.seen)
            one = await stub.CreateTable(service_pb2.CreateTableRequest(rules=_rules("tres")))
            owner = auth(one.owner_token)
            await stub.AddBot(service_pb2.AddBotRequest(table_id=one.table_id), metadata=owner)
            await lc.fails(
                stub.AddBot(service_pb2.AddBotRequest(table_id=one.table_id), metadata=owner),
                Code.RESOURCE_EXHAUSTED,
                Reason.TOO_MANY_BOTS,
            )
            unknown = service_pb2.JoinTableRequest(display_name="p", invite_code="ZZZZZZZZ")
            await lc.fails(stub.JoinTable(unknown), Code.NOT_FOUND, Reason.INVITE_NOT_FOUND)
            await lc.fails(stub.JoinTable(unknown), Code.RESOURCE_EXHAUSTED, Reason.RATE_LIMITED)
            await lc.fails(
                stub.CreateTable(service_pb2.CreateTableRequest()),
                Code.RESOURCE_EXHAUSTED,
                Reason.TOO_MANY_TABLES,
            )
            watch = stub.WatchTable(service_pb2.WatchTableRequest(table_id=one.table_id))
            assert (await watch.read()).HasField("snapshot")
            await lc.stream_fails(
                service_pb2.WatchTableRequest(table_id=one.table_id),
                Code.RESOURCE_EXHAUSTED,
                Reason.TOO_MANY_STREAMS,
            )
            watch.cancel()
            limited.app.begin_shutdown()
            await lc.stream_fails(
                service_pb2.WatchTableRequest(table_id=one.table_id),
                Code.UNAVAILABLE,
                Reason.SHUTTING_DOWN,
            )
    finally:
        await limited.shutdown()

    assert "STREAM_BEHIND" in c.seen
    expected = {r.value for r in set(Reason) - ENGINE_INPUT - NOT_YET_EMITTED}
    assert c.seen == expected, f"not caused: {expected - c.seen}"


def test_the_frontend_guide_explains_every_reason_a_request_can_cause() -> None:
    """docs/frontend.md's error table has a row for each reason a request can cause (the
    engine's input codes aside), under its status code, and names no other reason."""
    doc = (ROOT / "docs" / "frontend.md").read_text()
    rows = re.findall(r"^\| ([A-Z_]+) \| (.*?) \|", doc, re.M)
    listed = {(code, r) for code, cell in rows for r in re.findall(r"`([A-Z][A-Z_]+)`", cell)}
    want = {(STATUS[r].name, r.value) for r in set(Reason) - ENGINE_INPUT}
    assert want <= listed, f"not in docs/frontend.md's error table: {sorted(want - listed)}"
    assert {r for _, r in listed} <= {r.value for r in Reason}, "a reason that is not registered"
