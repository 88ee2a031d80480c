"""Abandonment by disconnection (RULES.md §11): ``disconnect_forfeit_s``.

A seated player with no open WatchTable stream (on any replica) for ``disconnect_forfeit_s``
during a match forfeits it: ``PlayerForfeited`` with reason ``DISCONNECTED``, then
``MatchEnded`` with the forfeit. A player back within the grace period keeps playing; a
player who never opened a stream counts as away from the start of the match; bots never do;
with the default 0 nobody is ever forfeited for it.
"""

from __future__ import annotations

import asyncio
import dataclasses

import grpc
import pytest

from service.server import create_server
from service.store.memory import MemoryStore
from tests.support.clock import FakeClock
from tests.support.replicas import InProcessReplicas, inprocess_replicas, inprocess_stubs
from tests.support.wait import eventually
from tute.v1 import event_pb2, rules_pb2, score_pb2, service_pb2, service_pb2_grpc

from .conftest import FAST
from .helpers import (
    FINISHED,
    Seated,
    auth,
    table_with_humans,
    view_of,
)
from .matchplay import Watcher, kind

Stub = service_pb2_grpc.TuteServiceStub
PLAYING = 2  # TABLE_STATUS_PLAYING
GRACE = 0.4


async def watched_table(
    stub: Stub, preset: str = "corriente-6"
) -> tuple[Seated, dict[int, Watcher]]:
    """Every seat taken and watched; no turn clock, so only the disconnection can end it."""
    seated = await table_with_humans(stub, preset, turn_time_s=0)
    watchers = {s: Watcher(stub, seated.table_id, t) for s, t in seated.tokens.items()}
    for w in watchers.values():
        await w.wait_until(lambda w: bool(w.snapshots))
    return seated, watchers


def forfeits(w: Watcher) -> list[event_pb2.PlayerForfeited]:
    return [e.player_forfeited for e in w.events if kind(e) == "player_forfeited"]


async def marked(r: InProcessReplicas, table_id: str, seat: int, *, away: bool = True) -> None:
    """Wait (bounded) until the table records ``seat`` away (or back): the stream's end is
    recorded by the server after the client closed it, at the clock's time then."""

    async def recorded() -> bool:
        rec = await r.servers[0].app.load(table_id, presence=False)
        return (seat in rec.away) == away

    await eventually(recorded, what=f"seat {seat} {'away' if away else 'back'}")


async def test_a_player_gone_beyond_the_grace_period_forfeits() -> None:
    clock = FakeClock()
    async with inprocess_replicas(1, clock=clock, disconnect_forfeit_s=GRACE) as r:
        (stub,) = r.stubs
        seated, watchers = await watched_table(stub)
        tid = seated.table_id
        t0 = clock.now()
        await watchers[1].close()  # seat 1 drops its stream and does not come back
        await marked(r, tid, 1)
        clock.advance(GRACE / 2)  # within the grace: nothing
        await r.scheduler_pass(tid)
        assert not forfeits(watchers[0])
        assert (await view_of(stub, tid, seated.tokens[0])).status == PLAYING
        clock.advance(GRACE / 2 + 0.001)
        await watchers[0].wait_until(
            lambda w: kind(w.events[-1]) == "match_ended" if w.events else False, timeout=30
        )
        waited = clock.now() - t0
        assert waited >= GRACE - 0.05, waited
        (forfeit,) = forfeits(watchers[0])
        assert forfeit.seat == 1
        assert forfeit.reason == event_pb2.FORFEIT_REASON_DISCONNECTED
        ended = watchers[0].events[-1].match_ended.result
        assert ended.reason == score_pb2.MATCH_END_REASON_FORFEIT
        assert ended.forfeited_seat == 1
        assert list(ended.winner_sides) == [0]
        view = await view_of(stub, tid, seated.tokens[0])
        assert view.status == FINISHED
        # The forfeit happened once, and the seat's token opens nothing any more.
        clock.advance(2 * GRACE)
        await r.scheduler_pass(tid)
        assert len(forfeits(watchers[0])) == 1
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await view_of(stub, tid, seated.tokens[1])
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        await watchers[0].close()


async def test_a_player_back_within_the_grace_period_plays_on() -> None:
    clock = FakeClock()
    async with inprocess_replicas(1, clock=clock, disconnect_forfeit_s=GRACE) as r:
        (stub,) = r.stubs
        seated, watchers = await watched_table(stub)
        tid = seated.table_id
        for _ in range(3):  # drops and comes back three times, each time within the grace
            await watchers[1].close()
            await marked(r, tid, 1)
            clock.advance(GRACE / 4)
            await r.scheduler_pass(tid)
            watchers[1] = Watcher(stub, tid, seated.tokens[1])
            await watchers[1].wait_until(lambda w: bool(w.snapshots))
            await marked(r, tid, 1, away=False)
        clock.advance(3 * GRACE)
        await r.scheduler_pass(tid)
        view = await view_of(stub, tid, seated.tokens[0])
        assert view.status == PLAYING
        assert all(seat.connected for seat in view.seats)
        assert not forfeits(watchers[0])
        # ...and a later disconnection still counts from its own start.
        await watchers[1].close()
        await marked(r, tid, 1)
        clock.advance(GRACE + 0.001)
        await watchers[0].wait_until(lambda w: bool(forfeits(w)), timeout=30)
        assert forfeits(watchers[0])[0].seat == 1
        await watchers[0].close()


