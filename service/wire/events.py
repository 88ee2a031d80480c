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
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

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

from .cards import CARDS, SUITS, card_msgs, sorted_cards
from .scores import cante_msg, hand_result_msg, match_result_msg, standing, tute_msg

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


class _Batch(NamedTuple):
    """What the events of one batch share: the rules, the card played on timeout in the batch
    (-1: none; a trick marks it ``timed_out``), and what a ``PlayerForfeited`` says."""

    rules: engine.Rules
    players: int
    auto_card: int
    forfeit_reason: event_pb2.ForfeitReason


def engine_events_to_proto(
    rules: engine.Rules,
    events: Sequence[engine.Event],
    *,
    forfeit_reason: event_pb2.ForfeitReason = event_pb2.FORFEIT_REASON_LEFT,
) -> list[EventVariants]:
    """The events of one :func:`engine.apply` (or :func:`engine.opening_events`) of a match
    under ``rules`` as messages, one :class:`EventVariants` each. Each event carries its own
    context; of the batch, a trick's cards are marked ``timed_out`` when the batch played the
    card on timeout. ``sequence``, ``table_version`` and ``time`` are left unset for the
    caller. ``PlayerForfeited.reason`` is ``forfeit_reason``.
    """
    auto_card = next((ev.card for ev in events if isinstance(ev, CardPlayed) and ev.auto), -1)
    batch = _Batch(rules, rules.players, auto_card, forfeit_reason)
    out: list[EventVariants] = []
    for ev in events:
        convert = _CONVERT.get(type(ev))
        if convert is None:  # pragma: no cover - a new engine event must get a conversion
            raise TypeError(f"no conversion for engine event {type(ev).__name__}")
        out.append(convert(ev, batch))
    return out


def _public(ev: event_pb2.Event) -> EventVariants:
    return EventVariants(ev)


def _card_played(ev: CardPlayed, _: _Batch) -> EventVariants:
    played = event_pb2.CardPlayed(
        seat=ev.seat, card=CARDS[ev.card], trick_number=ev.trick_no, timed_out=ev.auto
    )
    return _public(event_pb2.Event(card_played=played))


def _turn_timed_out(ev: TurnTimedOut, _: _Batch) -> EventVariants:
    timed_out = event_pb2.TurnTimedOut(seat=ev.seat, trick_number=ev.trick_no)
    return _public(event_pb2.Event(turn_timed_out=timed_out))


def _cante_sung(ev: CanteSung, b: _Batch) -> EventVariants:
    cante = cante_msg(b.players, (ev.seat, ev.suit, ev.points, ev.trick_no))
    return _public(event_pb2.Event(cante_sung=event_pb2.CanteSung(cante=cante)))


def _tute_declared(ev: TuteDeclared, b: _Batch) -> EventVariants:
    tute = tute_msg(b.players, ev.seat, ev.rank, ev.cards, ev.trick_no)
    return _public(event_pb2.Event(tute_declared=event_pb2.TuteDeclared(tute=tute)))


def _trump_exchanged(ev: TrumpExchanged, _: _Batch) -> EventVariants:
    exchanged = event_pb2.TrumpExchanged(seat=ev.seat, taken=CARDS[ev.taken], given=CARDS[ev.given])
    return _public(event_pb2.Event(trump_exchanged=exchanged))


def _hand_ended(ev: HandEnded, b: _Batch) -> EventVariants:
    scored = event_pb2.HandScored(
        result=hand_result_msg(b.rules, ev.result, ev.match_points_awarded),
        scores=standing(b.players, ev.standing),
    )
    return _public(event_pb2.Event(hand_scored=scored))


def _game_ended(ev: GameEnded, _: _Batch) -> EventVariants:
    game = score_pb2.GameResult(
        game_number=ev.game_no, winner_side=ev.winner, scores=ev.scores, by_tute=ev.by_tute
    )
    return _public(event_pb2.Event(game_ended=event_pb2.GameEnded(result=game)))


def _player_forfeited(ev: PlayerForfeited, b: _Batch) -> EventVariants:
    forfeit = event_pb2.PlayerForfeited(seat=ev.seat, reason=b.forfeit_reason)
    return _public(event_pb2.Event(player_forfeited=forfeit))


def _match_ended(ev: MatchEnded, b: _Batch) -> EventVariants:
    n = b.players
    match = match_result_msg(n, ev.winners, ev.reason, ev.forfeited_seat, standing(n, ev.standing))
    return _public(event_pb2.Event(match_ended=event_pb2.MatchEnded(result=match)))


def _trick_taken(ev: TrickTaken, b: _Batch) -> EventVariants:
    trick = card_pb2.Trick(
        number=ev.trick_no, leader=ev.cards[0][0], winner=ev.winner, points=ev.points
    )
    add = trick.cards.add
    for seat, card in ev.cards:
        add(seat=seat, card=CARDS[card], timed_out=card == b.auto_card)
    taken = event_pb2.TrickTaken(
        trick=trick,
        winner_side=engine.side_of(b.players, ev.winner),
        last_trick=ev.trick_no == b.rules.tricks_per_hand,
    )
    return EventVariants(event_pb2.Event(trick_taken=taken))


_CONVERT: dict[type, Callable[[Any, _Batch], EventVariants]] = {
    CardPlayed: _card_played,
    TrickTaken: _trick_taken,
    CardDrawn: lambda ev, _: _card_drawn(ev),
    HandDealt: lambda ev, _: _hand_dealt(ev),
    TurnTimedOut: _turn_timed_out,
    CanteSung: _cante_sung,
    TuteDeclared: _tute_declared,
    TrumpExchanged: _trump_exchanged,
    HandEnded: _hand_ended,
    GameEnded: _game_ended,
    PlayerForfeited: _player_forfeited,
    MatchEnded: _match_ended,
}
"""Each engine event's conversion."""


def stamp(variants: EventVariants, seq: int, version: int, now: float) -> StoredEvent:
    """Number one event (``sequence``, ``table_version``, ``time``: set on its messages, which
    then read as sent) and serialize it per audience, as the store keeps it."""
    # what Timestamp.FromNanoseconds sets, without its Python checks (a time in range)
    seconds, nanos = divmod(int(now * 1e9), 1_000_000_000)
    ts = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    public = variants.public
    return StoredEvent(
        seq,
        _stamp(public, seq, version, ts),
        {s: _stamp(e, seq, version, ts) for s, e in variants.private.items()},
        time=_seconds(ts),  # what event_time reads from the bytes
        ended_seat=ended_seat(public),
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
    return _seconds(ev.time)


def _seconds(ts: timestamp_pb2.Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def ended_seat(ev: event_pb2.Event) -> int:
    """The seat whose occupancy this event ends (its token stops opening it), -1 for none: a
    SeatLeft's, a PlayerForfeited's, a SeatJoined's (somebody sat there: to a stream, never
    its own SeatJoined). Every variant of an event says the same."""
    kind = ev.WhichOneof("kind")
    if kind == "seat_left":
        return ev.seat_left.seat
    if kind == "player_forfeited":
        return ev.player_forfeited.seat
    if kind == "seat_joined":
        return ev.seat_joined.seat.index
    return -1
