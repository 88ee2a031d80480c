"""A seat's WatchTable streams belong to the seat's occupancy, not to a token that once opened it.

A player who leaves (before the match or during it) or forfeits loses its seat: its token is
refused everywhere (PERMISSION_DENIED NOT_SEATED) and its open streams end with PERMISSION_DENIED
SEAT_LOST right after the event that ended the occupancy, on every replica, so they never get
a private copy meant for whoever sits there next (human or bot). Presence counts only such
live streams of the current occupant. Seated players always have room for their own streams:
spectators have their own cap per table.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import grpc
import pytest

from service.server import Server
from tests.support.replicas import inprocess_stubs
from tests.support.wait import eventually
from tute.v1 import event_pb2, rules_pb2, score_pb2, service_pb2

from .helpers import (
    FINISHED,
    Seated,
    Stub,
    auth,
    error_info,
    play_random_until_over,
    table_with_humans,
    view_of,
)
from .matchplay import Watcher, kind

Code = grpc.StatusCode
GRACE = 0.4


def rules(preset: str = "corriente-6", **options: Any) -> rules_pb2.Rules:
    return rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(turn_time_s=0, **options))


async def expect_denied(call, reason: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() == Code.PERMISSION_DENIED, caught.value.details()
    info = error_info(caught.value)
    assert info is not None and info.reason == reason, info


async def expect_seat_lost(w: Watcher, timeout: float = 5.0) -> None:
    """The stream ends (by itself) with PERMISSION_DENIED SEAT_LOST."""
    await asyncio.wait_for(asyncio.shield(w.task), timeout)
    assert w.error is not None, "the stream did not end with an error"
    assert w.error.code() == Code.PERMISSION_DENIED, w.error.details()
    info = error_info(w.error)
    assert info is not None and info.reason == "SEAT_LOST", info


async def old_token_is_refused(stub: Stub, table_id: str, token: str) -> None:
    """Every call with a token whose seat was lost: PERMISSION_DENIED NOT_SEATED."""
    md = auth(token)
    await expect_denied(
        stub.GetTable(service_pb2.GetTableRequest(table_id=table_id), metadata=md), "NOT_SEATED"
    )
    await expect_denied(
        stub.LeaveTable(service_pb2.LeaveTableRequest(table_id=table_id), metadata=md), "NOT_SEATED"
    )
    view = await view_of(stub, table_id, None)
    action = view.legal_actions[0] if view.legal_actions else None
    req = service_pb2.SubmitActionRequest(table_id=table_id)
    if action is None:
        req.action.sing = 1  # type: ignore[assignment]
    else:
        req.action.CopyFrom(action)
    await expect_denied(stub.SubmitAction(req, metadata=md), "NOT_SEATED")
    await expect_denied(
        stub.WatchTable(service_pb2.WatchTableRequest(table_id=table_id), metadata=md).read(),
        "NOT_SEATED",
    )
    resume = service_pb2.WatchTableRequest(table_id=table_id, resume_after=0)
    await expect_denied(stub.WatchTable(resume, metadata=md).read(), "NOT_SEATED")


# ---------------------------------------------------------------------------------------------
# the leak: a stream left open after LeaveTable, and the seat taken again
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_replicas", [1, 2])
@pytest.mark.parametrize("next_occupant", ["human", "bot"])
async def test_a_stale_stream_gets_nothing_of_the_next_occupant(
    n_replicas: int, next_occupant: str
) -> None:
    async with inprocess_stubs(n_replicas) as stubs:
        one, two = stubs[0], stubs[-1]  # the stale streams live on the other replica
        created = await one.CreateTable(service_pb2.CreateTableRequest(rules=rules()))
        tid = created.table_id
        victim = await one.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, seat=1, display_name="victim")
        )
        stale = Watcher(two, tid, victim.seat_token)
        stale_resumed = Watcher(two, tid, victim.seat_token, resume_after=0)
        await stale.wait_until(lambda w: bool(w.snapshots))
        await stale_resumed.wait_for_seq(victim.view.last_event_sequence)
        left = await one.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(victim.seat_token)
        )
        assert not left.forfeited
        await old_token_is_refused(two, tid, victim.seat_token)
        # Somebody else takes the seat, then the match starts.
        if next_occupant == "human":
            nxt = await one.JoinTable(
                service_pb2.JoinTableRequest(table_id=tid, seat=1, display_name="next")
            )
            assert nxt.seat == 1
            # nobody watches as the new occupant: the seat is not "connected"
            assert not (await view_of(two, tid, None)).seats[1].connected
        else:
            await one.AddBot(
                service_pb2.AddBotRequest(table_id=tid, seat=1), metadata=auth(created.owner_token)
            )
        first = await one.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, seat=0, display_name="first")
        )
        view = await view_of(one, tid, first.seat_token)
        assert view.status == 2 and len(view.hand) == 6  # playing, the hands are dealt
        if next_occupant == "human":
            assert len((await view_of(one, tid, nxt.seat_token)).hand) == 6
        # The old token still opens nothing, and the stale streams got nothing of the match:
        # they ended right after their SeatLeft.
        await old_token_is_refused(two, tid, victim.seat_token)
        for w in (stale, stale_resumed):
            await w.wait_until(lambda w: w.done or w.last_seq >= view.last_event_sequence)
            got = [kind(e) for e in w.events]
            assert not {"hand_dealt", "card_drawn", "match_started"} & set(got), got
            await expect_seat_lost(w)
            assert kind(w.events[-1]) == "seat_left" and w.events[-1].seat_left.seat == 1


async def test_presence_left_by_an_earlier_occupant_never_counts(
    server: Server, stub: Stub
) -> None:
    """Even a stale stream that never read on (so never saw its SeatLeft) cannot make the
    seat's next occupant "connected": presence is registered under the occupancy."""
    app = server.app
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(rules=rules("tres"), take_seat=True, display_name="ana")
    )
    tid = created.table_id
    victim = await stub.JoinTable(
        service_pb2.JoinTableRequest(table_id=tid, seat=1, display_name="b")
    )
    old = (await app.load(tid)).seats[1].occupancy()
    assert old
    await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(victim.seat_token)
    )
    far = app.clock() + 3600
    await app.store.set_presence(tid, f"{old}.planted", 1, far)
    assert not (await view_of(stub, tid, None)).seats[1].connected  # an empty seat
    nxt = await stub.JoinTable(service_pb2.JoinTableRequest(table_id=tid, seat=1, display_name="c"))
    assert not (await view_of(stub, tid, None)).seats[1].connected
    assert 1 not in (await app.load(tid)).connected
    # the same entry under the current occupancy does count (the check can fail)
    current = (await app.load(tid)).seats[1].occupancy()
    assert current and current != old
    await app.store.set_presence(tid, f"{current}.planted", 1, far)
    assert (await view_of(stub, tid, nxt.seat_token)).seats[1].connected
    await app.store.clear_presence(tid, f"{current}.planted")
    assert not (await view_of(stub, tid, None)).seats[1].connected
    # a watcher id without an occupancy (a replica of an earlier version) counts for the seat
    await app.store.set_presence(tid, "0123abcd", 1, far)
    assert (await view_of(stub, tid, None)).seats[1].connected


