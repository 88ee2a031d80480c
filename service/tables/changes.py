"""The changes a table goes through, as functions of its record.

Each change takes the record loaded for this attempt (the mutation path, :mod:`.commit`,
loads afresh for every attempt), edits it in place, and returns a :class:`Changed` value: the
events to append and the change's own result; ``commit=False`` when there is nothing to
change (a presence mark already recorded, a due turn that moved on). A change that is not
allowed raises a service error. No change does any I/O, so a lost compare-and-set simply runs
it again on the newer record.

The turn clock lives here, with the two changes that move the turn (the match's start and an
action): the seat on turn gets a deadline (when the rules have a turn time) and a
``TurnStarted``, whose private copy lists its legal actions when a human sits there.
"""

from __future__ import annotations

import dataclasses
from typing import Generic, TypeVar

import engine
from engine.events import CardPlayed, GameEnded, HandDealt, PlayerForfeited, TuteDeclared

from .. import wire
from ..errors import FailedPrecondition, InvalidArgument, from_engine_error
from ..reasons import Reason
from ..wire import EventVariants
from . import fair
from .model import (
    EMPTY,
    FINISHED,
    HUMAN,
    PLAYING,
    PRIVATE,
    PUBLIC,
    WAITING,
    GameRecord,
    Occupant,
    SeatInfo,
    TableRecord,
)

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Changed(Generic[T]):
    """What a change did: the new events (in order), its result, and whether to commit."""

    events: list[EventVariants]
    result: T
    commit: bool = True


def unchanged(result: T) -> Changed[T]:
    """Nothing to change: no events, no commit."""
    return Changed([], result, commit=False)


def new_table(
    table_id: str,
    preset: str,
    rules: engine.Rules,
    *,
    private: bool,
    invite_code: str,
    created_at: float,
    owner_token_hash: str,
) -> TableRecord:
    """A new table's record: every seat empty, waiting, at version 1."""
    return TableRecord(
        table_id=table_id,
        preset=preset,
        rules=rules,
        visibility=PRIVATE if private else PUBLIC,
        invite_code=invite_code,
        created_at=created_at,
        seats=[SeatInfo() for _ in range(rules.players)],
        version=1,
        owner_token_hash=owner_token_hash,
    )


def take_seat(
    rec: TableRecord,
    seat: int | None,
    occupant: Occupant,
    name: str,
    token_hash: str,
    level: str,
    *,
    now: float,
    away_from_start: bool,
    client_seed: str = "",
    player_id: str = "",
) -> Changed[int]:
    """Put someone in a seat (the given one, or the first free); the match starts when the
    last seat is filled. The result is the seat taken. ``away_from_start``: a human without a
    stream when the match starts is away from the start (disconnect forfeits are on).
    ``client_seed``: the player's contribution to every hand's shuffle (already checked).
    ``player_id``: the player account the seat is bound to ('' for none)."""
    if rec.status == FINISHED:
        raise FailedPrecondition("the match is over", reason=Reason.MATCH_OVER)
    if rec.status != WAITING:
        raise FailedPrecondition(
            "the match has already started", reason=Reason.MATCH_ALREADY_STARTED
        )
    if seat is None:
        free = rec.free_seats()
        # the match starts as the last seat is filled: a waiting table has a free seat
        assert free, "a waiting table without a free seat"
        seat = free[0]
    elif seat >= len(rec.seats):
        raise InvalidArgument(f"seat must be from 0 to {len(rec.seats) - 1}", field="seat")
    elif rec.seats[seat].occupant != EMPTY:
        raise FailedPrecondition("that seat is taken", reason=Reason.SEAT_TAKEN)
    # The SeatJoined below is the first event of this change: it gets sequence
    # last_seq + 1, which tells this occupancy from the seat's earlier ones.
    rec.seats[seat] = SeatInfo(
        occupant, name, token_hash, level, rec.last_seq + 1, client_seed, player_id
    )
    events = [EventVariants(wire.seat_joined_event(rec, seat))]
    if not rec.free_seats():
        events += _start_match(rec, now=now, away_from_start=away_from_start)
    return Changed(events, seat)


def _start_match(rec: TableRecord, *, now: float, away_from_start: bool) -> list[EventVariants]:
    """Deal the match from hand 1's committed shuffle (:mod:`.fair`): MatchStarted, the
    opening deal, the first TurnStarted."""
    state, rec.fair = fair.start(rec.rules, [s.client_seed for s in rec.seats], now)
    rec.state = state
    rec.status = PLAYING
    if away_from_start:
        rec.away = {
            i: now
            for i, s in enumerate(rec.seats)
            if s.occupant == HUMAN and i not in rec.connected
        }
    events = [EventVariants(wire.match_started_event(rec))]
    events += wire.engine_events_to_proto(state.rules, engine.opening_events(state))
    wire.stamp_deals(events, rec.fair, state.hand_no)
    _clock_turn(rec, None, now, events)
    return events


