"""Turn timers and server-side bots.

- A human who does nothing is played for when the turn time runs out: ``TurnTimedOut`` then
  ``CardPlayed`` with ``timed_out``, the card being the engine's cheapest legal card; the
  deadline is in the view and in ``TurnStarted``; each timeout happens once, even with two
  replicas (two servers on one store) whose schedulers both watch the table.
- ``turn_time_s = 0``: no deadline and no timeout.
- Tables of bots only finish their match with nobody at the keyboard.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import engine
from service.tables.scheduler import Alarm
from tests.support.clock import FakeClock
from tests.support.replicas import inprocess_replicas, inprocess_stubs
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc, table_pb2

from .helpers import FINISHED, auth, table_with_humans, view_of
from .matchplay import Watcher, assert_gap_free, card, kind, replay

Stub = service_pb2_grpc.TuteServiceStub


def timed_out_count(w: Watcher) -> int:
    return sum(kind(e) == "turn_timed_out" for e in w.events)


async def test_a_silent_player_times_out_exactly_once_per_turn() -> None:
    clock = FakeClock()
    async with inprocess_replicas(2, clock=clock) as r:
        one, two = r.stubs
        seated = await table_with_humans(one, "corriente-6", turn_time_s=1)
        tid = seated.table_id
        watchers = {s: Watcher(two, tid, t, resume_after=0) for s, t in seated.tokens.items()}
        try:
            spectator = await view_of(one, tid, None)
            assert spectator.rules.options.turn_time_s == 1
            assert spectator.HasField("turn_deadline")
            left = spectator.turn_deadline.ToNanoseconds() / 1e9 - clock.now()
            assert 0 < left <= 1.05
            # Nobody plays: two turns time out (one lead, one follow), each once its clock
            # has run out.
            for n in (1, 2):
                clock.advance(1.001)
                await watchers[0].wait_until(lambda w, n=n: timed_out_count(w) >= n, timeout=6)
            # Then the player on turn acts in time: that turn does not time out.
            turn = (await view_of(one, tid, None)).turn_seat
            mine = await view_of(two, tid, seated.tokens[turn])
            assert mine.HasField("turn_deadline")
            assert mine.turn_deadline.ToNanoseconds() / 1e9 > clock.now()
            played = await one.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=tid, action=mine.legal_actions[0], expected_version=mine.version
                ),
                metadata=auth(seated.tokens[turn]),
            )
            clock.advance(0.5)  # within the next turn's time: no timeout
            await r.scheduler_pass(tid)
            final = await view_of(one, tid, seated.tokens[0])
            for w in watchers.values():
                await w.wait_for_seq(final.last_event_sequence)
        finally:
            for w in watchers.values():
                await w.close()

    events = watchers[0].events
    assert_gap_free(events, 1, len(events))
    timeouts = [i for i, e in enumerate(events) if kind(e) == "turn_timed_out"]
    auto = [e for e in events if kind(e) == "card_played" and e.card_played.timed_out]
    assert len(timeouts) == len(auto) >= 2
    turns = [e for e in events if kind(e) == "turn_started"]
    for i in timeouts:
        ev, nxt = events[i], events[i + 1]
        assert kind(nxt) == "card_played" and nxt.card_played.timed_out
        assert nxt.card_played.seat == ev.turn_timed_out.seat
        assert nxt.table_version == ev.table_version  # one commit
        # The turn that timed out began with a deadline the timeout respected.
        started = [t for t in turns if t.sequence < ev.sequence][-1].turn_started
        assert started.seat == ev.turn_timed_out.seat
        assert ev.time.ToNanoseconds() >= started.deadline.ToNanoseconds()
        assert ev.time.ToNanoseconds() - started.deadline.ToNanoseconds() < 0.5e9
    # Exactly once: never two timeouts of the same turn.
    keys = [
        (e.turn_timed_out.seat, e.turn_timed_out.trick_number)
        for e in (events[i] for i in timeouts)
    ]
    assert len(keys) == len(set(keys))
    # Every turn carried a deadline turn_time_s after it began.
    for e in turns:
        gap = e.turn_started.deadline.ToNanoseconds() - e.time.ToNanoseconds()
        assert abs(gap - 1e9) < 1e6, gap
    # The card played at the deadline is the engine's cheapest legal card (checked in replay).
    rep = replay(
        engine.Rules.preset("corriente-6", turn_time_s=1),
        {s: w.events for s, w in watchers.items()},
    )
    assert rep.timeouts == len(timeouts)
    # The human's own card was not marked, and the view marks the cards played on timeout.
    assert not any(e.card_played.timed_out for e in played.events if kind(e) == "card_played")
    auto_cards = {card(e.card_played.card) for e in auto}
    view_tricks = [*final.completed_tricks, final.current_trick]
    marked = {card(p.card) for t in view_tricks for p in t.cards if p.timed_out}
    assert marked == auto_cards & {card(p.card) for t in view_tricks for p in t.cards}
    assert final.HasField("turn_deadline")


async def test_no_clock_means_no_timeout() -> None:
    clock = FakeClock()
    async with inprocess_replicas(1, clock=clock) as r:
        (stub,) = r.stubs
        seated = await table_with_humans(stub, "corriente-6", turn_time_s=0)
        tid = seated.table_id
        watcher = Watcher(stub, tid, resume_after=0)
        try:
            view = await view_of(stub, tid, None)
            assert view.rules.options.turn_time_s == 0
            assert not view.HasField("turn_deadline")
            clock.advance(1.3)
            await r.scheduler_pass(tid)
            after = await view_of(stub, tid, None)
            assert after.version == view.version
            await watcher.wait_for_seq(after.last_event_sequence)
        finally:
            await watcher.close()
    turns = [e.turn_started for e in watcher.events if kind(e) == "turn_started"]
    assert turns and not any(t.HasField("deadline") for t in turns)
    assert not any(kind(e) == "turn_timed_out" for e in watcher.events)


async def test_the_default_clock_is_30_seconds() -> None:
    clock = FakeClock()
    async with inprocess_stubs(1, clock=clock) as (stub,):
        seated = await table_with_humans(stub, "parejas")
        view = await view_of(stub, seated.table_id, None)
    assert view.rules.options.turn_time_s == 30
    left = view.turn_deadline.ToNanoseconds() / 1e9 - clock.now()
    assert 28 < left <= 30


async def bots_only(stub: Stub, preset: str, **options: Any) -> str:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(**options))
        )
    )
    for i in range(len(created.table.seats)):
        added = await stub.AddBot(
            service_pb2.AddBotRequest(table_id=created.table_id), metadata=auth(created.owner_token)
        )
        assert added.seat == i
        assert added.table.seats[i].occupant == table_pb2.OCCUPANT_KIND_BOT
        assert added.table.seats[i].bot_level == "random"
    return str(created.table_id)


async def _watch_to_the_end(stub: Stub, table_id: str) -> list[Any]:
    """The table's events until its match ended (within 20 s)."""
    watcher = Watcher(stub, table_id, resume_after=0)
    try:
        await watcher.wait_until(
            lambda w: any(kind(e) == "match_ended" for e in w.events), timeout=20
        )
    finally:
        await watcher.close()
    return watcher.events


