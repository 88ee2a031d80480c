"""Ratings at a ranked match's end, through real gRPC: a 4p match of humans and bots rated once
(bots unchanged), a leaver who loses alone and waits out its cooldown (on the fake clock), no
second ranked match for a player while its match is played, a private casual table that
changes no rating, and a replica killed between a match's end and
its rating write (real subprocesses on a real Redis, one player store file): the write
happens exactly once.

The players are the store's guests (:func:`tests.support.players.guests`), found by their
token's hash by the matchmaker's directory over the player store.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import sqlite3
from pathlib import Path
from typing import Any

import grpc
import pytest

import engine
from service.auth import hash_token
from service.players import PlayerStore, Rated, Standing, bot_rated, rate_match
from service.players.sqlite import SqlitePlayerStore
from service.server import Server
from service.store.base import record_bytes
from service.store.redis import RedisStore
from service.tables import ratings
from tests.service.helpers import error_info, registered_reason
from tests.support.clock import FakeClock
from tests.support.players import (
    FINISHED,
    Stub,
    auth,
    guests,
    new_guests,
    play_to_the_end,
    view,
)
from tests.support.replicas import InProcessReplicas, inprocess_replicas, start_replicas
from tests.support.wait import eventually
from tute.v1 import matchmaking_pb2, rules_pb2, service_pb2, table_pb2

Code = grpc.StatusCode


def directory_of(replicas: InProcessReplicas) -> PlayerStore:
    """The (only) replica's player store, whose players its matchmaker seats."""
    return replicas.servers[0].app.players


async def find(stub: Stub, token: str, mode: str = "4p") -> str:
    resp = await stub.FindMatch(service_pb2.FindMatchRequest(mode=mode), metadata=auth(token))
    return str(resp.ticket_id)


async def matched(stub: Stub, token: str, ticket_id: str) -> matchmaking_pb2.TicketMatched:
    call = stub.WatchTicket(
        service_pb2.WatchTicketRequest(ticket_id=ticket_id), metadata=auth(token)
    )
    items = [item async for item in call]
    assert items[-1].WhichOneof("progress") == "matched"
    found: matchmaking_pb2.TicketMatched = items[-1].matched
    return found


async def queue_together(
    stub: Stub, tokens: list[str], clock: FakeClock | None = None, mode: str = "4p"
) -> list[matchmaking_pb2.TicketMatched]:
    """Every token queues in ``mode`` and watches its ticket until matched; with ``clock``,
    the deadline passes once all are queued (bots fill the seats still missing)."""
    ids = [await find(stub, t, mode) for t in tokens]
    watches = [asyncio.ensure_future(matched(stub, t, i)) for t, i in zip(tokens, ids, strict=True)]
    if clock is not None:
        clock.advance(30.0)
    async with asyncio.timeout(30):
        return list(await asyncio.gather(*watches))


async def rated(players: PlayerStore, player_id: str, games: int = 1) -> Standing:
    """The player's 4p standing once it counts ``games`` games (bounded wait)."""
    found: list[Standing] = []

    async def counted() -> bool:
        found[:] = [(await players.standings(player_id))["4p"]]
        return found[0].games >= games

    await eventually(counted, what=f"{player_id}'s rating written")
    return found[0]


