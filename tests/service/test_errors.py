"""Every RPC's error paths: exact status codes, ErrorInfo reasons and BadRequest fields, and
each rejected request leaves the table as it was (version and every view unchanged)."""

from __future__ import annotations

import contextlib
import dataclasses
import random
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from service.server import Server, create_server
from tests.support.wait import eventually
from tute.v1 import action_pb2, card_pb2, rules_pb2, service_pb2, service_pb2_grpc, table_pb2

from .conftest import FAST
from .helpers import (
    FINISHED,
    auth,
    bad_request_fields,
    error_info,
    registered_reason,
    table_with_humans,
    view_of,
)
from .matchplay import Watcher, card

Code = grpc.StatusCode
PLAY = action_pb2.Action


async def expect(
    call,
    code: grpc.StatusCode,
    *,
    reason: str | None = None,
    field: str | None = None,
) -> grpc.aio.AioRpcError:
    """Await a call that must fail with ``code`` (and the ErrorInfo reason / BadRequest field);
    every failure carries a registered reason of its code."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    err = caught.value
    assert err.code() == code, (err.code(), err.details())
    registered_reason(err)
    info = error_info(err)
    if reason is not None:
        assert info is not None, f"no ErrorInfo in {err.details()!r}"
        assert (info.domain, info.reason) == ("tute.v1", reason), info
    if field is not None:
        assert bad_request_fields(err) == [field], err.details()
    return err


async def expect_stream(call, code: grpc.StatusCode, **kw: str) -> grpc.aio.AioRpcError:
    """The first read of a WatchTable stream fails with ``code``."""
    return await expect(call.read(), code, **kw)


@contextlib.asynccontextmanager
async def unchanged(stub, table_id: str, tokens: dict[int, str]) -> AsyncIterator[None]:
    """Every view of the table (each seat's and a spectator's) is the same after the block."""

    async def views() -> list[object]:
        out: list[object] = [await view_of(stub, table_id, None)]
        for token in tokens.values():
            out.append(await view_of(stub, table_id, token))
        return out

    before = await views()
    yield
    after = await views()
    assert after[0].version == before[0].version  # type: ignore[attr-defined]
    assert after == before


def join(**fields: Any) -> service_pb2.JoinTableRequest:
    """A JoinTableRequest with a display name (unless one is given)."""
    fields.setdefault("display_name", "p")
    return service_pb2.JoinTableRequest(**fields)


async def new_table(
    stub,
    preset: str = "parejas",
    *,
    private: bool = False,
    take_seat: bool = True,
) -> service_pb2.CreateTableResponse:
    return await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset=preset),
            visibility=table_pb2.VISIBILITY_PRIVATE if private else table_pb2.VISIBILITY_PUBLIC,
            take_seat=take_seat,
            display_name="creator",
        )
    )


async def table_counts(server: Server) -> dict[str, int]:
    return await server.store.count_tables()


# ---------------------------------------------------------------------------------------------
# CreateTable
# ---------------------------------------------------------------------------------------------

BAD_CREATES = [
    pytest.param({"rules": rules_pb2.Rules(preset="mus")}, "rules.preset", id="unknown-preset"),
    pytest.param(
        {"rules": rules_pb2.Rules(options=rules_pb2.RuleOptions(players=5))},
        "rules.options.players",
        id="players-5",
    ),
    pytest.param(
        {"rules": rules_pb2.Rules(preset="parejas", options=rules_pb2.RuleOptions(scoring=99))},  # type: ignore[arg-type]
        "rules.options.scoring",
        id="unknown-enum-value",
    ),
    pytest.param(
        {"rules": rules_pb2.Rules(options=rules_pb2.RuleOptions(players=2, hand_size_2p=7))},
        "rules.options.hand_size_2p",
        id="hand-size-7",
    ),
    pytest.param(
        {"rules": rules_pb2.Rules(options=rules_pb2.RuleOptions(first_dealer=4))},
        "rules.options.first_dealer",
        id="first-dealer-out-of-range",
    ),
    pytest.param(
        {"rules": rules_pb2.Rules(options=rules_pb2.RuleOptions(target_points=0))},
        "rules.options.target_points",
        id="target-points-0",
    ),
    pytest.param(
        {
            "rules": rules_pb2.Rules(
                options=rules_pb2.RuleOptions(target_points=4_000_000_000, tute_enabled=False)
            )
        },
        "rules.options.target_points",
        id="target-points-endless",
    ),
    pytest.param(
        {
            "rules": rules_pb2.Rules(
                preset="tres", options=rules_pb2.RuleOptions(target_match_points=16)
            )
        },
        "rules.options.target_match_points",
        id="target-match-points-16",
    ),
    pytest.param(
        {"rules": rules_pb2.Rules(options=rules_pb2.RuleOptions(games_to_win=16))},
        "rules.options.games_to_win",
        id="games-to-win-16",
    ),
    pytest.param(
        {"rules": rules_pb2.Rules(options=rules_pb2.RuleOptions(tute_unit_value=1000))},
        "rules.options.tute_unit_value",
        id="tute-unit-value-1000",
    ),
    pytest.param(
        {"rules": rules_pb2.Rules(options=rules_pb2.RuleOptions(turn_time_s=3601))},
        "rules.options.turn_time_s",
        id="turn-time-over-an-hour",
    ),
    pytest.param({"take_seat": True, "seat": 4}, "seat", id="seat-out-of-range"),
    pytest.param(
        {"rules": rules_pb2.Rules(preset="tres"), "take_seat": True, "seat": 3},
        "seat",
        id="seat-out-of-range-3p",
    ),
    pytest.param({"take_seat": False, "seat": 1}, "seat", id="seat-without-take-seat"),
    pytest.param(
        {"take_seat": True, "display_name": "x" * 33}, "display_name", id="display-name-too-long"
    ),
    pytest.param(
        {"take_seat": True, "display_name": "ana\x00"},
        "display_name",
        id="display-name-unprintable",
    ),
    pytest.param({"visibility": 99}, "visibility", id="visibility-unknown"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_CREATES)
async def test_create_table_rejects_malformed_requests(
    server, stub, fields: dict[str, Any], field: str
) -> None:
    counts = await table_counts(server)
    await expect(
        stub.CreateTable(service_pb2.CreateTableRequest(**fields)),
        Code.INVALID_ARGUMENT,
        field=field,
    )
    assert await table_counts(server) == counts
    assert not (await stub.ListTables(service_pb2.ListTablesRequest())).tables


BLANK_NAMES = [
    pytest.param("", id="empty"),
    pytest.param("   ", id="spaces"),
    pytest.param("\u00a0", id="nbsp"),
    pytest.param("\u3000\u3000", id="ideographic-space"),
    pytest.param("\u0301", id="lone-combining-mark"),
    pytest.param(" \u0301\u0308 ", id="combining-marks-only"),
    pytest.param("\u200b\u200d\ufeff", id="format-characters-only"),
    pytest.param("\t\u2028\u00a0\u200b", id="mixed-invisible"),
]


@pytest.mark.parametrize("name", BLANK_NAMES)
async def test_a_blank_display_name_is_refused(server, stub, name: str) -> None:
    """The contract: 1..32 characters after trimming, at least one visible; an omitted name
    is the empty string, refused like the others."""
    counts = await table_counts(server)
    await expect(
        stub.CreateTable(service_pb2.CreateTableRequest(take_seat=True, display_name=name)),
        Code.INVALID_ARGUMENT,
        field="display_name",
    )
    assert await table_counts(server) == counts
    created = await new_table(stub)
    async with unchanged(stub, created.table_id, {0: created.seat_token}):
        await expect(
            stub.JoinTable(
                service_pb2.JoinTableRequest(table_id=created.table_id, display_name=name)
            ),
            Code.INVALID_ARGUMENT,
            field="display_name",
        )
        await expect(
            stub.JoinTable(
                service_pb2.JoinTableRequest(table_id="0123456789abcdef", display_name=name)
            ),
            Code.INVALID_ARGUMENT,
            field="display_name",
        )


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("\u00a0Ana\u3000", "Ana"),
        ("\u200b\ufeffAna\u200d", "Ana"),
        ("  Ana \u00a0\u3000 Mar\u00eda ", "Ana Mar\u00eda"),
        ("Jose\u0301", "Jos\u00e9"),  # NFC
        ("\u0301x", "\u0301x"),  # a visible character is enough
        ("\u00a0" * 40 + "y" * 32 + "\u3000" * 40, "y" * 32),  # the limit counts after trimming
    ],
)
async def test_display_names_are_trimmed_the_unicode_way(stub, given: str, shown: str) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="tres"), take_seat=True, display_name=given
        )
    )
    assert created.table.seats[0].display_name == shown
    joined = await stub.JoinTable(
        service_pb2.JoinTableRequest(table_id=created.table_id, display_name=given)
    )
    assert joined.view.seats[joined.seat].display_name == shown


async def test_create_table_accepts_the_limits(stub) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="tres"), take_seat=True, seat=2, display_name="y" * 32
        )
    )
    biggest = rules_pb2.RuleOptions(
        target_points=1000,
        games_to_win=15,
        target_match_points=15,
        tute_unit_value=15,
        turn_time_s=3600,
    )
    big = await stub.CreateTable(
        service_pb2.CreateTableRequest(rules=rules_pb2.Rules(options=biggest))
    )
    for fd, value in biggest.ListFields():  # the upper bounds are allowed
        assert getattr(big.table.rules.options, fd.name) == value, fd.name
    assert created.seat == 2 and created.seat_token
    assert created.table.seats[2].display_name == "y" * 32
    assert created.table.rules.options.players == 3
    private = await new_table(stub, private=True, take_seat=False)
    assert private.invite_code and not private.seat_token and not private.HasField("seat")


# ---------------------------------------------------------------------------------------------
# ListTables
# ---------------------------------------------------------------------------------------------

BAD_LISTS = [
    pytest.param({"page_size": -1}, "page_size", id="negative-page-size"),
    pytest.param({"players": 7}, "players", id="players-7"),
    pytest.param({"players": 1}, "players", id="players-1"),
    pytest.param({"preset": "mus"}, "preset", id="unknown-preset"),
    pytest.param({"page_token": "not a token!"}, "page_token", id="bad-page-token"),
    pytest.param({"page_token": "x" * 300}, "page_token", id="huge-page-token"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_LISTS)
async def test_list_tables_rejects_malformed_requests(
    stub, fields: dict[str, Any], field: str
) -> None:
    await new_table(stub)
    await expect(
        stub.ListTables(service_pb2.ListTablesRequest(**fields)),
        Code.INVALID_ARGUMENT,
        field=field,
    )


def flat(pages: list[list[str]]) -> list[str]:
    return [table_id for page in pages for table_id in page]


async def list_all(stub, page_size: int, **filters: Any) -> list[list[str]]:
    """Every page of the lobby, as lists of table ids."""
    pages: list[list[str]] = []
    token = ""
    while True:
        resp = await stub.ListTables(
            service_pb2.ListTablesRequest(page_size=page_size, page_token=token, **filters)
        )
        pages.append([t.table_id for t in resp.tables])
        assert len(pages) < 50
        if not resp.next_page_token:
            return pages
        token = resp.next_page_token


async def test_list_tables_paginates_with_filters(stub) -> None:
    made: dict[str, list[str]] = {"corriente-6": [], "parejas": [], "tres": []}
    for i in range(12):
        preset = ("corriente-6", "parejas", "tres", "corriente-6")[i % 4]
        made[preset].append((await new_table(stub, preset)).table_id)
    await new_table(stub, "parejas", private=True)  # never listed
    newest_first = {p: ids[::-1] for p, ids in made.items()}

    pages = await list_all(stub, 2, preset="corriente-6")
    assert [len(p) for p in pages] == [2, 2, 2]
    assert flat(pages) == newest_first["corriente-6"]

    pages = await list_all(stub, 2, players=4)
    assert [len(p) for p in pages] == [2, 1]
    assert flat(pages) == newest_first["parejas"]

    pages = await list_all(stub, 1, players=3, preset="tres")
    assert flat(pages) == newest_first["tres"]

    everything = flat(await list_all(stub, 5))
    assert len(everything) == len(set(everything)) == 12
    assert set(everything) == {t for ids in made.values() for t in ids}

    # Tables of another preset with the same player count do not match the preset filter.
    assert not (await stub.ListTables(service_pb2.ListTablesRequest(preset="corriente-8"))).tables
    assert not (
        await stub.ListTables(service_pb2.ListTablesRequest(preset="tres", players=4))
    ).tables

    # The lobby shows the free seats; a full table leaves it.
    listed = (await stub.ListTables(service_pb2.ListTablesRequest(preset="tres"))).tables
    assert all(t.free_seats == 2 and t.status == table_pb2.TABLE_STATUS_WAITING for t in listed)
    full = made["tres"][0]
    for _ in range(2):
        await stub.JoinTable(join(table_id=full))
    ids = flat(await list_all(stub, 50, preset="tres"))
    assert full not in ids and len(ids) == 2


async def test_list_tables_page_token_survives_its_table_leaving_the_lobby(stub) -> None:
    """A page token keeps its place even when the last table of the page fills up."""
    ids = [(await new_table(stub, "corriente-6")).table_id for _ in range(5)]
    first = await stub.ListTables(service_pb2.ListTablesRequest(page_size=2))
    assert [t.table_id for t in first.tables] == ids[::-1][:2]
    await stub.JoinTable(join(table_id=first.tables[-1].table_id))
    rest = [
        t.table_id
        for t in (
            await stub.ListTables(
                service_pb2.ListTablesRequest(page_size=10, page_token=first.next_page_token)
            )
        ).tables
    ]
    assert rest == ids[::-1][2:]


async def test_list_tables_rejects_an_unknown_page_token(stub) -> None:
    await new_table(stub)
    await expect(
        stub.ListTables(service_pb2.ListTablesRequest(page_token="0123456789abcdef")),
        Code.INVALID_ARGUMENT,
        field="page_token",
    )


async def test_list_tables_default_page_size(stub) -> None:
    ids = [(await new_table(stub, "tres")).table_id for _ in range(3)]
    resp = await stub.ListTables(service_pb2.ListTablesRequest())
    assert [t.table_id for t in resp.tables] == ids[::-1] and not resp.next_page_token


# ---------------------------------------------------------------------------------------------
# JoinTable and AddBot
# ---------------------------------------------------------------------------------------------


async def test_join_table_errors(stub) -> None:
    created = await new_table(stub)
    tid = created.table_id
    tokens = {0: created.seat_token}
    async with unchanged(stub, tid, tokens):
        await expect(
            stub.JoinTable(service_pb2.JoinTableRequest(display_name="x")),
            Code.INVALID_ARGUMENT,
            field="table_id",
        )
        await expect(
            stub.JoinTable(join(table_id="0123456789abcdef")),
            Code.NOT_FOUND,
            reason="TABLE_NOT_FOUND",
        )
        await expect(
            stub.JoinTable(join(table_id="no such id!")), Code.INVALID_ARGUMENT, field="table_id"
        )
        await expect(
            stub.JoinTable(join(invite_code="ZZZZZZZZ")), Code.NOT_FOUND, reason="INVITE_NOT_FOUND"
        )
        await expect(
            stub.JoinTable(join(table_id=tid, seat=0)),
            Code.FAILED_PRECONDITION,
            reason="SEAT_TAKEN",
        )
        await expect(
            stub.JoinTable(join(table_id=tid, seat=4)), Code.INVALID_ARGUMENT, field="seat"
        )
        await expect(
            stub.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="n" * 40)),
            Code.INVALID_ARGUMENT,
            field="display_name",
        )
        await expect(
            stub.AddBot(service_pb2.AddBotRequest(table_id=tid, level="grandmaster")),
            Code.INVALID_ARGUMENT,
            field="level",
        )
        await expect(
            stub.AddBot(
                service_pb2.AddBotRequest(table_id=tid, seat=0), metadata=auth(created.owner_token)
            ),
            Code.FAILED_PRECONDITION,
            reason="SEAT_TAKEN",
        )
        await expect(
            stub.AddBot(service_pb2.AddBotRequest(table_id=tid, seat=9), metadata=auth(tokens[0])),
            Code.INVALID_ARGUMENT,
            field="seat",
        )
        await expect(
            stub.AddBot(service_pb2.AddBotRequest(table_id="0123456789abcdef")),
            Code.NOT_FOUND,
            reason="TABLE_NOT_FOUND",
        )
        await expect(
            stub.AddBot(service_pb2.AddBotRequest()), Code.INVALID_ARGUMENT, field="table_id"
        )


async def test_private_tables_are_joined_by_invite_code_only(stub) -> None:
    created = await new_table(stub, private=True)
    tid = created.table_id
    async with unchanged(stub, tid, {0: created.seat_token}):
        await expect(
            stub.JoinTable(join(table_id=tid)), Code.PERMISSION_DENIED, reason="PRIVATE_TABLE"
        )
    joined = await stub.JoinTable(join(invite_code=created.invite_code.lower(), seat=2))
    assert (joined.table_id, joined.seat) == (tid, 2)
    assert joined.view.invite_code == created.invite_code
    spectator = await view_of(stub, tid, None)
    assert spectator.invite_code == "" and not spectator.HasField("my_seat")


async def test_joining_a_full_or_finished_table_fails(stub) -> None:
    seated = await table_with_humans(stub, "corriente-8")  # full: the match has started
    tid = seated.table_id
    async with unchanged(stub, tid, seated.tokens):
        for req in (join(table_id=tid), join(table_id=tid, seat=1)):
            await expect(
                stub.JoinTable(req), Code.FAILED_PRECONDITION, reason="MATCH_ALREADY_STARTED"
            )
        await expect(
            stub.AddBot(service_pb2.AddBotRequest(table_id=tid), metadata=auth(seated.tokens[0])),
            Code.FAILED_PRECONDITION,
            reason="MATCH_ALREADY_STARTED",
        )
    await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(seated.tokens[1])
    )
    assert (await view_of(stub, tid, None)).status == FINISHED
    async with unchanged(stub, tid, {0: seated.tokens[0]}):  # seat 1's token is revoked
        await expect(
            stub.JoinTable(join(table_id=tid)), Code.FAILED_PRECONDITION, reason="MATCH_OVER"
        )
        await expect(
            stub.AddBot(service_pb2.AddBotRequest(table_id=tid), metadata=auth(seated.tokens[0])),
            Code.FAILED_PRECONDITION,
            reason="MATCH_OVER",
        )


# ---------------------------------------------------------------------------------------------
# LeaveTable
# ---------------------------------------------------------------------------------------------


async def test_leave_table_needs_the_seat_token(stub) -> None:
    created = await new_table(stub)
    other = await new_table(stub)
    tid = created.table_id
    req = service_pb2.LeaveTableRequest(table_id=tid)
    async with unchanged(stub, tid, {0: created.seat_token}):
        await expect(stub.LeaveTable(req), Code.UNAUTHENTICATED)
        await expect(
            stub.LeaveTable(req, metadata=auth(other.seat_token)),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )
        await expect(
            stub.LeaveTable(req, metadata=(("authorization", "Basic abc"),)), Code.UNAUTHENTICATED
        )
        await expect(
            stub.LeaveTable(
                service_pb2.LeaveTableRequest(table_id="0123456789abcdef"),
                metadata=auth(created.seat_token),
            ),
            Code.NOT_FOUND,
            reason="TABLE_NOT_FOUND",
        )


async def test_leaving_before_the_start_frees_the_seat(stub) -> None:
    created = await new_table(stub)
    tid = created.table_id
    joined = await stub.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="b"))
    before = await view_of(stub, tid, None)
    left = await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(joined.seat_token)
    )
    assert not left.forfeited
    after = await view_of(stub, tid, None)
    assert after.version == before.version + 1
    assert after.seats[joined.seat].occupant == table_pb2.OCCUPANT_KIND_EMPTY
    assert after.seats[joined.seat].display_name == ""
    assert after.status == table_pb2.TABLE_STATUS_WAITING
    # The token stops working; the seat can be taken again.
    await expect(view_of(stub, tid, joined.seat_token), Code.PERMISSION_DENIED)
    await expect(
        stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(joined.seat_token)
        ),
        Code.PERMISSION_DENIED,
    )
    again = await stub.JoinTable(join(table_id=tid, seat=joined.seat))
    assert again.seat == joined.seat
    listed = (await stub.ListTables(service_pb2.ListTablesRequest())).tables
    assert [t.free_seats for t in listed if t.table_id == tid] == [2]
    events = Watcher(stub, tid, resume_after=0)
    try:
        await events.wait_for_seq(after.last_event_sequence)
    finally:
        await events.close()
    left_events = [e for e in events.events if e.HasField("seat_left")]
    assert [e.seat_left.seat for e in left_events] == [joined.seat]


@pytest.mark.parametrize(
    ("preset", "leaver", "winners", "winner_seats"),
    [("parejas", 1, [0], [0, 2]), ("tres", 0, [1, 2], [1, 2]), ("corriente-6", 1, [0], [0])],
)
async def test_leaving_after_the_start_forfeits_the_match(
    stub, preset: str, leaver: int, winners: list[int], winner_seats: list[int]
) -> None:
    seated = await table_with_humans(stub, preset)
    tid = seated.table_id
    before = await view_of(stub, tid, None)
    left = await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(seated.tokens[leaver])
    )
    assert left.forfeited
    for token in (None, seated.tokens[(leaver + 1) % len(seated.tokens)]):
        v = await view_of(stub, tid, token)
        assert v.status == FINISHED
        assert v.version == before.version + 1
        assert list(v.match_result.winner_sides) == winners
        assert list(v.match_result.winner_seats) == winner_seats
        assert v.match_result.reason == 3  # MATCH_END_REASON_FORFEIT
        assert v.match_result.forfeited_seat == leaver
        assert not v.legal_actions and not v.HasField("turn_seat")
    # The leaver's token opens nothing any more: NOT_SEATED everywhere. After the end:
    # MATCH_OVER for anybody else leaving, and no change.
    others = {s: t for s, t in seated.tokens.items() if s != leaver}
    async with unchanged(stub, tid, others):
        gone = auth(seated.tokens[leaver])
        await expect(
            view_of(stub, tid, seated.tokens[leaver]), Code.PERMISSION_DENIED, reason="NOT_SEATED"
        )
        await expect(
            stub.LeaveTable(service_pb2.LeaveTableRequest(table_id=tid), metadata=gone),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )
        await expect_stream(
            stub.WatchTable(service_pb2.WatchTableRequest(table_id=tid), metadata=gone),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )
        for token in others.values():
            await expect(
                stub.LeaveTable(service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(token)),
                Code.FAILED_PRECONDITION,
                reason="MATCH_OVER",
            )


# ---------------------------------------------------------------------------------------------
# GetTable
# ---------------------------------------------------------------------------------------------


async def test_get_table_errors_and_the_spectator_view(stub) -> None:
    seated = await table_with_humans(stub, "parejas")
    other = await table_with_humans(stub, "tres")
    tid = seated.table_id
    req = service_pb2.GetTableRequest(table_id=tid)
    async with unchanged(stub, tid, seated.tokens):
        await expect(
            stub.GetTable(req, metadata=auth("not-a-real-token")),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )
        await expect(
            stub.GetTable(req, metadata=auth(other.tokens[0])),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )
        for header in (
            "Basic abc",
            "Bearer",
            "Bearer ",
            "token-without-scheme",
            "Bearer " + "x" * 4097,
        ):
            await expect(
                stub.GetTable(req, metadata=(("authorization", header),)), Code.UNAUTHENTICATED
            )
        await expect(
            stub.GetTable(service_pb2.GetTableRequest(table_id="")),
            Code.INVALID_ARGUMENT,
            field="table_id",
        )
        await expect(
            stub.GetTable(service_pb2.GetTableRequest(table_id="0123456789abcdef")),
            Code.NOT_FOUND,
            reason="TABLE_NOT_FOUND",
        )
    spectator = await view_of(stub, tid, None)
    assert not spectator.HasField("my_seat")
    assert not spectator.hand and not spectator.legal_actions
    assert [h.hand_size for h in spectator.seat_hands] == [10, 10, 10, 10]
    # The only held card a spectator sees at the start of a 4p hand is the dealer's trump card.
    public = [c for h in spectator.seat_hands for c in h.public_cards]
    assert public == [spectator.trump_card]
    assert spectator.seat_hands[spectator.dealer].public_cards == [spectator.trump_card]
    mine = await view_of(stub, tid, seated.tokens[2])
    assert mine.my_seat == 2 and len(mine.hand) == 10


# ---------------------------------------------------------------------------------------------
# SubmitAction
# ---------------------------------------------------------------------------------------------


def submit(
    tid: str, action: action_pb2.Action | None = None, **kw: Any
) -> service_pb2.SubmitActionRequest:
    req = service_pb2.SubmitActionRequest(table_id=tid, **kw)
    if action is not None:
        req.action.CopyFrom(action)
    return req


def play(suit: int, rank: int) -> action_pb2.Action:
    return PLAY(play_card=card_pb2.Card(suit=suit, rank=rank))  # type: ignore[arg-type]


async def test_submit_action_request_errors(stub) -> None:
    seated = await table_with_humans(stub, "parejas")
    other = await table_with_humans(stub, "parejas")
    tid = seated.table_id
    view = await view_of(stub, tid, None)
    turn = view.turn_seat
    token = seated.tokens[turn]
    legal = (await view_of(stub, tid, token)).legal_actions[0]
    async with unchanged(stub, tid, seated.tokens):
        await expect(stub.SubmitAction(submit(tid, legal)), Code.UNAUTHENTICATED)
        await expect(
            stub.SubmitAction(submit(tid, legal), metadata=auth(other.tokens[turn])),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )
        await expect(
            stub.SubmitAction(submit(tid), metadata=auth(token)),
            Code.INVALID_ARGUMENT,
            field="action",
        )
        await expect(
            stub.SubmitAction(submit(tid, PLAY()), metadata=auth(token)),
            Code.INVALID_ARGUMENT,
            field="action",
        )
        for action, field in [
            (play(card_pb2.SUIT_OROS, 8), "action.play_card.rank"),
            (play(card_pb2.SUIT_OROS, 0), "action.play_card.rank"),
            (play(card_pb2.SUIT_UNSPECIFIED, 1), "action.play_card.suit"),
            (play(7, 1), "action.play_card.suit"),
            (PLAY(sing=card_pb2.SUIT_UNSPECIFIED), "action.sing"),
            (PLAY(sing=9), "action.sing"),  # type: ignore[arg-type]
            (PLAY(declare_tute=action_pb2.DeclareTute(rank=10)), "action.declare_tute.rank"),
        ]:
            await expect(
                stub.SubmitAction(submit(tid, action), metadata=auth(token)),
                Code.INVALID_ARGUMENT,
                field=field,
            )
        await expect(
            stub.SubmitAction(submit(tid, legal, request_id="r" * 65), metadata=auth(token)),
            Code.INVALID_ARGUMENT,
            field="request_id",
        )
        await expect(
            stub.SubmitAction(submit("", legal), metadata=auth(token)),
            Code.INVALID_ARGUMENT,
            field="table_id",
        )
        await expect(
            stub.SubmitAction(submit("0123456789abcdef", legal), metadata=auth(token)),
            Code.NOT_FOUND,
            reason="TABLE_NOT_FOUND",
        )
        err = await expect(
            stub.SubmitAction(
                submit(tid, legal, expected_version=view.version - 1), metadata=auth(token)
            ),
            Code.ABORTED,
            reason="STALE_VERSION",
        )
        info = error_info(err)
        assert info is not None and info.metadata["current_version"] == str(view.version)
        await expect(
            stub.SubmitAction(
                submit(tid, legal, expected_version=view.version + 5), metadata=auth(token)
            ),
            Code.ABORTED,
            reason="STALE_VERSION",
        )
    # A request_id of 64 characters is fine, and so is the right expected_version.
    ok = await stub.SubmitAction(
        submit(tid, legal, request_id="r" * 64, expected_version=view.version),
        metadata=auth(token),
    )
    assert ok.table_version == view.version + 1


async def test_submit_action_before_the_start_and_after_the_end(stub) -> None:
    created = await new_table(stub)
    tid = created.table_id
    async with unchanged(stub, tid, {0: created.seat_token}):
        await expect(
            stub.SubmitAction(
                submit(tid, play(card_pb2.SUIT_OROS, 1)), metadata=auth(created.seat_token)
            ),
            Code.FAILED_PRECONDITION,
            reason="MATCH_NOT_STARTED",
        )
    seated = await table_with_humans(stub, "corriente-6")
    v = await view_of(stub, seated.table_id, seated.tokens[0])
    await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=seated.table_id), metadata=auth(seated.tokens[0])
    )
    async with unchanged(stub, seated.table_id, {1: seated.tokens[1]}):
        await expect(
            stub.SubmitAction(
                submit(seated.table_id, PLAY(play_card=v.hand[0])), metadata=auth(seated.tokens[1])
            ),
            Code.FAILED_PRECONDITION,
            reason="MATCH_OVER",
        )
        # the leaver forfeited: its token opens nothing
        await expect(
            stub.SubmitAction(
                submit(seated.table_id, PLAY(play_card=v.hand[0])), metadata=auth(seated.tokens[0])
            ),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )


async def test_not_your_turn_and_wrong_declarations(stub) -> None:
    seated = await table_with_humans(stub, "parejas")
    tid = seated.table_id
    turn = (await view_of(stub, tid, None)).turn_seat
    idle = (turn + 1) % 4
    idle_view = await view_of(stub, tid, seated.tokens[idle])
    turn_view = await view_of(stub, tid, seated.tokens[turn])
    assert not idle_view.legal_actions
    not_held = next(
        PLAY(play_card=c) for c in idle_view.hand
    )  # a card of another seat's hand: never in the seat on turn's hand
    async with unchanged(stub, tid, seated.tokens):
        await expect(
            stub.SubmitAction(
                submit(tid, PLAY(play_card=idle_view.hand[0])), metadata=auth(seated.tokens[idle])
            ),
            Code.FAILED_PRECONDITION,
            reason="NOT_YOUR_TURN",
        )
        await expect(
            stub.SubmitAction(submit(tid, not_held), metadata=auth(seated.tokens[turn])),
            Code.FAILED_PRECONDITION,
            reason="CARD_NOT_HELD",
        )
        # Trick 1 has no declaration window; 4 players never exchange.
        await expect(
            stub.SubmitAction(
                submit(tid, PLAY(sing=turn_view.trump_suit)), metadata=auth(seated.tokens[turn])
            ),
            Code.FAILED_PRECONDITION,
            reason="CANTE_NOT_ALLOWED",
        )
        await expect(
            stub.SubmitAction(
                submit(tid, PLAY(declare_tute=action_pb2.DeclareTute(rank=12))),
                metadata=auth(seated.tokens[turn]),
            ),
            Code.FAILED_PRECONDITION,
            reason="TUTE_NOT_ALLOWED",
        )
        await expect(
            stub.SubmitAction(
                submit(tid, PLAY(exchange_trump=action_pb2.ExchangeTrump())),
                metadata=auth(seated.tokens[turn]),
            ),
            Code.FAILED_PRECONDITION,
            reason="EXCHANGE_NOT_ALLOWED",
        )


STRENGTH_ORDER = (2, 4, 5, 6, 7, 10, 11, 12, 3, 1)


def expected_rule(view, c: card_pb2.Card) -> str:
    """The rule that forbids following with ``c`` (RULES.md §5, default options, 4p)."""
    trick = [p.card for p in view.current_trick.cards]
    led = trick[0].suit
    trump = view.trump_suit
    hand = list(view.hand)
    if c.suit != led and any(h.suit == led for h in hand):
        return "MUST_FOLLOW_SUIT"
    if c.suit == led:
        return "MUST_BEAT"
    trumped = any(t.suit == trump for t in trick)
    if c.suit != trump and not trumped:
        return "MUST_TRUMP"
    return "MUST_OVERTRUMP"


async def test_illegal_cards_name_the_rule(stub) -> None:
    """Follow with every card the arrastre forbids: FAILED_PRECONDITION naming the rule."""
    rng = random.Random(3)
    wanted = {"MUST_FOLLOW_SUIT", "MUST_BEAT", "MUST_TRUMP", "MUST_OVERTRUMP"}
    seen: dict[str, int] = {}
    for _ in range(25):  # MUST_OVERTRUMP turns up in about half of the matches
        seated = await table_with_humans(stub, "parejas")
        tid = seated.table_id
        while wanted - set(seen):
            spectator = await view_of(stub, tid, None)
            if spectator.status == FINISHED:
                break
            token = seated.tokens[spectator.turn_seat]
            v = await view_of(stub, tid, token)
            legal = [a.play_card for a in v.legal_actions if a.HasField("play_card")]
            illegal = [c for c in v.hand if c not in legal]
            if v.current_trick.cards and illegal:
                async with unchanged(stub, tid, seated.tokens):
                    for c in illegal:
                        rule = expected_rule(v, c)
                        if seen.get(rule, 0) >= 3:
                            continue
                        err = await expect(
                            stub.SubmitAction(submit(tid, PLAY(play_card=c)), metadata=auth(token)),
                            Code.FAILED_PRECONDITION,
                            reason=rule,
                        )
                        seen[rule] = seen.get(rule, 0) + 1
                        # The message names the rule and no card of the hand.
                        details = err.details()
                        assert details and "must" in details
            await stub.SubmitAction(
                submit(tid, PLAY(play_card=rng.choice(legal))), metadata=auth(token)
            )
        if not wanted - set(seen):
            break
    assert set(seen) == wanted, seen
    assert all(0 <= card(c) < 40 for c in legal)


# ---------------------------------------------------------------------------------------------
# WatchTable
# ---------------------------------------------------------------------------------------------


async def test_watch_table_errors(server: Server, stub) -> None:
    seated = await table_with_humans(stub, "tres")
    tid = seated.table_id
    last = (await view_of(stub, tid, None)).last_event_sequence
    async with unchanged(stub, tid, seated.tokens):
        await expect_stream(
            stub.WatchTable(service_pb2.WatchTableRequest(table_id=tid, resume_after=last + 1)),
            Code.INVALID_ARGUMENT,
            field="resume_after",
        )
        await expect_stream(
            stub.WatchTable(service_pb2.WatchTableRequest(table_id="0123456789abcdef")),
            Code.NOT_FOUND,
            reason="TABLE_NOT_FOUND",
        )
        await expect_stream(
            stub.WatchTable(service_pb2.WatchTableRequest()),
            Code.INVALID_ARGUMENT,
            field="table_id",
        )
        await expect_stream(
            stub.WatchTable(service_pb2.WatchTableRequest(table_id=tid), metadata=auth("forged")),
            Code.PERMISSION_DENIED,
            reason="NOT_SEATED",
        )
        await expect_stream(
            stub.WatchTable(
                service_pb2.WatchTableRequest(table_id=tid), metadata=(("authorization", "Bearer"),)
            ),
            Code.UNAUTHENTICATED,
        )
    # resume_after = the last event is fine: nothing is replayed, the stream waits; its first
    # message is the next event.
    w = Watcher(stub, tid, seated.tokens[0], resume_after=last)
    await eventually(
        lambda: server.metrics.registry.get_sample_value("tute_watch_streams") == 1,
        what="the stream to be open",
    )
    assert not w.done and not w.events and not w.snapshots
    for token in seated.tokens.values():
        view = await view_of(stub, tid, token)
        if view.legal_actions:
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(table_id=tid, action=view.legal_actions[0]),
                metadata=auth(token),
            )
            break
    await w.wait_until(lambda w: bool(w.events))
    assert w.events[0].sequence == last + 1 and not w.snapshots
    await w.close()
    assert w.error is None


# ---------------------------------------------------------------------------------------------
# Limits: RESOURCE_EXHAUSTED
# ---------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def limited_server(**limits: Any) -> AsyncIterator[service_pb2_grpc.TuteServiceStub]:
    srv = await create_server(dataclasses.replace(FAST, **limits))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            yield service_pb2_grpc.TuteServiceStub(ch)
    finally:
        await srv.shutdown()


async def test_too_many_tables(stub) -> None:
    async with limited_server(max_tables=2) as limited:
        first = await new_table(limited, "corriente-6")
        await new_table(limited)
        await expect(
            limited.CreateTable(service_pb2.CreateTableRequest()),
            Code.RESOURCE_EXHAUSTED,
            reason="TOO_MANY_TABLES",
        )
        listed = (await limited.ListTables(service_pb2.ListTablesRequest())).tables
        assert len(listed) == 2
        # A finished table no longer counts.
        await limited.JoinTable(join(table_id=first.table_id))
        await limited.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=first.table_id), metadata=auth(first.seat_token)
        )
        await new_table(limited)


async def test_too_many_streams() -> None:
    """Spectators have a cap per table and one per server; a seat's own streams have a cap
    per seat only (see tests/service/test_seat_streams.py)."""
    async with limited_server(
        max_spectator_streams_per_table=2, max_streams=3, max_streams_per_seat=1
    ) as limited:
        a = await new_table(limited, "tres")
        b = await new_table(limited, "tres")
        watchers = [Watcher(limited, a.table_id), Watcher(limited, a.table_id)]
        for w in watchers:
            await w.wait_until(lambda w: bool(w.snapshots))
        async with unchanged(limited, a.table_id, {0: a.seat_token}):
            await expect_stream(
                limited.WatchTable(service_pb2.WatchTableRequest(table_id=a.table_id)),
                Code.RESOURCE_EXHAUSTED,
                reason="TOO_MANY_STREAMS",
            )
        third = Watcher(limited, b.table_id)
        await third.wait_until(lambda w: bool(w.snapshots))
        await expect_stream(
            limited.WatchTable(service_pb2.WatchTableRequest(table_id=b.table_id)),
            Code.RESOURCE_EXHAUSTED,
            reason="TOO_MANY_STREAMS",
        )
        # a seat's stream is not a spectator's: room for one per seat
        mine = Watcher(limited, a.table_id, a.seat_token)
        await mine.wait_until(lambda w: bool(w.snapshots))
        await expect_stream(
            limited.WatchTable(
                service_pb2.WatchTableRequest(table_id=a.table_id), metadata=auth(a.seat_token)
            ),
            Code.RESOURCE_EXHAUSTED,
            reason="TOO_MANY_STREAMS",
        )
        await mine.close()  # (it counts in the server's total, which it took past the cap)
        # Closing a stream frees its place.
        await watchers[0].close()
        opened: list[Watcher] = []

        async def place_freed() -> bool:
            again = Watcher(limited, a.table_id)
            await again.wait_until(lambda w: bool(w.snapshots) or w.done)
            if again.snapshots:
                opened.append(again)
                return True
            assert again.error is not None
            assert again.error.code() == Code.RESOURCE_EXHAUSTED
            return False

        await eventually(place_freed, what="the closed stream's place to be freed")
        for w in (watchers[1], third, *opened, mine):
            await w.close()
            assert w.error is None
