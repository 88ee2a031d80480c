"""Tables and views as ``tute.v1`` messages: the lobby ``Table``, a seat's ``TableView``, and the
service's own events (SeatJoined, SeatLeft, MatchStarted, TurnStarted).

Every card of a view comes from :func:`engine.view`, so a caller never receives a card it may
not see. Hands and public held cards are sorted by suit (oros, copas, espadas, bastos) then by
strength, strongest first (1, 3, 12, 11, 10, 7, 6, 5, 4, 2). The completed tricks views show
are built once and copied.
"""

from __future__ import annotations

import functools

import engine
from engine.cards import POINTS
from engine.events import Standing
from engine.score import cante_points
from service.tables.model import (
    BOT,
    EMPTY,
    FINISHED,
    HUMAN,
    PLAYING,
    PRIVATE,
    PUBLIC,
    WAITING,
    TableRecord,
)
from tute.v1 import card_pb2, event_pb2, score_pb2, table_pb2, view_pb2

from .cards import (
    ACTIONS,
    CARDS,
    SUITS,
    card_msgs,
    rules_msg,
    set_time,
    side_of,
    sorted_cards,
    timestamp,
)
from .events import EventVariants
from .scores import cante_msg, hand_result_msg, match_result_msg, standing

_STATUS: dict[str, table_pb2.TableStatus] = {
    WAITING: table_pb2.TABLE_STATUS_WAITING,
    PLAYING: table_pb2.TABLE_STATUS_PLAYING,
    FINISHED: table_pb2.TABLE_STATUS_FINISHED,
}
_VISIBILITY: dict[str, table_pb2.Visibility] = {
    PUBLIC: table_pb2.VISIBILITY_PUBLIC,
    PRIVATE: table_pb2.VISIBILITY_PRIVATE,
}
_OCCUPANT: dict[str, table_pb2.OccupantKind] = {
    EMPTY: table_pb2.OCCUPANT_KIND_EMPTY,
    HUMAN: table_pb2.OCCUPANT_KIND_HUMAN,
    BOT: table_pb2.OCCUPANT_KIND_BOT,
}


def _seat_msg(record: TableRecord, index: int) -> table_pb2.Seat:
    """A seat as the record has it; a human's is ``connected`` when the record was loaded
    with a stream open for it (``TableRecord.connected``)."""
    info = record.seats[index]
    occupant = info.occupant
    bot = occupant == BOT
    return table_pb2.Seat(
        index=index,
        side=side_of(len(record.seats), index),
        occupant=_OCCUPANT.get(occupant, table_pb2.OCCUPANT_KIND_UNSPECIFIED),
        display_name=info.name if occupant != EMPTY else "",
        bot_level=info.bot_level if bot else "",
        connected=bot or (occupant == HUMAN and index in record.connected),
        player_id=info.player_id if occupant == HUMAN else "",
    )


def _seat_msgs(record: TableRecord) -> list[table_pb2.Seat]:
    return [_seat_msg(record, i) for i in range(len(record.seats))]


def table_to_proto(record: TableRecord) -> table_pb2.Table:
    """The lobby summary of a table."""
    out = table_pb2.Table(
        table_id=record.table_id,
        visibility=_VISIBILITY.get(record.visibility, table_pb2.VISIBILITY_UNSPECIFIED),
        status=_STATUS.get(record.status, table_pb2.TABLE_STATUS_UNSPECIFIED),
        seats=_seat_msgs(record),
        free_seats=len(record.free_seats()),
        create_time=timestamp(record.created_at),
        version=record.version,
    )
    out.rules.CopyFrom(rules_msg(record.preset, record.rules))
    return out


def seat_joined_event(record: TableRecord, seat: int) -> event_pb2.Event:
    """``SeatJoined`` for ``seat`` as the record has it now (public)."""
    return event_pb2.Event(seat_joined=event_pb2.SeatJoined(seat=_seat_msg(record, seat)))


def seat_left_event(seat: int) -> event_pb2.Event:
    """``SeatLeft``: ``seat`` is free again (public)."""
    return event_pb2.Event(seat_left=event_pb2.SeatLeft(seat=seat))


def match_started_event(record: TableRecord) -> event_pb2.Event:
    """``MatchStarted`` for a record whose match state exists (public). The first dealer is
    derived from the state (the dealer moves one seat per hand, RULES.md §3)."""
    state = record.state
    if state is None:
        raise ValueError("the match has not started: the record has no state")
    n = state.rules.players
    first_dealer = (state.dealer - (state.hand_no - 1)) % n
    msg = event_pb2.MatchStarted(seats=_seat_msgs(record), first_dealer=first_dealer)
    msg.rules.CopyFrom(rules_msg(record.preset, record.rules))
    return event_pb2.Event(match_started=msg)


def _turn_kind(seen: engine.State | engine.View) -> table_pb2.TurnKind:
    return table_pb2.TURN_KIND_FOLLOW if seen.trick else table_pb2.TURN_KIND_LEAD


def turn_started_event(state: engine.State, deadline: float) -> event_pb2.Event:
    """``TurnStarted`` for the seat on turn in ``state`` (public). ``deadline`` is a Unix
    time; 0 means no clock and leaves the deadline unset."""
    msg = event_pb2.TurnStarted(
        seat=state.turn, kind=_turn_kind(state), trick_number=state.trick_no
    )
    if deadline > 0:
        set_time(msg.deadline, deadline)
    return event_pb2.Event(turn_started=msg)