async def test_a_ranked_4p_match_of_humans_and_bots_is_rated_once() -> None:
    clock = FakeClock()
    async with inprocess_replicas(
        1,
        clock=clock,
        matchmaking_deadline_s=30.0,
        ticket_ttl_s=3600.0,
        bot_budget_scale=0.02,  # bots that think little: the match is played in seconds
        bot_workers=1,
    ) as replicas:
        players = directory_of(replicas)
        srv, stub = replicas.servers[0], replicas.stubs[0]
        tokens, humans = await new_guests(players, 2)
        seats = await queue_together(stub, tokens, clock)
        table_id = seats[0].table_id
        assert {m.table_id for m in seats} == {table_id} and seats[0].bot_seats == 2
        await play_to_the_end(stub, table_id, tokens, random.Random(7))

        rec = await srv.app.load(table_id, presence=False)
        assert rec.state is not None and rec.ranked
        winners = {s for side in rec.state.winners for s in engine.SIDE_SEATS[4][side]}
        for human, m in zip(humans, seats, strict=True):
            standing = await rated(players, human.player_id)
            won = m.seat in winners
            assert (standing.games, standing.wins) == (1, int(won))
            assert (standing.mu > Standing().mu) == won
            assert standing.sigma < Standing().sigma
        await eventually(lambda: _is_rated(srv, table_id), what="the table marked rated")
        # bots took part but have no rating of their own: only the humans are on the ladder
        board = await players.leaderboard("4p")
        assert sorted(e.player.player_id for e in board) == sorted(h.player_id for h in humans)
        assert all(s.occupant == "bot" for s in rec.seats if not s.player_id)

        # a second write of the same match, as a replica that lost the rated mark would do
        before = [await players.standings(h.player_id) for h in humans]
        rec = await srv.app.load(table_id, presence=False)
        assert rec.rated
        rec.rated = False
        assert not await ratings.settle(srv.app.ctx, srv.app.commits, rec)
        changes, _ = await ratings.changes_of(players, rec, "4p")
        assert not await players.record_ranked(table_id, changes)
        assert [await players.standings(h.player_id) for h in humans] == before


async def _is_rated(srv: Server, table_id: str) -> bool:
    rec = await srv.app.load(table_id, presence=False)
    return rec.rated and srv.app.commits.due_at(rec, 0.0) == 0.0


async def test_a_leaver_loses_alone_and_waits_out_the_cooldown() -> None:
    clock = FakeClock()
    async with inprocess_replicas(1, clock=clock, ticket_ttl_s=3600.0) as replicas:
        players = directory_of(replicas)
        stub = replicas.stubs[0]
        tokens, humans = await new_guests(players, 4)
        seats = await queue_together(stub, tokens)
        table_id = seats[0].table_id
        by_seat = {m.seat: (h, t) for m, h, t in zip(seats, humans, tokens, strict=True)}
        # a few moves, then seat 0 leaves mid-match
        rng = random.Random(3)
        for _ in range(6):
            for token in tokens:
                v = await view(stub, table_id, token)
                if v.legal_actions:
                    await stub.SubmitAction(
                        service_pb2.SubmitActionRequest(
                            table_id=table_id, action=rng.choice(list(v.legal_actions))
                        ),
                        metadata=auth(token),
                    )
        leaver, leaver_token = by_seat[0]
        partner, partner_token = by_seat[2]
        left = await stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=table_id), metadata=auth(leaver_token)
        )
        assert left.forfeited
        assert (await view(stub, table_id, partner_token)).status == FINISHED

        lost = await rated(players, leaver.player_id)
        assert (lost.games, lost.wins) == (1, 0) and lost.mu < Standing().mu
        for seat in (1, 3):
            won = await rated(players, by_seat[seat][0].player_id)
            assert (won.games, won.wins) == (1, 1) and won.mu > Standing().mu
        assert await players.standings(partner.player_id) == {
            m: Standing() for m in ("2p", "3p", "4p")
        }  # the abandoned partner: unchanged

        # the leaver is refused ranked play until its cooldown has passed; the others are not
        async def refused(left_s: int) -> None:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await find(stub, leaver_token)
            assert err.value.code() == Code.FAILED_PRECONDITION
            assert registered_reason(err.value) == "RANKED_COOLDOWN"
            info = error_info(err.value)
            assert info is not None and info.metadata["cooldown_s"] == str(left_s)
            assert leaver_token not in (err.value.details() or "")

        await refused(300)
        for seat in (1, 2, 3):  # a matched player may queue again once its match is over
            assert await find(stub, by_seat[seat][1])
        clock.advance(299.5)
        await refused(1)
        clock.advance(0.5)
        assert await find(stub, leaver_token)