async def test_a_stale_stream_does_not_stop_the_disconnect_forfeit() -> None:
    async with inprocess_stubs(2, disconnect_forfeit_s=GRACE) as (one, two):
        created = await one.CreateTable(
            service_pb2.CreateTableRequest(rules=rules("tres"), take_seat=True, display_name="ana")
        )
        tid = created.table_id
        mine = Watcher(one, tid, created.seat_token)
        await mine.wait_until(lambda w: bool(w.snapshots))
        victim = await one.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, seat=1, display_name="b")
        )
        # no wait: the stream must end however far it got when the seat is lost
        stale = Watcher(two, tid, victim.seat_token)
        await stale.wait_until(lambda w: bool(w.snapshots))
        await one.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(victim.seat_token)
        )
        # The next occupant never opens a stream: away from the start, then forfeited.
        nxt = await one.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, seat=1, display_name="c")
        )
        await one.AddBot(
            service_pb2.AddBotRequest(table_id=tid, seat=2),  # the match starts
            metadata=auth(created.owner_token),
        )
        await mine.wait_until(lambda w: any(kind(e) == "player_forfeited" for e in w.events))
        (forfeit,) = [e.player_forfeited for e in mine.events if kind(e) == "player_forfeited"]
        assert (forfeit.seat, forfeit.reason) == (1, event_pb2.FORFEIT_REASON_DISCONNECTED)
        await expect_seat_lost(stale)
        await old_token_is_refused(one, tid, nxt.seat_token)  # forfeited: refused as well
        await mine.close()


