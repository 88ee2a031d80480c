"""Bad input: a Hypothesis-driven fuzz of every RPC with random and mutated requests.

The server holds tables in every state (waiting, playing, finished; public and private; humans
and bots). Each RPC gets random and mutated requests: real, mutated, random, huge and
byte-garbage ids, tokens, invite codes, request ids and display names; unknown enum numbers;
missing fields and unset oneofs; random actions; random ``authorization`` metadata (anything a
gRPC client can send: printable ASCII); random ``resume_after``; and raw request bodies that are
random or mutated bytes. Whatever happens, the answer is never INTERNAL or UNKNOWN, every
error carries a documented ErrorInfo reason of its status code, an INVALID_ARGUMENT names the
field (or says the body is malformed), and no error echoes a huge input. Afterwards the server
is SERVING, no stream is left open, and every table's stored state is valid: records decode,
the engine's cards are conserved, events are gap-free and parse.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import string
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.cards import BIT, cards_of
from engine.codec import decode_state, encode_state
from engine.game import pack_for
from service.server import Server
from service.tables.model import FINISHED, PLAYING, WAITING
from tests.support.wait import eventually
from tute.v1 import (
    action_pb2,
    card_pb2,
    event_pb2,
    rules_pb2,
    service_pb2,
    table_pb2,
)

from .helpers import (
    Stub,
    auth,
    bad_request_fields,
    error_info,
    registered_reason,
    table_with_humans,
)

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NEVER = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
MAX_ERROR_TEXT = 1000
"""No error message may be longer than this (it must not echo a huge input)."""

PRINTABLE = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
TEXT = st.characters(codec="utf-8")
U32 = st.integers(0, 2**32 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
U64 = st.integers(0, 2**64 - 1)
ENUM = st.one_of(st.integers(-3, 8), I32)
"""Open proto3 enums: known numbers, and unknown ones (negative included)."""


# ---------------------------------------------------------------------------------------------
# the world: tables in every state
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class World:
    server: Server
    stub: Stub
    channel: grpc.aio.Channel
    table_ids: list[str] = dataclasses.field(default_factory=list)
    tokens: list[str] = dataclasses.field(default_factory=list)
    invites: list[str] = dataclasses.field(default_factory=list)
    seats: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    """(table id, seat token) pairs that belong together."""
    requests: list[bytes] = dataclasses.field(default_factory=list)
    calls: int = 0
    codes: dict[str, int] = dataclasses.field(default_factory=dict)
    reasons: set[str] = dataclasses.field(default_factory=set)
    """Every ErrorInfo reason the fuzz received (each one registered: see judge)."""

    created: list[str] = dataclasses.field(default_factory=list)
    """Tables the fuzz itself created (checked at the end; not drawn from: the pools stay
    fixed while Hypothesis runs, or its replays would not draw the same)."""
    frozen: bool = False

    def learn(self, resp: Message) -> None:
        table_id = getattr(resp, "table_id", "")
        if self.frozen:
            if table_id and table_id not in self.table_ids and table_id not in self.created:
                self.created.append(table_id)
            return
        token = getattr(resp, "seat_token", "")
        invite = getattr(resp, "invite_code", "")
        owner = getattr(resp, "owner_token", "")
        if owner:
            self.tokens.append(owner)  # it opens no seat, but AddBot takes it
        if table_id and table_id not in self.table_ids:
            self.table_ids.append(table_id)
        if token:
            self.tokens.append(token)
            self.seats.append((table_id, token))
        if invite:
            self.invites.append(invite)


async def _play_some(stub: Stub, table_id: str, tokens: dict[int, str], moves: int) -> None:
    for _ in range(moves):
        for token in tokens.values():
            view = (
                await stub.GetTable(
                    service_pb2.GetTableRequest(table_id=table_id), metadata=auth(token)
                )
            ).view
            if view.status == table_pb2.TABLE_STATUS_FINISHED:
                return
            if view.legal_actions:
                await stub.SubmitAction(
                    service_pb2.SubmitActionRequest(
                        table_id=table_id, action=view.legal_actions[-1]
                    ),
                    metadata=auth(token),
                )
                break


@pytest.fixture
async def world(server: Server, stub: Stub, channel: grpc.aio.Channel) -> World:
    w = World(server, stub, channel)

    def rules(preset: str, **options: Any) -> rules_pb2.Rules:
        return rules_pb2.Rules(
            preset=preset, options=rules_pb2.RuleOptions(turn_time_s=0, **options)
        )

    # waiting: an empty public table, a public one with a player, a private one with a player
    empty = await stub.CreateTable(service_pb2.CreateTableRequest(rules=rules("tres")))
    w.learn(empty)
    for vis in (table_pb2.VISIBILITY_PUBLIC, table_pb2.VISIBILITY_PRIVATE):
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules("parejas"), visibility=vis, take_seat=True, display_name="w"
            )
        )
        w.learn(created)
    # playing: humans mid-match (2p and 4p), a human with bots (3p)
    for preset, moves in (("corriente-6", 9), ("parejas", 14)):
        seated = await table_with_humans(stub, preset, turn_time_s=0, target_points=500)
        await _play_some(stub, seated.table_id, seated.tokens, moves)
        w.table_ids.append(seated.table_id)
        w.tokens += seated.tokens.values()
        w.seats += [(seated.table_id, t) for t in seated.tokens.values()]
    with_bots = await stub.CreateTable(
        service_pb2.CreateTableRequest(rules=rules("tres"), take_seat=True, display_name="b")
    )
    w.learn(with_bots)
    for _ in range(2):
        await stub.AddBot(
            service_pb2.AddBotRequest(table_id=with_bots.table_id),
            metadata=auth(with_bots.seat_token),
        )
    # finished: by a forfeit, and played to the end
    gone = await table_with_humans(stub, "corriente-8", turn_time_s=0)
    await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=gone.table_id), metadata=auth(gone.tokens[1])
    )
    w.table_ids.append(gone.table_id)
    w.tokens += gone.tokens.values()
    w.seats += [(gone.table_id, t) for t in gone.tokens.values()]
    done = await table_with_humans(stub, "corriente-6", turn_time_s=0, target_points=1)
    await _play_some(stub, done.table_id, done.tokens, 1000)
    w.table_ids.append(done.table_id)
    w.tokens += done.tokens.values()
    w.seats += [(done.table_id, t) for t in done.tokens.values()]
    states = set()
    for tid in w.table_ids:
        states.add((await server.app.load(tid)).status)
    assert states == {WAITING, PLAYING, FINISHED}
    # valid requests to mutate byte by byte
    tid = w.table_ids[4]
    view = (await stub.GetTable(service_pb2.GetTableRequest(table_id=tid))).view
    w.requests = [
        service_pb2.GetTableRequest(table_id=tid).SerializeToString(),
        service_pb2.WatchTableRequest(
            table_id=tid, resume_after=view.last_event_sequence
        ).SerializeToString(),
        service_pb2.SubmitActionRequest(
            table_id=tid,
            action=action_pb2.Action(play_card=card_pb2.Card(suit=1, rank=12)),  # type: ignore[arg-type]
            expected_version=view.version,
            request_id="abc",
        ).SerializeToString(),
        service_pb2.CreateTableRequest(
            rules=rules("corriente-6", first_dealer=1), take_seat=True, display_name="m"
        ).SerializeToString(),
        service_pb2.JoinTableRequest(
            invite_code=w.invites[-1], seat=2, display_name="p"
        ).SerializeToString(),
        service_pb2.ListTablesRequest(preset="parejas", players=4, page_size=3).SerializeToString(),
    ]

    w.frozen = True
    return w


# ---------------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------------


def _mutate_text(text: str, data: st.DataObject) -> str:
    if not text:
        return data.draw(st.text(TEXT, max_size=3))
    i = data.draw(st.integers(0, len(text) - 1))
    how = data.draw(st.sampled_from(["flip", "cut", "insert", "case", "pad"]))
    if how == "flip":
        return text[:i] + data.draw(TEXT) + text[i + 1 :]
    if how == "cut":
        return text[:i]
    if how == "insert":
        return text[:i] + data.draw(st.text(TEXT, min_size=1, max_size=4)) + text[i:]
    if how == "case":
        return text.swapcase()
    return f" {text}\t"


def _huge(data: st.DataObject) -> str:
    return data.draw(st.sampled_from("a0-_é€\U0001f0a1")) * data.draw(st.integers(65, 300_000))


def any_text(data: st.DataObject, real: list[str], p_real: float = 0.4) -> str:
    """A real value (with probability ``p_real``), else a mutated one, random text, an id-like
    string, bytes, a huge string or the empty string."""
    if real and maybe(data, p_real):
        return data.draw(st.sampled_from(real))
    kind = data.draw(st.sampled_from(["mutated", "random", "idlike", "bytes", "huge", "empty"]))
    if kind == "mutated" and real:
        return _mutate_text(data.draw(st.sampled_from(real)), data)
    if kind == "idlike":
        return data.draw(
            st.text(string.ascii_letters + string.digits + "-_", min_size=1, max_size=70)
        )
    if kind == "bytes":
        return data.draw(st.binary(max_size=64)).decode("latin-1")
    if kind == "huge":
        return _huge(data)
    if kind == "empty":
        return ""
    return data.draw(st.text(TEXT, max_size=80))


def metadata(data: st.DataObject, w: World) -> tuple[tuple[str, str], ...] | None:
    """Authorization metadata a client can send: none, real tokens, garbage (printable ASCII:
    gRPC clients refuse to send anything else in a text header), huge values, duplicates."""
    kind = data.draw(
        st.sampled_from(
            ["none", "real", "bearer-garbage", "garbage", "scheme", "huge", "two", "mutated"]
        )
    )
    if kind == "none":
        return None
    if kind == "real":
        return auth(data.draw(st.sampled_from(w.tokens)))
    if kind == "mutated":
        token = data.draw(st.sampled_from(w.tokens))
        token = _mutate_text(token, data)
        token = "".join(c for c in token if " " <= c <= "~")
        return (("authorization", f"Bearer {token}"),)
    if kind == "bearer-garbage":
        return (("authorization", "Bearer " + data.draw(st.text(PRINTABLE, max_size=300))),)
    if kind == "garbage":
        return (("authorization", data.draw(st.text(PRINTABLE, max_size=300))),)
    if kind == "scheme":
        value = data.draw(
            st.sampled_from(
                [
                    "Bearer",
                    "Bearer ",
                    "bearer  x",
                    "BEARER y",
                    "Basic dXNlcjpwYXNz",
                    "Token abc",
                    " ",
                    "",
                ]
            )
        )
        return (("authorization", value),)
    if kind == "huge":
        return (("authorization", "Bearer " + "A" * data.draw(st.integers(200, 20_000))),)
    other = "Bearer " + data.draw(st.text(PRINTABLE, max_size=40))
    return (*auth(data.draw(st.sampled_from(w.tokens))), ("authorization", other))


def maybe(data: st.DataObject, p: float = 0.5) -> bool:
    """Whether to set an optional part of a request (left unset otherwise)."""
    return data.draw(st.integers(0, 99)) < p * 100


def random_rules(data: st.DataObject) -> rules_pb2.Rules | None:
    if data.draw(st.booleans()):
        return None
    out = rules_pb2.Rules(
        preset=data.draw(
            st.one_of(st.sampled_from([*engine.PRESETS, ""]), st.text(TEXT, max_size=30))
        )
    )
    small = st.one_of(st.integers(0, 10), U32)
    for fd in rules_pb2.RuleOptions.DESCRIPTOR.fields:
        if data.draw(st.integers(0, 3)) != 0:
            continue
        if fd.enum_type is not None:
            setattr(out.options, fd.name, data.draw(ENUM))
        elif fd.type == fd.TYPE_BOOL:
            setattr(out.options, fd.name, data.draw(st.booleans()))
        else:
            setattr(out.options, fd.name, data.draw(small))
    if data.draw(st.booleans()):
        out.options.turn_time_s = data.draw(st.sampled_from([0, 0, 0, 1, 2**32 - 1]))
    return out


def random_action(data: st.DataObject) -> action_pb2.Action:
    kind = data.draw(st.sampled_from(["card", "card-ok", "sing", "tute", "exchange", "none"]))
    if kind == "card":
        return action_pb2.Action(
            play_card=card_pb2.Card(
                suit=data.draw(ENUM),  # type: ignore[arg-type]
                rank=data.draw(U32),
            )
        )
    if kind == "card-ok":
        return action_pb2.Action(
            play_card=card_pb2.Card(
                suit=data.draw(st.integers(1, 4)),  # type: ignore[arg-type]
                rank=data.draw(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 10, 11, 12])),
            )
        )
    if kind == "sing":
        return action_pb2.Action(sing=data.draw(ENUM))  # type: ignore[arg-type]
    if kind == "tute":
        return action_pb2.Action(
            declare_tute=action_pb2.DeclareTute(
                rank=data.draw(st.one_of(st.sampled_from([11, 12]), U32))
            )
        )
    if kind == "exchange":
        return action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump())
    return action_pb2.Action()


# ---------------------------------------------------------------------------------------------
# calling and judging
# ---------------------------------------------------------------------------------------------


def judge(w: World, err: grpc.aio.AioRpcError | None) -> None:
    w.calls += 1
    code = grpc.StatusCode.OK if err is None else err.code()
    w.codes[code.name] = w.codes.get(code.name, 0) + 1
    if err is None:
        return
    details = err.details() or ""
    assert code not in NEVER, f"{code.name}: {details}"
    w.reasons.add(registered_reason(err, library=True))  # huge metadata: the library's own
    assert len(details) < MAX_ERROR_TEXT, f"a {len(details)}-character error message"
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        info = error_info(err)
        fields = bad_request_fields(err)
        malformed = info is not None and info.reason == "MALFORMED_REQUEST"
        assert malformed or (fields and all(fields)), f"INVALID_ARGUMENT naming no field: {details}"


async def unary(w: World, method: str, request: Message, md: Any) -> Message | None:
    try:
        resp = await getattr(w.stub, method)(request, metadata=md, timeout=10)
    except grpc.aio.AioRpcError as err:
        judge(w, err)
        return None
    judge(w, None)
    w.learn(resp)
    return resp


async def watch(w: World, request: service_pb2.WatchTableRequest, md: Any) -> None:
    call = w.stub.WatchTable(request, metadata=md)
    try:
        msg = await asyncio.wait_for(call.read(), 0.5)
        if msg is not grpc.aio.EOF:  # type: ignore[attr-defined]
            assert msg.HasField("snapshot") or msg.event.sequence == request.resume_after + 1
        judge(w, None)
    except TimeoutError:
        judge(w, None)  # resumed at the last event: nothing to send yet
    except grpc.aio.AioRpcError as err:
        judge(w, err)
    finally:
        call.cancel()


# ---------------------------------------------------------------------------------------------
# the fuzz, one RPC per test
# ---------------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
async def test_fuzz_create_table(world: World, data: st.DataObject) -> None:
    req = service_pb2.CreateTableRequest()
    rules = random_rules(data)
    if rules is not None:
        req.rules.CopyFrom(rules)
    if maybe(data, 0.5):
        req.visibility = data.draw(ENUM)  # type: ignore[assignment]
    if maybe(data, 0.5):
        req.take_seat = data.draw(st.booleans())
    if maybe(data, 0.3):
        req.seat = data.draw(st.one_of(st.integers(0, 5), U32))
    if maybe(data, 0.6):
        req.display_name = any_text(data, ["ana"])
    await unary(world, "CreateTable", req, metadata(data, world))


@FUZZ
@given(data=st.data())
async def test_fuzz_list_tables(world: World, data: st.DataObject) -> None:
    req = service_pb2.ListTablesRequest()
    if maybe(data, 0.5):
        req.preset = any_text(data, list(engine.PRESETS))
    if maybe(data, 0.5):
        req.players = data.draw(st.one_of(st.integers(0, 5), U32))
    if maybe(data, 0.5):
        req.page_size = data.draw(st.one_of(st.integers(-2, 300), I32))
    if maybe(data, 0.5):
        req.page_token = any_text(data, world.table_ids)
    await unary(world, "ListTables", req, metadata(data, world))


@FUZZ
@given(data=st.data())
async def test_fuzz_join_table(world: World, data: st.DataObject) -> None:
    req = service_pb2.JoinTableRequest()
    target = data.draw(st.sampled_from(["table_id", "invite_code", "none"]))
    if target == "table_id":
        req.table_id = any_text(data, world.table_ids)
    elif target == "invite_code":
        req.invite_code = any_text(data, world.invites)
    if maybe(data, 0.4):
        req.seat = data.draw(st.one_of(st.integers(0, 5), U32))
    if maybe(data, 0.7):
        req.display_name = any_text(data, ["bob"])
    await unary(world, "JoinTable", req, metadata(data, world))


@FUZZ
@given(data=st.data())
async def test_fuzz_add_bot(world: World, data: st.DataObject) -> None:
    req = service_pb2.AddBotRequest()
    if maybe(data, 0.9):
        req.table_id = any_text(data, world.table_ids)
    if maybe(data, 0.4):
        req.seat = data.draw(st.one_of(st.integers(0, 5), U32))
    if maybe(data, 0.5):
        req.level = any_text(data, ["random", "RANDOM"])
    await unary(world, "AddBot", req, metadata(data, world))


@settings(FUZZ, max_examples=60)
@given(data=st.data())
async def test_fuzz_leave_table(world: World, data: st.DataObject) -> None:
    req = service_pb2.LeaveTableRequest()
    md = metadata(data, world)
    if maybe(data, 0.3):
        req.table_id, token = data.draw(st.sampled_from(world.seats))
        md = auth(token)
    elif maybe(data, 0.9):
        req.table_id = any_text(data, world.table_ids)
    await unary(world, "LeaveTable", req, md)


@FUZZ
@given(data=st.data())
async def test_fuzz_get_table(world: World, data: st.DataObject) -> None:
    req = service_pb2.GetTableRequest()
    if maybe(data, 0.9):
        req.table_id = any_text(data, world.table_ids)
    await unary(world, "GetTable", req, metadata(data, world))


@settings(FUZZ, max_examples=200)
@given(data=st.data())
async def test_fuzz_submit_action(world: World, data: st.DataObject) -> None:
    req = service_pb2.SubmitActionRequest()
    md = metadata(data, world)
    if maybe(data, 0.5):  # a seat at its own table: the request reaches the rules
        req.table_id, token = data.draw(st.sampled_from(world.seats))
        md = auth(token)
    elif maybe(data, 0.9):
        req.table_id = any_text(data, world.table_ids)
    version = None
    if md and maybe(data, 0.4):  # sometimes a legal move: matches move on under the fuzz
        pick = data.draw(st.integers(0, 63))  # drawn whatever the table's state
        current = data.draw(st.booleans())
        legal = []
        with contextlib.suppress(grpc.aio.AioRpcError):
            view = (
                await world.stub.GetTable(
                    service_pb2.GetTableRequest(table_id=req.table_id), metadata=md
                )
            ).view
            legal = list(view.legal_actions)
            version = view.version if current else None
        if legal:
            req.action.CopyFrom(legal[pick % len(legal)])
        else:
            req.action.exchange_trump.SetInParent()
    elif maybe(data, 0.9):
        req.action.CopyFrom(random_action(data))
    if maybe(data, 0.4):
        req.expected_version = data.draw(st.one_of(st.integers(-1, 200), I64))
    if version is not None:
        req.expected_version = version
    if maybe(data, 0.4):
        req.request_id = any_text(data, ["r1"])
    await unary(world, "SubmitAction", req, md)


@FUZZ
@given(data=st.data())
async def test_fuzz_watch_table(world: World, data: st.DataObject) -> None:
    req = service_pb2.WatchTableRequest()
    if maybe(data, 0.9):
        req.table_id = any_text(data, world.table_ids)
    if maybe(data, 0.5):
        req.resume_after = data.draw(st.one_of(st.integers(0, 300), U64))
    await watch(world, req, metadata(data, world))


RAW_METHODS = [
    ("GetTable", False),
    ("WatchTable", True),
    ("SubmitAction", False),
    ("CreateTable", False),
    ("JoinTable", False),
    ("ListTables", False),
    ("AddBot", False),
    ("LeaveTable", False),
]


@settings(FUZZ, max_examples=200)
@given(data=st.data())
async def test_fuzz_raw_request_bodies(world: World, data: st.DataObject) -> None:
    """Bodies that are random bytes, or valid requests with bytes flipped, cut or inserted."""
    body: bytes | bytearray
    if data.draw(st.booleans()):
        body = data.draw(st.binary(max_size=200))
    else:
        body = bytearray(data.draw(st.sampled_from(world.requests)))
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, max(0, len(body) - 1)))
            how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
            if how == "flip" and body:
                body[i] = data.draw(st.integers(0, 255))
            elif how == "cut":
                del body[i:]
            else:
                body[i:i] = data.draw(st.binary(min_size=1, max_size=8))
        body = bytes(body)
    method, streaming = data.draw(st.sampled_from(RAW_METHODS))
    channel = world.channel
    path = f"/tute.v1.TuteService/{method}"
    md = metadata(data, world)
    if streaming:
        call = channel.unary_stream(path, request_serializer=None, response_deserializer=None)(
            body, metadata=md
        )
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(call.read(), 0.5)
            judge(world, None)
        except grpc.aio.AioRpcError as err:
            judge(world, err)
        finally:
            call.cancel()
    else:
        try:
            await channel.unary_unary(path, request_serializer=None, response_deserializer=None)(
                body, metadata=md, timeout=10
            )
            judge(world, None)
        except grpc.aio.AioRpcError as err:
            judge(world, err)


# ---------------------------------------------------------------------------------------------
# afterwards: healthy and valid
# ---------------------------------------------------------------------------------------------


def check_state(st_: engine.State) -> None:
    """Engine invariants of a stored state: every card of the pack is in exactly one place."""
    rules = st_.rules
    n = rules.players
    pack = 0
    for c in pack_for(rules):
        pack |= BIT[c]
    places: list[int] = list(st_.hands)
    stock = 0
    for c in st_.stock:
        stock |= BIT[c]
    places.append(stock)
    played = 0
    for _, cards, _ in st_.history:
        for c in cards:
            played |= BIT[c]
    for c in st_.trick:
        played |= BIT[c]
    places.append(played)
    total = sum(p.bit_count() for p in places)
    union = 0
    for p in places:
        union |= p
    assert len(st_.stock) == len(set(st_.stock))
    assert total == len(pack_for(rules)) and union == pack, "cards are not conserved"
    held = 0
    for h in st_.hands:
        held |= h
    assert st_.public & ~held == 0, "a public card nobody holds"
    assert len(st_.trick) < n
    assert 0 <= st_.turn < n and 0 <= st_.dealer < n
    if not st_.over:
        # every seat holds the same number of cards, counting the one it put in the trick
        in_trick = {(st_.leader + i) % n for i in range(len(st_.trick))}
        sizes = {h.bit_count() + (s in in_trick) for s, h in enumerate(st_.hands)}
        assert len(sizes) == 1, f"hand sizes {[h.bit_count() for h in st_.hands]}"
        assert st_.turn == (st_.leader + len(st_.trick)) % n
    if n == 2:
        assert len(st_.stock) % 2 == 0
    assert decode_state(encode_state(st_)) == st_
    assert all(0 <= c < 40 for c in cards_of(union))


async def check_table(server: Server, stub: Stub, table_id: str) -> None:
    rec = await server.app.load(table_id)
    assert rec.table_id == table_id
    assert len(rec.seats) == rec.rules.players
    events = await server.app.store.events_after(table_id, 0)
    assert events is not None
    assert [e.seq for e in events] == list(range(1, rec.last_seq + 1)), "events have gaps"
    version = 0
    for e in events:
        for data in (e.public, *e.private.values()):
            ev = event_pb2.Event.FromString(data)
            assert ev.sequence == e.seq and ev.WhichOneof("kind")
        assert version <= ev.table_version <= rec.version
        version = ev.table_version
    if rec.status == WAITING:
        assert rec.state is None and rec.free_seats()
    else:
        assert rec.state is not None and not rec.free_seats()
        assert (rec.status == FINISHED) == rec.state.over
        check_state(rec.state)
    view = (await stub.GetTable(service_pb2.GetTableRequest(table_id=table_id))).view
    assert view.version == rec.version and view.last_event_sequence == rec.last_seq


@pytest.fixture(autouse=True)
async def healthy_and_valid_afterwards(
    world: World, server: Server, channel: grpc.aio.Channel
) -> AsyncIterator[None]:
    yield
    assert world.calls > 50, "the fuzz ran"
    assert len(world.codes) >= 2, f"one-sided fuzz: {world.codes}"
    health = health_pb2_grpc.HealthStub(channel)
    check = await health.Check(health_pb2.HealthCheckRequest(service=""))
    assert check.status == health_pb2.HealthCheckResponse.SERVING
    await eventually(
        lambda: server.metrics.registry.get_sample_value("tute_watch_streams") == 0,
        what="every WatchTable stream closed",
    )
    for table_id in world.table_ids + world.created:
        await check_table(server, world.stub, table_id)
    # the server still plays: a fresh match with bots runs to its end
    created = await world.stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(
                preset="corriente-6", options=rules_pb2.RuleOptions(target_points=1)
            ),
        )
    )
    for _ in range(2):
        await world.stub.AddBot(
            service_pb2.AddBotRequest(table_id=created.table_id), metadata=auth(created.owner_token)
        )

    async def finished() -> bool:
        return (await server.app.load(created.table_id)).status == FINISHED

    await eventually(finished, timeout=15, what="the bots' match finishing")