async def refused_seated(stub: Stub, token: str, table_id: str, mode: str = "4p") -> None:
    """FindMatch by the token's player is refused: it holds a seat at ``table_id``."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await find(stub, token, mode)
    assert err.value.code() == Code.FAILED_PRECONDITION
    assert registered_reason(err.value) == "ALREADY_SEATED"
    info = error_info(err.value)
    assert info is not None and info.metadata["table_id"] == table_id
    assert table_id in (err.value.details() or "")
    assert token not in (err.value.details() or "")


async def test_a_seated_player_may_not_queue_again_until_its_match_is_over() -> None:
    """4 players matched into a ranked 4p table: while the match is played, FindMatch is
    refused to each of them (in any mode) and queues nobody; once it is over (a LeaveTable
    forfeit ends it) each may queue again, and the table's rating write clears the record."""
    clock = FakeClock()
    async with inprocess_replicas(
        1, clock=clock, ticket_ttl_s=3600.0, ranked_leave_cooldown_s=0.0
    ) as replicas:
        players = directory_of(replicas)
        srv, stub = replicas.servers[0], replicas.stubs[0]
        tokens, humans = await new_guests(players, 4)
        seats = await queue_together(stub, tokens)
        table_id = seats[0].table_id
        assert {m.table_id for m in seats} == {table_id} and seats[0].bot_seats == 0
        for token in tokens:
            await refused_seated(stub, token, table_id)
        await refused_seated(stub, tokens[1], table_id, mode="2p")
        tickets = srv.app.store.tickets()
        assert [await tickets.count(m) for m in ("2p", "3p", "4p")] == [0, 0, 0]
        clock.advance(600.0)  # still refused however long the match lasts
        await refused_seated(stub, tokens[2], table_id)

        left = await stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=table_id), metadata=auth(tokens[0])
        )
        assert left.forfeited
        # each may queue again, the leaver too (its cooldown is 0 here); in modes that seat
        # nobody yet (three for 4p, one for 3p, and the clock holds still for the bot fill),
        # so that no new table takes the place of the old one in their records
        for token, mode in zip(tokens, ("4p", "4p", "4p", "3p"), strict=True):
            assert await find(stub, token, mode)

        async def cleared() -> bool:
            holds = [await players.ranked_hold(h.player_id) for h in humans]
            return all(h.table_id == "" for h in holds)

        await eventually(cleared, what="the rated table cleared from its players")


async def test_a_recorded_table_that_is_gone_holds_nobody() -> None:
    """A player whose recorded ranked table is not in the store (dropped, or a store that
    lost it) may queue: the record is stale."""
    async with inprocess_replicas(1, ticket_ttl_s=3600.0) as replicas:
        players = directory_of(replicas)
        stub = replicas.stubs[0]
        token = secrets.token_urlsafe(16)
        (human,) = await guests(players, [token])
        await players.seat_ranked("0123456789abcdef", [human.player_id])
        assert (await players.ranked_hold(human.player_id)).table_id == "0123456789abcdef"
        assert await find(stub, token)


async def test_a_disconnect_forfeit_is_rated_as_a_leave() -> None:
    """A 2p ranked match whose players never open their streams: past the grace period the
    scheduler forfeits the seat away longest; that player loses and takes the cooldown."""
    clock = FakeClock()
    async with inprocess_replicas(
        1, clock=clock, ticket_ttl_s=3600.0, disconnect_forfeit_s=60.0
    ) as replicas:
        players = directory_of(replicas)
        srv, stub = replicas.servers[0], replicas.stubs[0]
        tokens, humans = await new_guests(players, 2)
        seats = await queue_together(stub, tokens, mode="2p")
        table_id = seats[0].table_id
        clock.advance(61.0)

        async def forfeited() -> bool:
            return (await srv.app.load(table_id, presence=False)).forfeited_seat >= 0

        await eventually(forfeited, what="the away seat forfeited")
        rec = await srv.app.load(table_id, presence=False)
        by_seat = {m.seat: h for m, h in zip(seats, humans, strict=True)}
        leaver, other = by_seat[rec.forfeited_seat], by_seat[1 - rec.forfeited_seat]

        async def rated_2p(pid: str) -> Standing:
            async def counted() -> bool:
                return (await players.standings(pid))["2p"].games == 1

            await eventually(counted, what="the 2p rating written")
            return (await players.standings(pid))["2p"]

        lost, won = await rated_2p(leaver.player_id), await rated_2p(other.player_id)
        assert (lost.wins, won.wins) == (0, 1) and lost.mu < Standing().mu < won.mu
        assert await players.cooldown_until(leaver.player_id) == clock() + 300
        assert await players.cooldown_until(other.player_id) == 0.0


