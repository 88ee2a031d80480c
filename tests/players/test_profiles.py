"""GetPlayer, ListLeaderboard and ListMatches over real gRPC, on a real SQLite file and a real
PostgreSQL (players and history in one database): a guest's ranked matches (bot-filled after
the deadline, on the fake clock, then forfeited) and a casual table its credential bound it
to, paged newest first; the player itself sees them all, anyone else the ranked ones only;
the leaderboard paged best first with ranks; bad page tokens and sizes refused."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from service.players import RatingChange
from service.players.ratings import MU, SIGMA
from service.server import Server, create_server
from tests.service.conftest import FAST
from tests.service.helpers import auth, registered_reason
from tests.support.clock import FakeClock
from tests.support.wait import eventually
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

from ..durable.conftest import fresh_postgres_url, postgres  # noqa: F401 - the session fixture

Code = grpc.StatusCode
Stub = service_pb2_grpc.TuteServiceStub
S = service_pb2


@pytest.fixture(params=["sqlite", "postgresql"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'tute.db'}"
    return await fresh_postgres_url(request.getfixturevalue("postgres"))


@dataclasses.dataclass
class Running:
    server: Server
    stub: Stub
    clock: FakeClock


@pytest.fixture
async def running(db_url: str) -> AsyncIterator[Running]:
    clock = FakeClock()
    settings = dataclasses.replace(
        FAST,
        history=db_url,
        matchmaking_deadline_s=30.0,
        ticket_ttl_s=3600.0,
        # the matches here end by a leave: the leaver may queue again at once
        ranked_leave_cooldown_s=0.0,
    )
    srv = await create_server(settings, clock=clock)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            yield Running(srv, Stub(ch), clock)
    finally:
        await srv.shutdown()


async def guest(stub: Stub, name: str) -> tuple[str, str]:
    made = await stub.CreatePlayer(S.CreatePlayerRequest(display_name=name))
    return made.player_token, made.player.player_id


async def ranked_match_lost(r: Running, token: str) -> str:
    """A 2p ranked match of the player and a bot (after the queue's deadline), which the
    player forfeits at once: its table id."""
    ticket = (await r.stub.FindMatch(S.FindMatchRequest(mode="2p"), metadata=auth(token))).ticket_id
    call = r.stub.WatchTicket(S.WatchTicketRequest(ticket_id=ticket), metadata=auth(token))
    assert (await call.read()).WhichOneof("progress") == "waiting"
    r.clock.advance(30.0)  # the matcher's loop seats a bot now
    while True:
        item = await call.read()
        if item.WhichOneof("progress") == "matched":
            break
    matched = item.matched
    assert matched.bot_seats == 1
    left = await r.stub.LeaveTable(
        S.LeaveTableRequest(table_id=matched.table_id), metadata=auth(token)
    )
    assert left.forfeited
    r.clock.advance(5.0)
    return str(matched.table_id)


async def casual_match_lost(r: Running, token: str) -> str:
    """A casual public 2p table whose seat the player's credential binds, against a bot,
    forfeited at once: its table id."""
    made = await r.stub.CreateTable(
        S.CreateTableRequest(
            rules=rules_pb2.Rules(preset="corriente-8"), take_seat=True, display_name="Casual"
        ),
        metadata=auth(token),
    )
    assert made.table.seats[0].player_id  # bound to the player
    await r.stub.AddBot(S.AddBotRequest(table_id=made.table_id), metadata=auth(made.owner_token))
    left = await r.stub.LeaveTable(
        S.LeaveTableRequest(table_id=made.table_id), metadata=auth(made.seat_token)
    )
    assert left.forfeited
    r.clock.advance(5.0)
    return str(made.table_id)


async def pages(stub: Stub, player_id: str, token: str | None, size: int) -> list[list[str]]:
    """Every page of ListMatches, as table ids."""
    out: list[list[str]] = []
    page_token = ""
    md = auth(token) if token else None
    while True:
        resp = await stub.ListMatches(
            S.ListMatchesRequest(player_id=player_id, page_size=size, page_token=page_token),
            metadata=md,
        )
        out.append([m.table_id for m in resp.matches])
        page_token = resp.next_page_token
        if not page_token:
            return out


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    return err.value


async def test_a_players_history_pages_newest_first_and_others_see_ranked_only(
    running: Running,
) -> None:
    r = running
    token, pid = await guest(r.stub, "Ana")
    other, _ = await guest(r.stub, "Bea")
    ranked = [await ranked_match_lost(r, token) for _ in range(3)]
    casual = await casual_match_lost(r, token)
    newest_first = [casual, *reversed(ranked)]

    async def kept() -> None:
        assert [len(p) for p in await pages(r.stub, pid, token, 50)] == [4]

    await eventually(kept, what="the four records in the history")
    assert await pages(r.stub, pid, token, 3) == [newest_first[:3], newest_first[3:]]
    assert await pages(r.stub, pid, None, 2) == [newest_first[1:3], newest_first[3:]]
    assert await pages(r.stub, pid, other, 0) == [newest_first[1:]]
    full = await r.stub.ListMatches(S.ListMatchesRequest(player_id=pid), metadata=auth(token))
    assert [m.ranked for m in full.matches] == [False, True, True, True]
    assert all(m.end_time.ToMilliseconds() >= m.start_time.ToMilliseconds() for m in full.matches)
    assert full.matches[0].seat == 0
    # the records name the player's own id on its seat
    for table_id in newest_first:
        record = (await r.stub.GetMatchRecord(S.GetMatchRecordRequest(table_id=table_id))).record
        assert pid in [s.player_id for s in record.seats]
        assert [s.player_id for s in record.seats if s.bot_level] == [""]
    # the profile: the same visibility
    mine = (await r.stub.GetPlayer(S.GetPlayerRequest(player_id=pid), metadata=auth(token))).player
    assert [m.table_id for m in mine.recent_matches] == newest_first
    public = (await r.stub.GetPlayer(S.GetPlayerRequest(player_id=pid))).player
    assert [m.table_id for m in public.recent_matches] == newest_first[1:]
    assert public.display_name == "Ana"

    # page tokens belong to their request
    first = await r.stub.ListMatches(
        S.ListMatchesRequest(player_id=pid, page_size=1), metadata=auth(token)
    )
    for md, player, page_token in (
        (None, pid, first.next_page_token),  # another caller
        (auth(token), "p-else", first.next_page_token),  # another player
        (auth(token), pid, "bm90LWEtdG9rZW4"),
        (auth(token), pid, "!" * 10),
        (auth(token), pid, "x" * 300),
    ):
        err = await refused(
            r.stub.ListMatches(
                S.ListMatchesRequest(player_id=player, page_token=page_token), metadata=md
            )
        )
        if player != pid:
            assert registered_reason(err) == "PLAYER_NOT_FOUND"
            continue
        assert (err.code(), registered_reason(err)) == (Code.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        assert "page_token" in (err.details() or "")
    err = await refused(r.stub.ListMatches(S.ListMatchesRequest(player_id=pid, page_size=-1)))
    assert err.code() == Code.INVALID_ARGUMENT and "page_size" in (err.details() or "")
    err = await refused(r.stub.ListMatches(S.ListMatchesRequest()))
    assert err.code() == Code.INVALID_ARGUMENT and "player_id" in (err.details() or "")
    err = await refused(r.stub.ListMatches(S.ListMatchesRequest(player_id="p-nobody")))
    assert (err.code(), registered_reason(err)) == (Code.NOT_FOUND, "PLAYER_NOT_FOUND")


async def test_the_leaderboard_pages_best_first_with_ranks(running: Running) -> None:
    r = running
    store = r.server.app.players
    shown = {}
    for i, mu in enumerate((30.0, 20.0, 35.0, 25.0, 28.0)):
        _, pid = await guest(r.stub, f"P{i}")
        change = RatingChange(pid, "2p", mu > MU, MU, SIGMA, mu, 2.0)  # from a new rating
        assert await store.record_ranked(f"t{i:015d}", [change])
        shown[pid] = mu
    await guest(r.stub, "Never played")  # not on any board
    best_first = sorted(shown, key=lambda p: -shown[p])
    rows: list[Any] = []
    page_token = ""
    sizes = []
    while True:
        resp = await r.stub.ListLeaderboard(
            S.ListLeaderboardRequest(mode="2p", page_size=2, page_token=page_token)
        )
        rows += resp.entries
        sizes.append(len(resp.entries))
        page_token = resp.next_page_token
        if not page_token:
            break
    assert sizes == [2, 2, 1]
    assert [e.player_id for e in rows] == best_first
    assert [e.rank for e in rows] == [1, 2, 3, 4, 5]
    assert [e.rating.rating for e in rows] == sorted((e.rating.rating for e in rows), reverse=True)
    assert all(e.rating.mode == "2p" and e.rating.games == 1 for e in rows)
    assert not rows[0].rating.provisional  # sigma 2: settled
    assert not any(e.player_id.startswith("bot") for e in rows)  # bots never listed
    assert rows[0].display_name == "P2"
    empty = await r.stub.ListLeaderboard(S.ListLeaderboardRequest(mode="4p"))
    assert list(empty.entries) == [] and not empty.next_page_token
    profile = (await r.stub.GetPlayer(S.GetPlayerRequest(player_id=best_first[0]))).player
    assert (profile.ratings[0].rating, profile.ratings[0].games) == (rows[0].rating.rating, 1)
    assert profile.ratings[0].wins == 1

    first = await r.stub.ListLeaderboard(S.ListLeaderboardRequest(mode="2p", page_size=2))
    for mode, page_token, page_size, field in (
        ("5p", "", 0, "mode"),
        ("", "", 0, "mode"),
        ("3p", first.next_page_token, 0, "page_token"),  # another mode's token
        ("2p", "garbage", 0, "page_token"),
        ("2p", "", -3, "page_size"),
    ):
        err = await refused(
            r.stub.ListLeaderboard(
                S.ListLeaderboardRequest(mode=mode, page_token=page_token, page_size=page_size)
            )
        )
        assert (err.code(), registered_reason(err)) == (Code.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        assert field in (err.details() or ""), field
    big = await r.stub.ListLeaderboard(S.ListLeaderboardRequest(mode="2p", page_size=10_000))
    assert len(big.entries) == 5 and not big.next_page_token