def leave(rec: TableRecord, seat: int, *, now: float) -> Changed[bool]:
    """The player of ``seat`` leaves: before the match its seat is free again; during the
    match it forfeits. The result: whether it forfeited."""
    if rec.status == FINISHED:
        raise FailedPrecondition("the match is over", reason=Reason.MATCH_OVER)
    if rec.status == WAITING:
        rec.seats[seat] = SeatInfo()
        return Changed([EventVariants(wire.seat_left_event(seat))], False)
    return Changed(act(rec, seat, engine.FORFEIT, now=now, by=fair.PLAYER).events, True)


def act(
    rec: TableRecord,
    seat: int,
    action: int,
    *,
    now: float,
    forfeit_reason: wire.ForfeitReason = wire.FORFEIT_LEFT,
    by: int = fair.PLAYER,
) -> Changed[None]:
    """``engine.apply`` on the record (engine errors become service errors), the record's own
    bookkeeping (cards played on timeout, finished games, a forfeit, the match's end, the
    fair-deal log: who acted, the next hand's pack), and the turn clock.
    ``forfeit_reason``: what a ``PlayerForfeited`` says; ``by``: who acted (:mod:`.fair`)."""
    before = rec.state
    if before is None or rec.status == WAITING:
        raise FailedPrecondition("the match has not started", reason=Reason.MATCH_NOT_STARTED)
    try:
        after, events = engine.apply(before, seat, action)
    except engine.TuteError as exc:
        raise from_engine_error(exc, field="action") from None
    rec.state = after
    tute = any(isinstance(e, TuteDeclared) for e in events)
    for e in events:
        if isinstance(e, CardPlayed) and e.auto:
            rec.auto_played |= 1 << e.card
        elif isinstance(e, HandDealt):
            rec.auto_played = 0
        elif isinstance(e, GameEnded):
            rec.games.append(GameRecord(e.game_no, e.winner, e.scores, tute))
        elif isinstance(e, PlayerForfeited):
            rec.forfeited_seat = e.seat
            rec.seats[e.seat].token_hash = ""  # its token stops opening the seat
    if after.over:
        rec.status = FINISHED
    variants = wire.engine_events_to_proto(before.rules, events, forfeit_reason=forfeit_reason)
    if rec.fair is not None:
        fair.note(rec.fair, seat, action, by, now, events)
        rec.state = fair.next_pack(after, rec.fair)
        wire.stamp_deals(variants, rec.fair, before.hand_no)
    _clock_turn(rec, before, now, variants)
    return Changed(variants, None)


def _clock_turn(
    rec: TableRecord, before: engine.State | None, now: float, events: list[EventVariants]
) -> None:
    """The turn clock after a change of the state from ``before``: a new turn gets its
    deadline and a TurnStarted; a move that kept the turn (a cante, an exchange) a fresh
    TurnStarted (the seat on turn has new legal actions); no match on, no clock and nobody
    away."""
    state = rec.state
    if rec.status != PLAYING or state is None:
        rec.deadline = 0.0
        rec.away.clear()
        return
    if before is None or state.turn_id != before.turn_id:
        turn_time = rec.rules.turn_time_s
        rec.deadline = now + turn_time if turn_time else 0.0
        rec.turn_started = now
    elif state is before:
        return
    human = rec.seats[state.turn].occupant == HUMAN
    events.append(wire.turn_started_variants(state, rec.deadline, with_legal=human))


def time_out(
    rec: TableRecord, seat: int, turn_id: int, *, now: float, mark_away: bool
) -> Changed[None]:
    """The turn ``turn_id`` of ``seat`` ran out: the server plays for it (nothing when the
    turn moved on meanwhile). ``mark_away``: a seat without a stream is away from now (gone
    without closing its stream, say with a crashed replica)."""
    if rec.state is None or rec.state.turn_id != turn_id:
        return unchanged(None)
    changed = act(rec, seat, engine.TIMEOUT, now=now, by=fair.SERVER)
    if mark_away and rec.status == PLAYING and seat not in rec.connected:
        rec.away.setdefault(seat, now)
    return changed


def bot_move(
    rec: TableRecord, seat: int, seen: engine.View, action: int, *, now: float
) -> Changed[bool]:
    """A bot's ``action``, chosen on the view ``seen``; dropped (False) when the table moved on
    since (the seat's view is not ``seen`` any more)."""
    if rec.state is None or rec.status != PLAYING or engine.view(rec.state, seat) != seen:
        return unchanged(False)
    return Changed(act(rec, seat, action, now=now, by=fair.BOT).events, True)


def forfeit_away(rec: TableRecord, seat: int, *, now: float) -> Changed[None]:
    """The seat away beyond the grace period forfeits the match."""
    return act(
        rec, seat, engine.FORFEIT, now=now, forfeit_reason=wire.FORFEIT_DISCONNECTED, by=fair.SERVER
    )


def mark_away(rec: TableRecord, seat: int, *, away: bool, now: float) -> Changed[None]:
    """Record that a seat has no stream (``away``) or has one again; nothing when that is
    already recorded, the seat is not a human's, or no match is being played."""
    if rec.status != PLAYING or rec.seats[seat].occupant != HUMAN:
        return unchanged(None)
    if away:
        if seat in rec.away or seat in rec.connected:
            return unchanged(None)
        rec.away[seat] = now
    elif rec.away.pop(seat, None) is None:
        return unchanged(None)
    return Changed([], None)
