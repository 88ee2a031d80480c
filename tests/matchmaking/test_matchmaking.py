"""FindMatch and WatchTicket over real gRPC, on two replicas sharing a store (one memory
store in this process, or a real Redis with a store per replica): every player seated exactly
once, a cancelled ticket never matched, bots of the nearest level after the deadline (on the
fake clock), bad input refused with its status and reason. Players are guests CreatePlayer
made, except where a test sets ratings (GuestDirectory, the directory of the tests)."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import pytest

from service.auth import hash_token
from service.matchmaking import matcher
from service.matchmaking.entrants import (
    DISPLAY_NEW,
    DISPLAY_PER_ORDINAL,
    MODES,
    GuestDirectory,
    bot_display,
)
from service.matchmaking.service import Plan, candidates
from tests.service.helpers import auth, error_info, registered_reason
from tests.support.clock import FakeClock
from tests.support.replicas import InProcessReplicas, Stub, inprocess_replicas, start_replicas
from tests.support.wait import eventually
from tute.v1 import matchmaking_pb2, service_pb2

Code = grpc.StatusCode


@pytest.fixture(params=["memory", "redis"])
def store_url(request: pytest.FixtureRequest) -> str:
    return "memory" if request.param == "memory" else str(request.getfixturevalue("redis_url"))


async def new_player(stub: Stub, name: str = "Jugador") -> str:
    """A guest player's token (CreatePlayer)."""
    resp = await stub.CreatePlayer(service_pb2.CreatePlayerRequest(display_name=name))
    return str(resp.player_token)


async def find(stub: Stub, token: str, mode: str = "4p") -> str:
    resp = await stub.FindMatch(service_pb2.FindMatchRequest(mode=mode), metadata=auth(token))
    return str(resp.ticket_id)


async def watch_to_the_end(stub: Stub, token: str, ticket_id: str) -> list[Any]:
    call = stub.WatchTicket(
        service_pb2.WatchTicketRequest(ticket_id=ticket_id), metadata=auth(token)
    )
    return [item async for item in call]


async def stop_matchers(replicas: InProcessReplicas) -> None:
    """Stop the replicas' own matcher loops, so that the test runs each pass itself (and
    knows which replica made which table)."""
    for srv in replicas.servers:
        for task in [t for t in srv.tasks if t.get_name() == "matcher"]:
            # a cancel can be swallowed by a Redis call completing at that moment (Python
            # 3.11's wait_for): cancel until the task is done, as Server.shutdown does
            while not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=0.05)
            srv.tasks.remove(task)


async def queue_and_play(replicas: InProcessReplicas, n: int, mode: str = "4p") -> None:
    """``n`` players queue at once, half on each replica, each watching its ticket to the end:
    each is seated exactly once, at a table whose seat its own token opens."""
    stubs = [replicas.stubs[i % len(replicas.stubs)] for i in range(n)]
    tokens = [await new_player(stub) for stub in stubs]
    before = sum(srv.matchmaker.claims for srv in replicas.servers if srv.matchmaker)

    async def one(stub: Stub, token: str) -> matchmaking_pb2.TicketMatched:
        ticket_id = await find(stub, token, mode)
        items = await watch_to_the_end(stub, token, ticket_id)
        assert items[-1].WhichOneof("progress") == "matched"
        assert all(i.WhichOneof("progress") == "waiting" for i in items[:-1])
        return items[-1].matched

    async with asyncio.timeout(60):
        matched = await asyncio.gather(*(one(s, t) for s, t in zip(stubs, tokens, strict=True)))
    seats = Counter((m.table_id, m.seat) for m in matched)
    assert all(c == 1 for c in seats.values()), "a seat given twice"
    tables = Counter(m.table_id for m in matched)
    players = {"2p": 2, "3p": 3, "4p": 4}[mode]
    assert len(tables) == n // players and set(tables.values()) == {players}
    assert all(m.bot_seats == 0 and not m.seat_token for m in matched)
    for m, token, stub in zip(matched, tokens, stubs, strict=True):
        view = (
            await stub.GetTable(
                service_pb2.GetTableRequest(table_id=m.table_id), metadata=auth(token)
            )
        ).view
        assert view.my_seat == m.seat  # the player's token opens its seat
    # nobody is still queued, nobody lost: every claim was won once, by one replica or the other
    won = sum(srv.matchmaker.claims for srv in replicas.servers if srv.matchmaker)
    assert won - before == n // players