class RacingStore:
    """A player store where, just before the first ranked write, another match of the
    player ``racer`` is rated (as another replica would at that moment)."""

    def __init__(self, inner: PlayerStore, racer: str) -> None:
        self.inner = inner
        self.racer = racer
        self.raced = False
        self.after_race = Standing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def record_ranked(self, table_id: str, changes: Any, **kw: Any) -> bool:
        if not self.raced:
            self.raced = True
            now = (await self.inner.standings(self.racer))["2p"]
            other = rate_match(
                "2p", [[Rated(self.racer, now.mu, now.sigma)], [bot_rated("easy")]], 0
            )
            assert await self.inner.record_ranked("0therta6le000000", other)
            self.after_race = (await self.inner.standings(self.racer))["2p"]
        return await self.inner.record_ranked(table_id, changes, **kw)


async def test_a_rating_moved_under_the_write_is_read_again_and_kept() -> None:
    clock = FakeClock()
    async with inprocess_replicas(1, clock=clock, ticket_ttl_s=3600.0) as replicas:
        players = directory_of(replicas)
        srv, stub = replicas.servers[0], replicas.stubs[0]
        tokens, humans = await new_guests(players, 2)
        racing = RacingStore(players, humans[1].player_id)
        srv.app.ctx.players = racing
        seats = await queue_together(stub, tokens, mode="2p")
        await stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=seats[0].table_id), metadata=auth(tokens[0])
        )

        async def both() -> bool:
            return (await players.standings(humans[1].player_id))["2p"].games == 2

        await eventually(both, what="both matches of the player rated")
        assert racing.raced
        winner = (await players.standings(humans[1].player_id))["2p"]
        assert winner.wins == 2  # the race's win, then this match's: neither change lost
        loser = (await players.standings(humans[0].player_id))["2p"]
        assert (loser.games, loser.wins) == (1, 0)
        # this match's change was computed from the rating the race left
        raced = racing.after_race
        by_seat = {m.seat: Rated(h.player_id) for m, h in zip(seats, humans, strict=True)}
        by_seat[seats[1].seat] = Rated(humans[1].player_id, raced.mu, raced.sigma)
        expected = rate_match(
            "2p", [[by_seat[0]], [by_seat[1]]], seats[1].seat, [humans[0].player_id]
        )
        mine = next(c for c in expected if c.player_id == humans[1].player_id)
        assert (winner.mu, winner.sigma) == pytest.approx((mine.mu_after, mine.sigma_after))
        assert winner.sigma < raced.sigma


async def test_a_private_casual_table_changes_no_rating() -> None:
    async with inprocess_replicas(1) as replicas:
        players = directory_of(replicas)
        srv, stub = replicas.servers[0], replicas.stubs[0]
        table_id, tokens = await _private_table(stub)
        humans = await guests(players, tokens)
        await play_to_the_end(stub, table_id, tokens, random.Random(5))
        rec = await srv.app.load(table_id, presence=False)
        assert rec.status == "finished" and rec.visibility == "private" and not rec.ranked
        assert srv.app.commits.due_at(rec, srv.app.clock()) == 0.0  # no rating due
        await srv.app.run_due(table_id)  # the scheduler has nothing to rate
        assert not await ratings.settle(srv.app.ctx, srv.app.commits, rec)
        assert not (await srv.app.load(table_id, presence=False)).rated
        for h in humans:
            assert all(s == Standing() for s in (await players.standings(h.player_id)).values())
        assert await players.leaderboard("4p") == []