async def test_a_player_who_never_watches_is_away_from_the_start() -> None:
    clock = FakeClock()
    async with inprocess_stubs(1, clock=clock, disconnect_forfeit_s=GRACE) as (stub,):
        rules = rules_pb2.Rules(preset="corriente-6", options=rules_pb2.RuleOptions(turn_time_s=0))
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="ana")
        )
        tid = created.table_id
        w0 = Watcher(stub, tid, created.seat_token)
        await w0.wait_until(lambda w: bool(w.snapshots))
        joined = await stub.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="p"))
        await w0.wait_until(lambda w: any(kind(e) == "hand_dealt" for e in w.events))
        clock.advance(GRACE + 0.001)
        await w0.wait_until(lambda w: bool(forfeits(w)), timeout=30)
        (forfeit,) = forfeits(w0)
        assert forfeit.seat == joined.seat
        assert forfeit.reason == event_pb2.FORFEIT_REASON_DISCONNECTED
        # Polling does not count as being there: the joiner's GetTable calls did not help.
        await w0.close()


async def test_only_the_players_without_a_stream_count() -> None:
    # Spectators come and go freely, and bots never forfeit; a human seat watched on the
    # other replica is there.
    clock = FakeClock()
    async with inprocess_replicas(2, clock=clock, disconnect_forfeit_s=GRACE) as r:
        one, two = r.stubs
        created = await one.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(
                    preset="parejas", options=rules_pb2.RuleOptions(turn_time_s=0)
                ),
                take_seat=True,
                display_name="p",
            )
        )
        tid = created.table_id
        mine = Watcher(two, tid, created.seat_token)  # the human watches on replica two
        await mine.wait_until(lambda w: bool(w.snapshots))
        for _ in range(3):
            await one.AddBot(
                service_pb2.AddBotRequest(table_id=tid), metadata=auth(created.owner_token)
            )
        spectator = Watcher(one, tid)
        await spectator.wait_until(lambda w: bool(w.snapshots))
        await spectator.close()
        # The bots play until the human's turn; then nothing happens for several graces.

        async def humans_turn() -> bool:
            return bool((await view_of(one, tid, created.seat_token)).legal_actions)

        await eventually(humans_turn, what="the human's turn")
        clock.advance(4 * GRACE)
        await r.scheduler_pass(tid)
        view = await view_of(one, tid, created.seat_token)
        assert view.status == PLAYING
        assert not forfeits(mine)
        await mine.close()


async def test_the_default_never_forfeits_for_a_disconnection() -> None:
    clock = FakeClock()
    async with inprocess_replicas(1, clock=clock) as r:
        (stub,) = r.stubs
        seated, watchers = await watched_table(stub)
        await watchers[1].close()
        clock.advance(1.0)
        await r.scheduler_pass(seated.table_id)
        view = await view_of(stub, seated.table_id, seated.tokens[0])
        assert view.status == PLAYING
        assert not forfeits(watchers[0])
        await watchers[0].close()


async def test_leaving_is_a_forfeit_with_reason_left() -> None:
    async with inprocess_stubs(1, disconnect_forfeit_s=GRACE) as (stub,):
        seated, watchers = await watched_table(stub)
        await stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=seated.table_id),
            metadata=auth(seated.tokens[0]),
        )
        await watchers[1].wait_until(lambda w: bool(forfeits(w)), timeout=30)
        (forfeit,) = forfeits(watchers[1])
        assert (forfeit.seat, forfeit.reason) == (0, event_pb2.FORFEIT_REASON_LEFT)
        for w in watchers.values():
            await w.close()


async def test_a_player_whose_replica_went_away_is_caught_by_its_turn_clock() -> None:
    # Seat 1 watched on a replica that stopped, and does not come back elsewhere. Its stream
    # ended in a shutdown, which marks nobody away (players resume on another replica): its
    # next timed-out turn does, and the grace period runs from there.
    conf = dataclasses.replace(FAST, disconnect_forfeit_s=GRACE)
    store = MemoryStore()
    one_srv = await create_server(conf, store=store)
    two_srv = await create_server(conf, store=store)
    async with (
        grpc.aio.insecure_channel(f"127.0.0.1:{one_srv.port}") as ch1,
        grpc.aio.insecure_channel(f"127.0.0.1:{two_srv.port}") as ch2,
    ):
        one, two = Stub(ch1), Stub(ch2)
        try:
            seated = await table_with_humans(one, "corriente-6", turn_time_s=1)
            tid = seated.table_id
            w0 = Watcher(one, tid, seated.tokens[0])
            w1 = Watcher(two, tid, seated.tokens[1])
            for w in (w0, w1):
                await w.wait_until(lambda w: bool(w.snapshots))
            await two_srv.shutdown()
            if not w1.done:
                await asyncio.wait_for(w1.task, 30)
            assert (await view_of(one, tid, None)).status == PLAYING
            await w0.wait_until(lambda w: bool(forfeits(w)), timeout=30)
            (forfeit,) = forfeits(w0)
            assert (forfeit.seat, forfeit.reason) == (1, event_pb2.FORFEIT_REASON_DISCONNECTED)
            # Seat 1 was forfeited after one of its turns timed out, not before.
            timed_out = [e.turn_timed_out.seat for e in w0.events if kind(e) == "turn_timed_out"]
            assert 1 in timed_out
            await w0.close()
        finally:
            await one_srv.shutdown()
            await two_srv.shutdown()


def test_the_away_marks_are_stored_with_the_table() -> None:
    import engine
    from service.tables.model import (
        SeatInfo,
        TableRecord,
        Visibility,
        decode_record,
        encode_record,
    )

    rec = TableRecord(
        "t1",
        "parejas",
        engine.PRESETS["parejas"],
        Visibility.PUBLIC,
        "",
        1.0,
        [SeatInfo() for _ in range(4)],
        away={1: 12.5, 3: 14.0},
    )
    assert decode_record(encode_record(rec)).away == {1: 12.5, 3: 14.0}
    rec.away = {}
    assert decode_record(encode_record(rec)).away == {}