async def test_64_players_on_two_replicas_are_each_seated_once(store_url: str) -> None:
    async with inprocess_replicas(2, store_url=store_url) as replicas:
        await queue_and_play(replicas, 64)


@pytest.mark.parametrize("players", [24, pytest.param(200, marks=pytest.mark.slow)])
async def test_many_players_queueing_at_once_on_redis(redis_url: str, players: int) -> None:
    """The issue's target as a test: nobody matched twice, nobody lost (200 under slow)."""
    async with inprocess_replicas(2, store_url=redis_url) as replicas:
        await queue_and_play(replicas, players)


async def test_2p_and_3p_tables(store_url: str) -> None:
    async with inprocess_replicas(2, store_url=store_url) as replicas:
        await queue_and_play(replicas, 4, "2p")
        await queue_and_play(replicas, 6, "3p")


async def test_a_ranked_table_uses_the_modes_rules_and_starts() -> None:
    async with inprocess_replicas(1) as replicas:
        stub = replicas.stubs[0]
        created = [
            await stub.CreatePlayer(service_pb2.CreatePlayerRequest(display_name=f"P{i}"))
            for i in range(4)
        ]
        tokens = [c.player_token for c in created]
        ids = [await find(stub, t) for t in tokens]
        results = await asyncio.gather(
            *(watch_to_the_end(stub, t, i) for t, i in zip(tokens, ids, strict=True))
        )
        m = results[0][-1].matched
        view = (
            await stub.GetTable(
                service_pb2.GetTableRequest(table_id=m.table_id), metadata=auth(tokens[0])
            )
        ).view
        assert view.rules.preset == "parejas-manos"
        assert view.rules.options.target_match_points == 3
        assert view.rules.options.turn_time_s == 30
        assert view.status == 2  # TABLE_STATUS_PLAYING: every seat taken at once
        rec = await replicas.servers[0].app.load(m.table_id, presence=False)
        assert rec.ranked and rec.visibility == "private"
        # every seat is bound to its player, and the binding survives the store's codec
        by_hash = {hash_token(c.player_token): c.player.player_id for c in created}
        assert [s.player_id for s in rec.seats] == [by_hash[s.token_hash] for s in rec.seats]
        assert [s.name for s in rec.seats] == [
            next(c.player.display_name for c in created if c.player.player_id == s.player_id)
            for s in rec.seats
        ]
        assert [s.player_id for s in view.seats] == [s.player_id for s in rec.seats]


async def test_a_cancelled_ticket_is_never_matched(store_url: str) -> None:
    clock = FakeClock()
    async with inprocess_replicas(2, store_url=store_url, clock=clock) as replicas:
        a, b = replicas.stubs
        leaver = await new_player(a)
        ticket = await find(a, leaver)
        call = a.WatchTicket(
            service_pb2.WatchTicketRequest(ticket_id=ticket), metadata=auth(leaver)
        )
        first = await call.read()
        assert first.waiting.queued == 1 and first.waiting.window == 100
        call.cancel()  # closing the stream cancels the ticket

        async def gone() -> None:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await watch_to_the_end(b, leaver, ticket)
            assert err.value.code() == Code.NOT_FOUND
            assert registered_reason(err.value) == "TICKET_NOT_FOUND"

        await eventually(gone, what="the closed stream's ticket cancelled")
        others = [await new_player(b) for _ in range(4)]
        found = [await find(b if i % 2 else a, t) for i, t in enumerate(others)]
        done = await asyncio.gather(
            *(
                watch_to_the_end(b if i % 2 else a, t, f)
                for i, (t, f) in enumerate(zip(others, found, strict=True))
            )
        )
        table_id = done[0][-1].matched.table_id
        rec = await replicas.servers[0].app.load(table_id, presence=False)
        hashes = {s.token_hash for s in rec.seats}
        assert hash_token(leaver) not in hashes
        assert hashes == {hash_token(t) for t in others}