@pytest.mark.parametrize("preset", ["parejas", "corriente-8", "tres"])
async def test_bots_finish_a_match_with_nobody_at_the_keyboard(stub, preset: str) -> None:
    # The bots play at once; a short clock must not matter (bots are never timed out).
    tid = await bots_only(stub, preset, turn_time_s=1)
    watcher = Watcher(stub, tid, resume_after=0)
    try:
        await watcher.wait_until(
            lambda w: any(kind(e) == "match_ended" for e in w.events), timeout=20
        )
        final = await view_of(stub, tid, None)
    finally:
        await watcher.close()
    assert final.status == FINISHED
    assert all(s.occupant == table_pb2.OCCUPANT_KIND_BOT for s in final.seats)
    assert final.match_result.winner_sides
    events = watcher.events
    assert_gap_free(events, 1, final.last_event_sequence)
    assert kind(events[-1]) == "match_ended"
    assert not any(kind(e) == "turn_timed_out" for e in events)
    ended = events[-1].match_ended.result
    assert list(ended.winner_sides) == list(final.match_result.winner_sides)
    assert [s.match_points for s in ended.scores] == [s.match_points for s in final.scores]
    # A spectator saw the bots' cards only when they were played.
    assert all(not e.hand_dealt.hand for e in events if kind(e) == "hand_dealt")


async def test_bots_play_on_two_replicas_without_double_moves() -> None:
    """Two schedulers on one store: each bot turn is played once (gap-free, one card a turn)."""
    async with inprocess_stubs(2) as (one, two):
        events = await _watch_to_the_end(two, await bots_only(one, "corriente-6"))
    assert_gap_free(events, 1, events[-1].sequence)
    turn = None
    for e in events:
        if kind(e) == "turn_started":
            turn = e.turn_started.seat
        elif kind(e) == "card_played":
            assert e.card_played.seat == turn, "a card from a seat not on turn"
            turn = None  # one card per turn


async def test_a_commit_wakes_its_scheduler_whatever_the_poll() -> None:
    """A bot's turn that a commit makes due wakes that replica's scheduler, for when it is due
    (each bot waits ``bot_delay_s``): with a poll of a minute, a match of bots still plays out
    at the bots' pace (each move's commit makes the next bot's turn due)."""
    async with inprocess_stubs(1, scheduler_poll_s=60.0, bot_delay_s=0.01) as (stub,):
        events = await _watch_to_the_end(stub, await bots_only(stub, "corriente-6"))
    assert kind(events[-1]) == "match_ended"


def test_the_alarm_wakes_a_sleeping_scheduler_only_for_a_sooner_table() -> None:
    """During a look commits do not wake the scheduler (under load it would look without
    end); the soonest due time they made bounds the sleep after it. Asleep, it wakes for a
    table due before its next look only."""
    alarm = Alarm()
    alarm.looking()
    alarm.due(130.0)  # a human's turn clock, committed during the look
    alarm.due(100.5)  # a bot's turn
    assert not alarm.event.is_set()
    assert alarm.soonest == 100.5
    alarm.sleep_until(100.5)
    alarm.due(131.0)
    assert not alarm.event.is_set()
    alarm.due(100.2)
    assert alarm.event.is_set()
    alarm.looking()  # the look serves every wake before it
    assert not alarm.event.is_set() and alarm.soonest == math.inf
