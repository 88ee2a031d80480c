"""Events as ``tute.v1`` messages: the engine's events converted once per audience, then
numbered and stamped into the bytes the store keeps and fans out.

:func:`engine_events_to_proto` returns, per engine event, an :class:`EventVariants` with the
public message (spectators, and every seat without a variant of its own) and the private
replacements (a seat's own dealt hand, its own drawn card). Cards only ever come from
:func:`engine.redact`, so a watcher never receives a card it may not see. Fan-out then picks
the bytes per watcher and never converts or redacts again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from google.protobuf import timestamp_pb2

import engine
from engine.events import (
    CanteSung,
    CardDrawn,
    CardPlayed,
    GameEnded,
    HandDealt,
    HandEnded,
    MatchEnded,
    PlayerForfeited,
    TrickTaken,
    TrumpExchanged,
    TurnTimedOut,
    TuteDeclared,
)
from service.store.base import StoredEvent
from tute.v1 import card_pb2, event_pb2, score_pb2

from .cards import CARDS, SIDE, SUITS, card_msgs, sorted_cards
from .scores import cante_msg, final_standing, hand_result_msg, match_result_msg, standing, tute_msg

Event = event_pb2.Event
"""A table event message (what WatchTable streams and SubmitAction returns)."""
ForfeitReason = event_pb2.ForfeitReason
FORFEIT_LEFT = event_pb2.FORFEIT_REASON_LEFT
"""``PlayerForfeited.reason`` of a player who left the match (LeaveTable)."""
FORFEIT_DISCONNECTED = event_pb2.FORFEIT_REASON_DISCONNECTED
"""``PlayerForfeited.reason`` of a player away beyond the grace period."""


@dataclasses.dataclass(frozen=True, slots=True)
class EventVariants:
    """One event as every audience sees it: ``public`` for spectators and for every seat
    without a variant of its own; ``private[seat]`` replaces it for that seat."""

    public: event_pb2.Event
    private: dict[int, event_pb2.Event] = dataclasses.field(default_factory=dict)

    def for_seat(self, seat: int | None) -> event_pb2.Event:
        """The message for ``seat`` (``None``: a spectator)."""
        if seat is None:
            return self.public
        return self.private.get(seat, self.public)


def _hand_dealt(ev: HandDealt) -> EventVariants:
    public = event_pb2.Event(
        hand_dealt=event_pb2.HandDealt(
            game_number=ev.game_no,
            hand_number=ev.hand_no,
            dealer=ev.dealer,
            trump_suit=SUITS[ev.trump_suit],
            trump_card=CARDS[ev.trump_card],
            hand_sizes=[(h or 0).bit_count() for h in ev.hands],
            stock_size=ev.stock_size,
        )
    )
    private: dict[int, event_pb2.Event] = {}
    for seat in range(len(ev.hands)):
        mine = engine.redact(ev, seat)
        assert isinstance(mine, HandDealt)
        hand = mine.hands[seat]
        if hand is None:
            continue
        msg = event_pb2.Event()
        msg.CopyFrom(public)
        msg.hand_dealt.hand.extend(card_msgs(sorted_cards(hand)))
        private[seat] = msg
    return EventVariants(public, private)


def _card_drawn_msg(ev: CardDrawn) -> event_pb2.Event:
    msg = event_pb2.CardDrawn(seat=ev.seat, turned_card=ev.public, stock_size=ev.stock_left)
    if ev.card is not None:
        msg.card.CopyFrom(CARDS[ev.card])
    return event_pb2.Event(card_drawn=msg)


def _card_drawn(ev: CardDrawn) -> EventVariants:
    public_ev = engine.redact(ev, None)
    assert isinstance(public_ev, CardDrawn)
    public = _card_drawn_msg(public_ev)
    if ev.public:
        return EventVariants(public)
    mine = engine.redact(ev, ev.seat)
    assert isinstance(mine, CardDrawn)
    return EventVariants(public, {ev.seat: _card_drawn_msg(mine)})


def engine_events_to_proto(
    before: engine.State,
    after: engine.State,
    events: Sequence[engine.Event],
    *,
    forfeit_reason: event_pb2.ForfeitReason = event_pb2.FORFEIT_REASON_LEFT,
) -> list[EventVariants]:
    """The events of one :func:`engine.apply` as messages, one :class:`EventVariants` each.

    ``before`` is the state the action was applied to and ``after`` the result (for the
    opening deal, :func:`engine.opening_events`, pass the new state twice). They give the
    context the engine events leave out: trick numbers and the standing after a hand.
    ``sequence``, ``table_version`` and ``time`` are left unset for the caller.
    ``PlayerForfeited.reason`` is ``forfeit_reason``.
    """
    rules = before.rules
    n = rules.players
    side = SIDE[n]
    game_ended: GameEnded | None = None
    forfeited = -1
    auto_card = -1
    by_tute = False
    for ev in events:
        if isinstance(ev, GameEnded):
            game_ended = ev
        elif isinstance(ev, PlayerForfeited):
            forfeited = ev.seat
        elif isinstance(ev, CardPlayed) and ev.auto:
            auto_card = ev.card
        elif isinstance(ev, TuteDeclared):
            by_tute = True
    trick_no = before.trick_no
    out: list[EventVariants] = []
    append = out.append
    for ev in events:
        if isinstance(ev, CardPlayed):
            played = event_pb2.CardPlayed(
                seat=ev.seat, card=CARDS[ev.card], trick_number=trick_no, timed_out=ev.auto
            )
            append(EventVariants(event_pb2.Event(card_played=played)))
        elif isinstance(ev, TrickTaken):
            trick = card_pb2.Trick(
                number=ev.trick_no, leader=ev.cards[0][0], winner=ev.winner, points=ev.points
            )
            add = trick.cards.add
            for seat, card in ev.cards:
                add(seat=seat, card=CARDS[card], timed_out=card == auto_card)
            winner_side = side[ev.winner]
            taken = event_pb2.TrickTaken(
                trick=trick,
                winner_side=winner_side,
                last_trick=ev.trick_no == rules.tricks_per_hand,
            )
            append(EventVariants(event_pb2.Event(trick_taken=taken)))
        elif isinstance(ev, CardDrawn):
            append(_card_drawn(ev))
        elif isinstance(ev, HandDealt):
            append(_hand_dealt(ev))
        elif isinstance(ev, TurnTimedOut):
            timed_out = event_pb2.TurnTimedOut(seat=ev.seat, trick_number=trick_no)
            append(EventVariants(event_pb2.Event(turn_timed_out=timed_out)))
        elif isinstance(ev, CanteSung):
            sung = event_pb2.CanteSung(cante=cante_msg(n, (ev.seat, ev.suit, ev.points, trick_no)))
            append(EventVariants(event_pb2.Event(cante_sung=sung)))
        elif isinstance(ev, TuteDeclared):
            tute = event_pb2.TuteDeclared(tute=tute_msg(n, ev.seat, ev.rank, ev.cards, trick_no))
            append(EventVariants(event_pb2.Event(tute_declared=tute)))
        elif isinstance(ev, TrumpExchanged):
            exchanged = event_pb2.TrumpExchanged(
                seat=ev.seat, taken=CARDS[ev.taken], given=CARDS[ev.given]
            )
            append(EventVariants(event_pb2.Event(trump_exchanged=exchanged)))
        elif isinstance(ev, HandEnded):
            res = ev.result
            result = hand_result_msg(rules, res)
            game_scores = game_ended.scores if game_ended is not None else after.game_scores
            # The hand's tally as it ended: a tute counts no card points (the result has 0s),
            # but the tricks it cut short were won all the same.
            card_points = before.won_points if res.tute_seat >= 0 else res.card_points
            scored = event_pb2.HandScored(
                result=result,
                scores=standing(
                    n, game_scores, after.games_won, after.match_points,
                    card_points, res.cante_points, res.tricks_won,
                ),
            )
            append(EventVariants(event_pb2.Event(hand_scored=scored)))
        elif isinstance(ev, GameEnded):
            game = score_pb2.GameResult(
                game_number=ev.game_no, winner_side=ev.winner, scores=ev.scores, by_tute=by_tute
            )
            append(EventVariants(event_pb2.Event(game_ended=event_pb2.GameEnded(result=game))))
        elif isinstance(ev, PlayerForfeited):
            forfeit = event_pb2.PlayerForfeited(seat=ev.seat, reason=forfeit_reason)
            append(EventVariants(event_pb2.Event(player_forfeited=forfeit)))
        elif isinstance(ev, MatchEnded):
            final = final_standing(n, after)
            match = match_result_msg(n, ev.winners, ev.reason, forfeited, final)
            append(EventVariants(event_pb2.Event(match_ended=event_pb2.MatchEnded(result=match))))
        else:  # pragma: no cover - a new engine event must get a conversion here
            raise TypeError(f"no conversion for engine event {type(ev).__name__}")
    return out


def stamp(variants: EventVariants, seq: int, version: int, now: float) -> StoredEvent:
    """Number one event (``sequence``, ``table_version``, ``time``: set on its messages, which
    then read as sent) and serialize it per audience, as the store keeps it."""
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(now * 1e9))
    return StoredEvent(
        seq,
        _stamp(variants.public, seq, version, ts),
        {s: _stamp(e, seq, version, ts) for s, e in variants.private.items()},
    )


def _stamp(ev: event_pb2.Event, seq: int, version: int, ts: timestamp_pb2.Timestamp) -> bytes:
    ev.sequence = seq
    ev.table_version = version
    ev.time.CopyFrom(ts)
    return ev.SerializeToString()


def parse(data: bytes) -> event_pb2.Event:
    """A stored event's bytes as a message."""
    return event_pb2.Event.FromString(data)


def event_time(ev: event_pb2.Event) -> float:
    """When the event was committed (Unix time)."""
    return float(ev.time.ToNanoseconds()) / 1e9


def ends_occupancy(ev: event_pb2.Event, seat: int) -> bool:
    """Does this event end the occupancy of ``seat`` (its token stops opening it)?"""
    kind = ev.WhichOneof("kind")
    if kind == "seat_left":
        return ev.seat_left.seat == seat
    if kind == "player_forfeited":
        return ev.player_forfeited.seat == seat
    if kind == "seat_joined":  # somebody else sat there (never the stream's own SeatJoined)
        return ev.seat_joined.seat.index == seat
    return False