@pytest.mark.parametrize("how", ["leave", "disconnect"])
async def test_a_forfeit_ends_the_forfeiters_streams_and_revokes_its_token(how: str) -> None:
    grace = GRACE if how == "disconnect" else 0.0
    async with inprocess_stubs(2, disconnect_forfeit_s=grace) as (one, two):
        seated = await table_with_humans(one, "tres", turn_time_s=0)
        tid = seated.table_id
        watchers = {s: Watcher(two if s == 1 else one, tid, t) for s, t in seated.tokens.items()}
        extra = Watcher(one, tid, seated.tokens[1])  # a second device of seat 1
        for w in (*watchers.values(), extra):
            await w.wait_until(lambda w: bool(w.snapshots))
        if how == "leave":
            left = await one.LeaveTable(
                service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(seated.tokens[1])
            )
            assert left.forfeited
        else:
            await watchers[1].close()
            await extra.close()
        await watchers[0].wait_until(
            lambda w: bool(w.events) and kind(w.events[-1]) == "match_ended"
        )
        reason = (
            event_pb2.FORFEIT_REASON_LEFT
            if how == "leave"
            else event_pb2.FORFEIT_REASON_DISCONNECTED
        )
        forfeit = [e for e in watchers[0].events if kind(e) == "player_forfeited"]
        assert [(e.player_forfeited.seat, e.player_forfeited.reason) for e in forfeit] == [
            (1, reason)
        ]
        if how == "leave":
            for w in (watchers[1], extra):
                await expect_seat_lost(w)
                assert kind(w.events[-1]) == "player_forfeited"
                assert w.events[-1].sequence == forfeit[0].sequence
        await old_token_is_refused(two, tid, seated.tokens[1])
        # The others keep their seats: their tokens read the finished table.
        for s in (0, 2):
            assert (await view_of(two, tid, seated.tokens[s])).status == FINISHED
            await watchers[s].close()
            assert watchers[s].error is None


# ---------------------------------------------------------------------------------------------
# stream caps: seats and spectators apart
# ---------------------------------------------------------------------------------------------


async def test_spectators_never_lock_a_seated_player_out() -> None:
    async with inprocess_stubs(1, disconnect_forfeit_s=GRACE) as (stub,):
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules(target_points=1), take_seat=True, display_name="ana"
            )
        )
        tid = created.table_id
        crowd = [Watcher(stub, tid) for _ in range(64)]  # the default spectator cap
        for w in crowd:
            await w.wait_until(lambda w: bool(w.snapshots))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.WatchTable(service_pb2.WatchTableRequest(table_id=tid)).read()
        assert caught.value.code() == Code.RESOURCE_EXHAUSTED
        assert error_info(caught.value).reason == "TOO_MANY_STREAMS"  # type: ignore[union-attr]
        joined = await stub.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, display_name="bob")
        )
        tokens = {0: created.seat_token, joined.seat: joined.seat_token}
        players = [Watcher(stub, tid, t) for t in tokens.values()]
        for w in players:
            await w.wait_until(lambda w: bool(w.snapshots))
        view = await view_of(stub, tid, None)
        assert view.status == 2 and all(s.connected for s in view.seats)
        # The players play the match to its end (by score, or by a tute the deal allowed):
        # nobody was forfeited.
        await play_random_until_over(stub, Seated(tid, tokens), random.Random(3))
        final = await view_of(stub, tid, None)
        assert final.match_result.reason in (
            score_pb2.MATCH_END_REASON_SCORE,
            score_pb2.MATCH_END_REASON_TUTE,
        )
        for w in players:
            await w.wait_for_seq(final.last_event_sequence)
            assert not any(kind(e) == "player_forfeited" for e in w.events)
        for w in (*crowd, *players):
            await w.close()
            assert w.error is None


