"""The ``Table`` model: one table as the caller sees it, kept up to date from its stream.

A :class:`Table` holds a ``TableView`` (the message GetTable returns) and applies each event
of the WatchTable stream to it, so that after any event its :attr:`Table.view` is what
GetTable would answer at that sequence number, but for what no event reports: the
``Seat.connected`` flags and a ``version`` raised by a change that produced no event.
A fresh snapshot replaces it whole.

Legal actions: the seat on turn's ``TurnStarted`` copy carries them where the server sends
them (``TurnStarted.legal_actions``); any other event empties them until the next one.
Where the server does not, :class:`~clients.sdk.TuteClient` fills them with one GetTable per
turn (:meth:`Table.needs_legal_actions` says when).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from tute.v1 import action_pb2, card_pb2, event_pb2, score_pb2, table_pb2, view_pb2

from .cards import POINTS, card_key, same_card, sort_cards

TURN_LEGAL_ACTIONS: Final = "legal_actions" in event_pb2.TurnStarted.DESCRIPTOR.fields_by_name
"""Whether this contract's ``TurnStarted`` carries the seat on turn's legal actions."""

_Cards = RepeatedCompositeFieldContainer[card_pb2.Card]
_DECLARATION_KINDS: Final = frozenset({"cante_sung", "trump_exchanged"})


def sides_of(players: int) -> list[list[int]]:
    """The seats of each side: ``[[0, 2], [1, 3]]`` with 4 players, one seat each otherwise."""
    if players == 4:
        return [[0, 2], [1, 3]]
    return [[s] for s in range(players)]


def side_of(players: int, seat: int) -> int:
    return seat % 2 if players == 4 else seat


class Table:
    """One table, as the caller may see it. Read :attr:`view` or the shortcuts below.

    ``my_seat`` is the caller's seat (``None``: a spectator); a snapshot sets it too.
    """

    def __init__(self, table_id: str, my_seat: int | None = None) -> None:
        self.view = view_pb2.TableView(table_id=table_id)
        if my_seat is not None:
            self.view.my_seat = my_seat
        self._legal_pending = False

    @classmethod
    def from_view(cls, view: view_pb2.TableView) -> Table:
        """A model starting from a view (a snapshot, GetTable's answer or a saved one)."""
        table = cls(view.table_id)
        table.reset(view)
        return table

    # -- shortcuts ------------------------------------------------------------------------
    @property
    def table_id(self) -> str:
        return self.view.table_id

    @property
    def last_sequence(self) -> int:
        """Sequence number of the last event applied (resume a stream after it)."""
        return self.view.last_event_sequence

    @property
    def my_seat(self) -> int | None:
        return self.view.my_seat if self.view.HasField("my_seat") else None

    @property
    def players(self) -> int:
        n = self.view.rules.options.players
        return n if n else len(self.view.seats)

    @property
    def status(self) -> table_pb2.TableStatus:
        return self.view.status

    @property
    def playing(self) -> bool:
        return self.view.status == table_pb2.TABLE_STATUS_PLAYING

    @property
    def finished(self) -> bool:
        return self.view.status == table_pb2.TABLE_STATUS_FINISHED

    @property
    def turn_seat(self) -> int | None:
        return self.view.turn_seat if self.view.HasField("turn_seat") else None

    @property
    def my_turn(self) -> bool:
        seat = self.my_seat
        return seat is not None and self.turn_seat == seat

    @property
    def hand(self) -> Sequence[card_pb2.Card]:
        return self.view.hand

    @property
    def legal_actions(self) -> Sequence[action_pb2.Action]:
        return self.view.legal_actions

    @property
    def legal_cards(self) -> list[card_pb2.Card]:
        """The cards among the legal actions."""
        return [a.play_card for a in self.view.legal_actions if a.HasField("play_card")]

    @property
    def trick(self) -> Sequence[card_pb2.PlayedCard]:
        """The cards of the trick being played."""
        return self.view.current_trick.cards

    @property
    def last_trick(self) -> card_pb2.Trick | None:
        """The last completed trick of this hand, if any."""
        return self.view.completed_tricks[-1] if self.view.completed_tricks else None

    @property
    def scores(self) -> Sequence[score_pb2.SideScore]:
        return self.view.scores

    @property
    def deadline(self) -> float | None:
        """The current turn's deadline as a Unix time; ``None`` without a clock or a turn."""
        if not self.view.HasField("turn_deadline"):
            return None
        return self.view.turn_deadline.ToNanoseconds() / 1e9

    def seat_name(self, seat: int) -> str:
        seats = self.view.seats
        if 0 <= seat < len(seats) and seats[seat].display_name:
            return seats[seat].display_name
        return f"seat {seat}"

    def needs_legal_actions(self) -> bool:
        """True when the last event gave the caller's seat a turn (or changed what it may do
        on it) and the contract does not carry the legal actions: fetch them
        (:meth:`set_legal_actions`)."""
        return self._legal_pending

    # -- changes ---------------------------------------------------------------------------
    def reset(self, view: view_pb2.TableView) -> None:
        """Replace everything with ``view`` (a fresh snapshot)."""
        self.view = view_pb2.TableView()
        self.view.CopyFrom(view)
        self._legal_pending = False

    def set_legal_actions(self, view: view_pb2.TableView) -> bool:
        """Take the legal actions from a GetTable answer if it is at this model's sequence
        (True); a view from a later sequence leaves them empty (the events after it will
        tell). Either way nothing is pending any more."""
        self._legal_pending = False
        del self.view.legal_actions[:]
        if view.last_event_sequence != self.view.last_event_sequence:
            return False
        self.view.legal_actions.extend(view.legal_actions)
        return True

    def apply(self, ev: event_pb2.Event) -> None:
        """Apply the next event of the stream."""
        v = self.view
        v.last_event_sequence = ev.sequence
        v.version = max(v.version, ev.table_version)
        self._legal_pending = False
        kind = ev.WhichOneof("kind")
        if kind != "turn_started":
            del v.legal_actions[:]
        handler = _HANDLERS.get(kind or "")
        if handler is not None:
            handler(self, ev)
        if not TURN_LEGAL_ACTIONS and kind in _DECLARATION_KINDS and self.my_turn and self.playing:
            self._legal_pending = True

    # -- the events ------------------------------------------------------------------------
    def _seat_hand(self, seat: int) -> view_pb2.SeatHand:
        hands = self.view.seat_hands
        while len(hands) <= seat:
            hands.add(seat=len(hands))
        return hands[seat]

    def _score(self, side: int) -> score_pb2.SideScore:
        scores = self.view.scores
        groups = sides_of(self.players)
        while len(scores) <= side:
            s = len(scores)
            scores.add(side=s, seats=groups[s] if s < len(groups) else [])
        return scores[side]

    def _seat_joined(self, ev: event_pb2.Event) -> None:
        seat = ev.seat_joined.seat
        seats = self.view.seats
        while len(seats) <= seat.index:
            seats.add(index=len(seats), occupant=table_pb2.OCCUPANT_KIND_EMPTY)
        seats[seat.index].CopyFrom(seat)

    def _seat_left(self, ev: event_pb2.Event) -> None:
        index = ev.seat_left.seat
        seats = self.view.seats
        if index < len(seats):
            seats[index].CopyFrom(
                table_pb2.Seat(
                    index=index,
                    side=side_of(self.players, index),
                    occupant=table_pb2.OCCUPANT_KIND_EMPTY,
                )
            )

    def _match_started(self, ev: event_pb2.Event) -> None:
        m = ev.match_started
        v = self.view
        del v.seats[:]
        v.seats.extend(m.seats)
        v.rules.CopyFrom(m.rules)
        v.status = table_pb2.TABLE_STATUS_PLAYING
        v.dealer = m.first_dealer

    def _hand_dealt(self, ev: event_pb2.Event) -> None:
        d = ev.hand_dealt
        v = self.view
        n = len(d.hand_sizes) or self.players
        v.game_number = d.game_number
        v.hand_number = d.hand_number
        v.dealer = d.dealer
        v.trump_suit = d.trump_suit
        v.trump_card.CopyFrom(d.trump_card)
        del v.hand[:]
        v.hand.extend(sort_cards(d.hand))
        del v.seat_hands[:]
        for s in range(n):
            v.seat_hands.add(seat=s, hand_size=d.hand_sizes[s] if s < len(d.hand_sizes) else 0)
        v.stock_size = d.stock_size
        if n == 2:
            if d.stock_size:
                v.turned_card.CopyFrom(d.trump_card)
            else:
                v.ClearField("turned_card")
        else:
            v.ClearField("turned_card")
            v.seat_hands[d.dealer].public_cards.append(d.trump_card)
        v.current_trick.CopyFrom(card_pb2.Trick(number=1, leader=(d.dealer + 1) % n))
        del v.completed_tricks[:]
        del v.cantes[:]
        for side in range(3 if n == 3 else 2):
            score = self._score(side)
            score.hand_card_points = 0
            score.hand_cante_points = 0
            score.hand_tricks_won = 0

    def _turn_started(self, ev: event_pb2.Event) -> None:
        t = ev.turn_started
        v = self.view
        v.turn_seat = t.seat
        v.turn_kind = t.kind
        if t.HasField("deadline"):
            v.turn_deadline.CopyFrom(t.deadline)
        else:
            v.ClearField("turn_deadline")
        v.current_trick.number = t.trick_number
        mine = self.my_seat is not None and t.seat == self.my_seat
        del v.legal_actions[:]
        if TURN_LEGAL_ACTIONS:
            if mine:
                v.legal_actions.extend(getattr(t, "legal_actions", ()))
        elif mine and self.playing:
            self._legal_pending = True

    def _card_played(self, ev: event_pb2.Event) -> None:
        p = ev.card_played
        v = self.view
        trick = v.current_trick
        trick.cards.add(seat=p.seat, card=p.card, timed_out=p.timed_out)
        trick.points += POINTS.get(p.card.rank, 0)
        if p.seat == self.my_seat:
            _remove(v.hand, p.card)
        seat_hand = self._seat_hand(p.seat)
        seat_hand.hand_size = max(0, seat_hand.hand_size - 1)
        _remove(seat_hand.public_cards, p.card)

    def _trick_taken(self, ev: event_pb2.Event) -> None:
        taken = ev.trick_taken
        v = self.view
        done = card_pb2.Trick()
        done.CopyFrom(taken.trick)
        # A card the server played on timeout stays marked (the event marks only the card
        # timed out in its own change).
        for played, seen in zip(done.cards, v.current_trick.cards, strict=False):
            played.timed_out = played.timed_out or seen.timed_out
        v.completed_tricks.append(done)
        winner = done.winner
        v.current_trick.CopyFrom(card_pb2.Trick(number=done.number + 1, leader=winner))
        self._seat_hand(winner).tricks_won += 1
        score = self._score(taken.winner_side)
        score.hand_card_points += done.points
        score.hand_tricks_won += 1

    def _card_drawn(self, ev: event_pb2.Event) -> None:
        d = ev.card_drawn
        v = self.view
        seat_hand = self._seat_hand(d.seat)
        seat_hand.hand_size += 1
        v.stock_size = d.stock_size
        if d.HasField("card"):
            if d.seat == self.my_seat:
                _insert(v.hand, d.card)
            if d.turned_card:
                _insert(seat_hand.public_cards, d.card)
        if d.turned_card or not d.stock_size:
            v.ClearField("turned_card")

    def _cante_sung(self, ev: event_pb2.Event) -> None:
        c = ev.cante_sung.cante
        self.view.cantes.append(c)
        public = self._seat_hand(c.seat).public_cards
        for shown in c.cards:
            if not any(same_card(shown, p) for p in public):
                _insert(public, shown)
        self._score(c.side).hand_cante_points += c.points

    def _tute_declared(self, ev: event_pb2.Event) -> None:
        t = ev.tute_declared.tute
        public = self._seat_hand(t.seat).public_cards
        for shown in t.cards:
            if not any(same_card(shown, p) for p in public):
                _insert(public, shown)

    def _trump_exchanged(self, ev: event_pb2.Event) -> None:
        x = ev.trump_exchanged
        v = self.view
        if x.seat == self.my_seat:
            _remove(v.hand, x.given)
            _insert(v.hand, x.taken)
        public = self._seat_hand(x.seat).public_cards
        _remove(public, x.given)
        _insert(public, x.taken)
        v.turned_card.CopyFrom(x.given)

    def _hand_scored(self, ev: event_pb2.Event) -> None:
        h = ev.hand_scored
        self.view.last_hand_result.CopyFrom(h.result)
        self._standing(h.scores)

    def _game_ended(self, ev: event_pb2.Event) -> None:
        self.view.game_results.append(ev.game_ended.result)
        for score in self.view.scores:
            score.game_score = 0

    def _match_ended(self, ev: event_pb2.Event) -> None:
        result = ev.match_ended.result
        v = self.view
        v.status = table_pb2.TABLE_STATUS_FINISHED
        v.match_result.CopyFrom(result)
        self._standing(result.scores)
        v.ClearField("turn_seat")
        v.ClearField("turn_deadline")
        v.turn_kind = table_pb2.TURN_KIND_UNSPECIFIED
        if not v.current_trick.cards:
            v.ClearField("current_trick")

    def _standing(self, scores: Sequence[score_pb2.SideScore]) -> None:
        for s in scores:
            score = self._score(s.side)
            score.game_score = s.game_score
            score.games_won = s.games_won
            score.match_points = s.match_points


_HANDLERS: Final = {
    "seat_joined": Table._seat_joined,
    "seat_left": Table._seat_left,
    "match_started": Table._match_started,
    "hand_dealt": Table._hand_dealt,
    "turn_started": Table._turn_started,
    "card_played": Table._card_played,
    "trick_taken": Table._trick_taken,
    "card_drawn": Table._card_drawn,
    "cante_sung": Table._cante_sung,
    "tute_declared": Table._tute_declared,
    "trump_exchanged": Table._trump_exchanged,
    "hand_scored": Table._hand_scored,
    "game_ended": Table._game_ended,
    "match_ended": Table._match_ended,
}


def _remove(cards: _Cards, c: card_pb2.Card) -> None:
    for i, held in enumerate(cards):
        if same_card(held, c):
            del cards[i]
            return


def _insert(cards: _Cards, c: card_pb2.Card) -> None:
    """Insert in hand order (by suit, strongest first)."""
    key = card_key(c)
    i = 0
    while i < len(cards) and card_key(cards[i]) <= key:
        i += 1
    cards.insert(i, c)