async def _private_table(stub: Stub) -> tuple[str, list[str]]:
    """A private casual 4p parejas-manos table, every seat taken through its invite code."""
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="parejas-manos"),
            visibility=table_pb2.VISIBILITY_PRIVATE,
            take_seat=True,
            display_name="p0",
        )
    )
    tokens = [created.seat_token]
    for i in range(1, 4):
        joined = await stub.JoinTable(
            service_pb2.JoinTableRequest(invite_code=created.invite_code, display_name=f"p{i}")
        )
        tokens.append(joined.seat_token)
    return created.table_id, tokens


async def test_a_replica_killed_before_the_rating_write_leaves_it_to_another(
    redis_url: str, tmp_path: Path
) -> None:
    """Replica A commits a ranked match's end (a LeaveTable forfeit) while the player store
    is locked, so that it cannot write the rating, and is killed (-9); replica B, started
    after, writes it: once."""
    db_path = tmp_path / "players.db"
    players = SqlitePlayerStore(str(db_path))
    await players.start()
    store = RedisStore.from_url(redis_url)
    flags = ("--players", f"sqlite://{db_path}", "--claim-lease-s", "0.5")
    try:
        tokens, humans = await new_guests(players, 4)
        table_id = await _ranked_table(store, players, tokens)
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        (a,) = await start_replicas(redis_url, tmp_path / "a", 1, *flags)
        lock = sqlite3.connect(db_path, isolation_level=None)
        try:
            lock.execute("BEGIN EXCLUSIVE")  # nobody writes the player store meanwhile
            left = await a.stub.LeaveTable(
                service_pb2.LeaveTableRequest(table_id=table_id), metadata=auth(tokens[0])
            )
            assert left.forfeited
            assert (await view(a.stub, table_id, tokens[1])).status == FINISHED
            a.kill9()
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        await a.stop()
        assert [(await players.standings(h.player_id))["4p"].games for h in humans] == [0] * 4

        (b,) = await start_replicas(redis_url, tmp_path / "b", 1, *flags)
        try:
            leaver = await rated(players, humans[0].player_id)
            assert (leaver.games, leaver.wins) == (1, 0)
            for seat in (1, 3):
                won = (await players.standings(humans[seat].player_id))["4p"]
                assert (won.games, won.wins) == (1, 1)
            assert (await players.standings(humans[2].player_id))["4p"] == Standing()
            assert await players.cooldown_until(humans[0].player_id) > 0

            async def marked() -> bool:
                found = await store.load(table_id)
                return found is not None and b'"rated":true' in record_bytes(found[1])

            await eventually(marked, what="the table marked rated")
            # written once: the result is recorded, a second write is refused
            assert not await players.record_ranked(table_id, [])
            assert (await players.standings(humans[0].player_id))["4p"] == leaver
        finally:
            await b.stop()
    finally:
        await store.close()
        await players.close()


async def _ranked_table(store: RedisStore, players: PlayerStore, tokens: list[str]) -> str:
    """A ranked 4p table as the matchmaker seats it (seat i: the guest of ``tokens[i]``),
    made through an in-process table service on the replicas' Redis."""
    from service.config import Settings
    from service.matchmaking.entrants import Entrant
    from service.matchmaking.service import Matchmaker, Plan
    from service.metrics import Metrics
    from service.tables.service import TableService

    app = TableService(store, Settings(history="memory"), Metrics(), players=players)
    entrants = []
    for token in tokens:
        p = await players.by_token_hash(hash_token(token))
        assert p is not None
        entrants.append(Entrant(p.player_id, p.name, 25.0, 25 / 3, token_hash=hash_token(token)))
    plan = Plan(secrets.token_hex(8), "4p", tuple(entrants))
    rec = await Matchmaker(app).seat(plan)
    assert rec.status == "playing" and rec.ranked
    return plan.table_id