def rated(directory: GuestDirectory, token: str, display: float) -> None:
    """Give the token's player a rating that shows ``display`` (sigma 1: a settled one)."""
    directory.set_rating(token, "4p", (display - DISPLAY_NEW) / DISPLAY_PER_ORDINAL + 3, 1.0)


@pytest.mark.parametrize("level", ["random", "easy", "medium"])
async def test_after_the_deadline_bots_of_the_nearest_level_fill_the_seats(
    store_url: str, level: str
) -> None:
    clock = FakeClock()
    directory = GuestDirectory()
    tokens = [secrets.token_urlsafe(16) for _ in range(2)]
    target = bot_display(level)
    rated(directory, tokens[0], target - 30)  # each within 100 of the other: one table
    rated(directory, tokens[1], target + 20)
    async with inprocess_replicas(
        2,
        store_url=store_url,
        clock=clock,
        directory=directory,
        matchmaking_deadline_s=30.0,
        ticket_ttl_s=3600.0,
    ) as replicas:
        await stop_matchers(replicas)
        a, b = replicas.stubs
        ids = [await find(a, tokens[0]), await find(b, tokens[1])]
        calls = [
            stub.WatchTicket(service_pb2.WatchTicketRequest(ticket_id=i), metadata=auth(t))
            for stub, t, i in zip((a, b), tokens, ids, strict=True)
        ]
        for call in calls:
            assert (await call.read()).WhichOneof("progress") == "waiting"
        for srv in replicas.servers:  # before the deadline: no bots
            assert srv.matchmaker is not None and await srv.matchmaker.run_pass() == []
        clock.advance(30.0)
        made = await replicas.servers[1].matchmaker.run_pass()  # type: ignore[union-attr]
        assert len(made) == 1
        ends = [await last_of(call) for call in calls]
        assert {e.table_id for e in ends} == {made[0].table_id}
        assert {e.bot_seats for e in ends} == {2}
        rec = await replicas.servers[0].app.load(made[0].table_id, presence=False)
        assert sorted(s.bot_level for s in rec.seats if s.bot_level) == [level, level]
        assert {s.token_hash for s in rec.seats if s.token_hash} == {hash_token(t) for t in tokens}


async def test_windows_widen_with_the_time_waited() -> None:
    clock = FakeClock()
    directory = GuestDirectory()
    tokens = [secrets.token_urlsafe(16) for _ in range(4)]
    for token, shown in zip(tokens, (1200, 1450, 1600, 1650), strict=True):
        rated(directory, token, shown)
    async with inprocess_replicas(
        1, clock=clock, directory=directory, matchmaking_deadline_s=1000.0, ticket_ttl_s=3600.0
    ) as replicas:
        await stop_matchers(replicas)
        stub = replicas.stubs[0]
        mm = replicas.servers[0].matchmaker
        assert mm is not None
        ids = [await find(stub, t) for t in tokens]
        calls = [
            stub.WatchTicket(service_pb2.WatchTicketRequest(ticket_id=i), metadata=auth(t))
            for t, i in zip(tokens, ids, strict=True)
        ]
        for call in calls:
            await call.read()
        assert await mm.run_pass() == []  # no four within +-100
        clock.advance(15.0)
        assert await mm.run_pass() == []  # nor at +-200
        clock.advance(15.0)
        made = await mm.run_pass()  # +-400 after 30 s: the four sit together
        assert len(made) == 1
        ratings = [round(e.rating) for e in made[0].seats]
        # the fairest split: the strongest with the weakest, partners opposite
        assert {frozenset(ratings[0::2]), frozenset(ratings[1::2])} == {
            frozenset((1200, 1650)),
            frozenset((1450, 1600)),
        }
        for call in calls:
            assert (await last_of(call)).table_id == made[0].table_id