def turn_started_variants(
    state: engine.State, deadline: float, *, with_legal: bool = True
) -> EventVariants:
    """``TurnStarted`` as :func:`turn_started_event`, and (``with_legal``) a private copy for
    the seat on turn that lists its legal actions (they show its cards: nobody else's copy
    has them)."""
    public = turn_started_event(state, deadline)
    if not with_legal:
        return EventVariants(public)
    seat = state.turn
    mine = event_pb2.Event()
    mine.CopyFrom(public)
    mine.turn_started.legal_actions.extend([ACTIONS[a] for a in engine.legal_actions(state, seat)])
    return EventVariants(public, {seat: mine})


# ---------------------------------------------------------------------------------------------
# Views
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16384)
def _completed_trick(
    players: int, number: int, leader: int, cards: tuple[int, ...], winner: int
) -> card_pb2.Trick:
    """A completed trick as a shared (never mutated) message: views of a table show the same
    tricks over and over, and copying a cached message is ten times cheaper than building it.
    """
    return card_pb2.Trick(
        number=number,
        leader=leader,
        cards=[
            card_pb2.PlayedCard(seat=(leader + i) % players, card=CARDS[c])
            for i, c in enumerate(cards)
        ],
        winner=winner,
        points=sum([POINTS[c] for c in cards]),
    )


def view_to_proto(record: TableRecord, seat: int | None) -> view_pb2.TableView:
    """The ``TableView`` of ``record`` for ``seat`` (``None``: a spectator).

    Every card comes from :func:`engine.view`, so the view holds only what the seat may see.
    Before the match starts only the table part is filled. A human's seat is ``connected``
    when the record was loaded with a stream open for it (``record.connected``).
    ``PlayedCard.timed_out`` marks the cards of this hand the server played on timeout
    (``record.auto_played``).
    """
    out = view_pb2.TableView(
        table_id=record.table_id,
        version=record.version,
        last_event_sequence=record.last_seq,
        status=_STATUS.get(record.status, table_pb2.TABLE_STATUS_UNSPECIFIED),
        visibility=_VISIBILITY.get(record.visibility, table_pb2.VISIBILITY_UNSPECIFIED),
        seats=_seat_msgs(record),
        game_results=[
            score_pb2.GameResult(
                game_number=g.game_no, winner_side=g.winner, scores=g.scores, by_tute=g.by_tute
            )
            for g in record.games
        ],
    )
    out.rules.CopyFrom(rules_msg(record.preset, record.rules))
    if seat is not None:
        out.my_seat = seat
        if record.visibility == PRIVATE:
            out.invite_code = record.invite_code
    state = record.state
    if state is not None:
        _match_view(out, record, engine.view(state, seat))
    return out


def _match_view(out: view_pb2.TableView, record: TableRecord, v: engine.View) -> None:
    """The match part of a view: hands, trump and stock, tricks, cantes, scores, turn and
    results."""
    rules = record.rules
    n = v.players
    playing = v.status == engine.Status.PLAYING

    out.hand.extend(card_msgs(sorted_cards(v.hand)))
    out.legal_actions.extend([ACTIONS[a] for a in v.legal if a < len(ACTIONS)])

    seat_tricks = [0] * n
    for _, _, winner in v.history:
        seat_tricks[winner] += 1
    out.seat_hands.extend(
        view_pb2.SeatHand(
            seat=s,
            hand_size=v.hand_sizes[s],
            public_cards=card_msgs(sorted_cards(v.public_cards[s])),
            tricks_won=seat_tricks[s],
        )
        for s in range(n)
    )

    out.game_number = v.game_no
    out.hand_number = v.hand_no
    out.dealer = v.dealer
    out.trump_suit = SUITS[v.trump]
    out.trump_card.CopyFrom(CARDS[v.trump_card])
    if v.turned_card >= 0:
        out.turned_card.CopyFrom(CARDS[v.turned_card])
    out.stock_size = v.stock_size

    _tricks(out, v, record.auto_played, current=playing or bool(v.trick))

    out.cantes.extend([cante_msg(n, c) for c in v.cantes])
    now = standing_now(v)
    out.scores.extend(standing(n, now))

    if playing:
        out.turn_seat = v.turn
        out.turn_kind = _turn_kind(v)
        if record.deadline > 0:
            set_time(out.turn_deadline, record.deadline)

    res = v.last_result
    if res is not None:
        out.last_hand_result.CopyFrom(
            hand_result_msg(rules, res, engine.match_points_awarded(rules, res))
        )

    if not playing:
        out.match_result.CopyFrom(
            match_result_msg(n, v.winners, v.end_reason, record.forfeited_seat, standing(n, now))
        )


def standing_now(v: engine.View) -> Standing:
    """The standing now, with the current hand's tally (a finished match's final standing:
    the hand scored last, or the one a forfeit cut short, as far as it went)."""
    return Standing(
        v.game_scores,
        v.games_won,
        v.match_points,
        v.won_points,
        cante_points(v.players, v.cantes),
        v.tricks_won,
    )


def _tricks(out: view_pb2.TableView, v: engine.View, auto_played: int, *, current: bool) -> None:
    """The trick being played (``current``) and the completed ones of the hand; the cards the
    server played on timeout (``auto_played``, a mask) are marked ``timed_out``."""
    if current:
        cur = out.current_trick
        cur.number = v.trick_no
        cur.leader = v.leader
        add = cur.cards.add
        for s, c in v.trick:
            add(seat=s, card=CARDS[c], timed_out=bool(auto_played >> c & 1))
            cur.points += POINTS[c]
    out.completed_tricks.extend(
        [
            _completed_trick(v.players, i + 1, leader, cards, winner)
            for i, (leader, cards, winner) in enumerate(v.history)
        ]
    )
    if auto_played:
        for trick, (_, cards, _) in zip(out.completed_tricks, v.history, strict=True):
            for played, c in zip(trick.cards, cards, strict=True):
                if auto_played >> c & 1:
                    played.timed_out = True