async def test_a_seat_has_its_own_stream_cap_and_the_server_cap_is_for_spectators() -> None:
    async with inprocess_stubs(1, max_streams_per_seat=2, max_streams=3) as (stub,):
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(rules=rules("tres"), take_seat=True, display_name="ana")
        )
        tid = created.table_id
        joined = await stub.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, display_name="bob")
        )
        mine = [Watcher(stub, tid, created.seat_token) for _ in range(2)]
        spectators = [Watcher(stub, tid) for _ in range(1)]
        for w in (*mine, *spectators):
            await w.wait_until(lambda w: bool(w.snapshots))

        async def refused(token: str | None) -> None:
            call = stub.WatchTable(
                service_pb2.WatchTableRequest(table_id=tid), metadata=auth(token) if token else None
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call.read()
            assert caught.value.code() == Code.RESOURCE_EXHAUSTED
            assert error_info(caught.value).reason == "TOO_MANY_STREAMS"  # type: ignore[union-attr]

        await refused(created.seat_token)  # seat 0 holds its two
        # the server holds three streams: spectators are refused, the other seat is not
        theirs = [Watcher(stub, tid, joined.seat_token) for _ in range(2)]
        for w in theirs:
            await w.wait_until(lambda w: bool(w.snapshots))
        await refused(None)
        await refused(joined.seat_token)
        # closing one of a seat's streams gives that seat its place back (once the server
        # has seen it close)
        await mine[0].close()
        opened: list[Watcher] = []

        async def place_freed() -> bool:
            again = Watcher(stub, tid, created.seat_token)
            await again.wait_until(lambda w: bool(w.snapshots) or w.done)
            if again.snapshots:
                opened.append(again)
                return True
            assert again.error is not None and again.error.code() == Code.RESOURCE_EXHAUSTED
            return False

        await eventually(place_freed, what="the closed stream's place to be freed")
        for w in (mine[1], *spectators, *theirs, *opened):
            await w.close()
            assert w.error is None


def test_occupancies_and_expiry_are_stored_with_the_table() -> None:
    import json

    import engine
    from service.tables.model import (
        HUMAN,
        SeatInfo,
        TableRecord,
        Visibility,
        decode_record,
        encode_record,
    )

    rec = TableRecord(
        "t1",
        "tres",
        engine.PRESETS["tres"],
        Visibility.PUBLIC,
        "",
        1.0,
        [SeatInfo(HUMAN, "a", "h" * 64, "", 3), SeatInfo(), SeatInfo()],
        expires_at=612.5,
    )
    back = decode_record(encode_record(rec))
    assert back.seats == rec.seats and back.expires_at == 612.5
    assert back.seats[0].occupancy() == "3" and back.seats[1].occupancy() == ""
    # a record kept before occupancies were: each seat's is 0, and nothing expires
    old = json.loads(encode_record(rec))
    del old["since"], old["expires"]
    legacy = decode_record(json.dumps(old).encode())
    assert [s.since_seq for s in legacy.seats] == [0, 0, 0] and legacy.expires_at == 0.0
    assert legacy.seats[0].occupancy() == "0"