async def last_of(call: Any) -> matchmaking_pb2.TicketMatched:
    """Read a WatchTicket stream to its end: its last message, a TicketMatched."""
    last = None
    while True:
        item = await call.read()
        if item is grpc.aio.EOF:  # type: ignore[attr-defined]
            break
        last = item
    assert last is not None and last.WhichOneof("progress") == "matched"
    return last.matched


async def _error(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        got = call
        if hasattr(got, "__aiter__"):
            [i async for i in got]
        else:
            await got
    return err.value


async def test_bad_input_is_refused_with_its_reason() -> None:
    async with inprocess_replicas(1) as replicas:
        stub = replicas.stubs[0]
        me, other = await new_player(stub), await new_player(stub)
        unknown = secrets.token_urlsafe(16)
        err = await _error(
            stub.FindMatch(service_pb2.FindMatchRequest(mode="4p"), metadata=auth(unknown))
        )
        assert err.code() == Code.UNAUTHENTICATED and registered_reason(err) == "UNKNOWN_PLAYER"
        assert unknown not in (err.details() or "")
        for mode in ("", "5p", "4P", "parejas"):
            err = await _error(
                stub.FindMatch(service_pb2.FindMatchRequest(mode=mode), metadata=auth(me))
            )
            assert (
                err.code() == Code.INVALID_ARGUMENT and registered_reason(err) == "INVALID_ARGUMENT"
            )
        err = await _error(stub.FindMatch(service_pb2.FindMatchRequest(mode="4p")))
        assert err.code() == Code.UNAUTHENTICATED and registered_reason(err) == "TOKEN_REQUIRED"
        ticket = await find(stub, me)
        assert await find(stub, me) == ticket  # again in the same mode: the same ticket
        err = await _error(
            stub.FindMatch(service_pb2.FindMatchRequest(mode="2p"), metadata=auth(me))
        )
        assert err.code() == Code.FAILED_PRECONDITION and registered_reason(err) == "ALREADY_QUEUED"
        assert me not in (err.details() or "")
        cases = [
            ("", me, Code.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
            ("x" * 65, me, Code.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
            ("0123456789abcdef", me, Code.NOT_FOUND, "TICKET_NOT_FOUND"),
            ("not-a-ticket", me, Code.NOT_FOUND, "TICKET_NOT_FOUND"),
            (ticket, other, Code.PERMISSION_DENIED, "NOT_YOUR_TICKET"),
            (ticket, None, Code.UNAUTHENTICATED, "TOKEN_REQUIRED"),
            (ticket, unknown, Code.UNAUTHENTICATED, "UNKNOWN_PLAYER"),
        ]
        for ticket_id, token, code, reason in cases:
            md = auth(token) if token else None
            err = await _error(
                stub.WatchTicket(service_pb2.WatchTicketRequest(ticket_id=ticket_id), metadata=md)
            )
            assert (err.code(), registered_reason(err)) == (code, reason), ticket_id
        # the refused watches left the ticket waiting
        assert replicas.servers[0].matchmaker is not None
        queued = await replicas.servers[0].app.store.tickets().get(ticket, replicas.clock())
        assert queued is not None and queued.state == "waiting"


async def test_a_claim_whose_replica_died_before_seating_is_seated_by_the_watcher(
    store_url: str,
) -> None:
    """The claim stores the whole plan: a replica that claims and dies before it makes the
    table leaves a plan that the ticket's watcher, on another replica, seats itself; that
    seating holds its players (FindMatch on any replica refuses them while it is played)."""
    clock = FakeClock()
    async with inprocess_replicas(
        2, store_url=store_url, clock=clock, matchmaking_deadline_s=1000.0
    ) as replicas:
        await stop_matchers(replicas)
        a, b = replicas.stubs
        dead, alive = replicas.servers
        assert dead.matchmaker is not None and alive.matchmaker is not None
        tokens = [await new_player(a) for _ in range(2)]
        ids = [await find(a, t, "2p") for t in tokens]
        calls = [
            b.WatchTicket(service_pb2.WatchTicketRequest(ticket_id=i), metadata=auth(t))
            for t, i in zip(tokens, ids, strict=True)
        ]
        for call in calls:
            await call.read()
        plan = await claim_without_seating(replicas, "2p")  # the "dead" replica's pass
        ends = [await last_of(call) for call in calls]
        assert {e.table_id for e in ends} == {plan.table_id}
        rec = await alive.app.load(plan.table_id, presence=False)
        assert {s.token_hash for s in rec.seats} == {hash_token(t) for t in tokens}
        assert rec.status == "playing"
        # the watcher's seating recorded the table for its players: no replica queues them
        for stub in (a, b):
            for token in tokens:
                await refused_seated(stub, token, "2p", plan.table_id)
        assert await dead.app.store.tickets().waiting("2p", clock()) == []


async def claim_without_seating(replicas: InProcessReplicas, mode: str) -> Plan:
    """A pass of the first replica cut after its claim (as if it died then): the plan of the
    one group waiting in ``mode``, claimed, its table not made."""
    mm, clock = replicas.servers[0].matchmaker, replicas.clock
    assert mm is not None
    waiting = await replicas.servers[0].app.store.tickets().waiting(mode, clock())
    groups = matcher.plan(MODES[mode], candidates(waiting), clock(), 1000.0)
    assert len(groups) == 1
    plan = Plan(secrets.token_hex(8), mode, groups[0].seats)
    assert await mm.claim(groups[0].ticket_ids, plan, clock())
    return plan


async def refused_seated(stub: Stub, token: str, mode: str, table_id: str) -> None:
    err = await _error(
        stub.FindMatch(service_pb2.FindMatchRequest(mode=mode), metadata=auth(token))
    )
    assert (err.code(), registered_reason(err)) == (Code.FAILED_PRECONDITION, "ALREADY_SEATED")
    info = error_info(err)
    assert info is not None and info.metadata["table_id"] == table_id


async def test_findmatch_between_the_claim_and_the_seating_returns_the_matched_ticket(
    store_url: str,
) -> None:
    """Two players claimed together, their table not made yet (the claiming replica stopped
    before seating): FindMatch again, on any replica, returns each its matched ticket, whose
    WatchTicket (a second device's) ends at once with the plan's table and seat; no second
    ticket waits, so no pass seats them twice. Once seated the ALREADY_SEATED guard holds;
    once the match is over they queue again at once, one new ticket each however many calls
    race, though the matched tickets are still kept."""
    clock = FakeClock()
    async with inprocess_replicas(
        2,
        store_url=store_url,
        clock=clock,
        matchmaking_deadline_s=1000.0,
        ranked_leave_cooldown_s=0.0,
    ) as replicas:
        await stop_matchers(replicas)
        a, b = replicas.stubs
        tokens = [await new_player(a) for _ in range(2)]
        ids = [await find(a, t, "2p") for t in tokens]
        plan = await claim_without_seating(replicas, "2p")
        for stub in (a, b):  # the player's other device, or a retry, on either replica
            assert [await find(stub, t, "2p") for t in tokens] == ids
        tickets = replicas.servers[1].app.store.tickets()
        assert [await tickets.count(m) for m in ("2p", "3p", "4p")] == [0, 0, 0]
        for srv in replicas.servers:  # nothing waits: no second table for them
            assert srv.matchmaker is not None and await srv.matchmaker.run_pass() == []
        by_player = {}
        for token, ticket_id in zip(tokens, ids, strict=True):
            ends = [await watch_to_the_end(stub, token, ticket_id) for stub in (b, a)]
            assert [len(e) for e in ends] == [1, 1]  # matched at once, on both devices
            m = ends[0][-1].matched
            assert (m.table_id, m.seat) == (ends[1][-1].matched.table_id, ends[1][-1].matched.seat)
            by_player[token] = m
        assert {m.table_id for m in by_player.values()} == {plan.table_id}
        rec = await replicas.servers[0].app.load(plan.table_id, presence=False)
        assert rec.status == "playing"
        assert {hash_token(t): m.seat for t, m in by_player.items()} == {
            s.token_hash: i for i, s in enumerate(rec.seats)
        }
        for token in tokens:  # seated: the player store's guard
            await refused_seated(b, token, "2p", plan.table_id)

        await a.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=plan.table_id), metadata=auth(tokens[0])
        )
        assert (await replicas.servers[0].app.load(plan.table_id, presence=False)).status == (
            "finished"
        )
        # over: a new waiting ticket at once, one per player however many calls race
        again = await asyncio.gather(*(find((a, b)[i % 2], tokens[i % 2], "2p") for i in range(8)))
        assert len(set(again[0::2])) == len(set(again[1::2])) == 1
        assert not set(again) & set(ids)
        assert await tickets.count("2p") == 2
        for old, new in zip(ids, again[:2], strict=True):
            kept = await tickets.get(old, clock())
            assert kept is not None and kept.state == "matched"  # still kept, yet replaced
            queued = await tickets.get(new, clock())
            assert queued is not None and queued.state == "waiting"


async def test_findmatch_in_another_mode_between_the_claim_and_the_seating_is_refused(
    store_url: str,
) -> None:
    """A player claimed in 2p, its table not made yet, asks for 4p: FAILED_PRECONDITION
    ALREADY_SEATED naming the plan's table, which the refusal seats (it exists, with the
    player in its seat); no 4p ticket is queued, and the player's WatchTicket ends with that
    table."""
    clock = FakeClock()
    async with inprocess_replicas(
        2, store_url=store_url, clock=clock, matchmaking_deadline_s=1000.0
    ) as replicas:
        await stop_matchers(replicas)
        a, b = replicas.stubs
        tokens = [await new_player(a) for _ in range(2)]
        ids = [await find(a, t, "2p") for t in tokens]
        plan = await claim_without_seating(replicas, "2p")
        await refused_seated(b, tokens[0], "4p", plan.table_id)
        rec = await replicas.servers[1].app.load(plan.table_id, presence=False)
        assert rec.status == "playing"
        assert {s.token_hash for s in rec.seats} == {hash_token(t) for t in tokens}
        await refused_seated(a, tokens[1], "3p", plan.table_id)
        tickets = replicas.servers[0].app.store.tickets()
        assert [await tickets.count(m) for m in ("2p", "3p", "4p")] == [0, 0, 0]
        for token, ticket_id in zip(tokens, ids, strict=True):
            (end,) = await watch_to_the_end(b, token, ticket_id)
            assert end.matched.table_id == plan.table_id
            assert rec.seats[end.matched.seat].token_hash == hash_token(token)


async def test_64_players_on_two_replica_processes_on_redis(redis_url: str, tmp_path: Path) -> None:
    """Two ``tute-server`` processes on one Redis, each running its matcher: 64 players queue
    at once, half on each; each is seated exactly once."""
    players = f"sqlite://{tmp_path / 'players.db'}"  # one player store, as one database
    started = await start_replicas(
        redis_url, tmp_path, 2, "--matchmaking-poll-s", "0.05", "--players", players
    )
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{r.port}") for r in started]
    try:
        stubs = [Stub(ch) for ch in channels]
        tokens = [await new_player(stubs[i % 2]) for i in range(64)]

        async def one(i: int, token: str) -> matchmaking_pb2.TicketMatched:
            stub = stubs[i % 2]
            return await last_of(
                stub.WatchTicket(
                    service_pb2.WatchTicketRequest(ticket_id=await find(stub, token)),
                    metadata=auth(token),
                )
            )

        async with asyncio.timeout(60):
            matched = await asyncio.gather(*(one(i, t) for i, t in enumerate(tokens)))
        assert len({(m.table_id, m.seat) for m in matched}) == 64
        tables = Counter(m.table_id for m in matched)
        assert len(tables) == 16 and set(tables.values()) == {4}
        for i, (m, token) in enumerate(zip(matched, tokens, strict=True)):
            view = (
                await stubs[(i + 1) % 2].GetTable(
                    service_pb2.GetTableRequest(table_id=m.table_id), metadata=auth(token)
                )
            ).view
            assert view.my_seat == m.seat
    finally:
        for ch in channels:
            await ch.close(None)
        for r in started:
            await r.stop()
