"""The state of a match: one immutable value (a named tuple of ints, tuples and the rules).

A state is never changed in place: :func:`engine.apply` returns a new one. It is hashable,
compares by value, and the codec (:mod:`engine.codec`) turns it into bytes and back.

Sides: in 4p seats 0 and 2 form side 0, seats 1 and 3 side 1; in 2p and 3p side = seat.
Per-side tuples (scores, points) are indexed by side; per-seat tuples by seat.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, NamedTuple

from .cards import Card, Mask
from .events import HandResult
from .rules import Rules


class Status(StrEnum):
    """Whether a match is being played or over."""

    PLAYING = "playing"
    OVER = "over"


PLAYING: Final = Status.PLAYING
OVER: Final = Status.OVER

SIDE_SEATS: Final[dict[int, tuple[tuple[int, ...], ...]]] = {
    2: ((0,), (1,)),
    3: ((0,), (1,), (2,)),
    4: ((0, 2), (1, 3)),
}
"""``SIDE_SEATS[players][side]``: the seats of a side, in seat order."""


def side_of(players: int, seat: int) -> int:
    """The side of ``seat``: ``seat % 2`` with 4 players, the seat itself otherwise."""
    return seat % 2 if players == 4 else seat


class State(NamedTuple):
    """A Tute match at one moment. Read its fields; build new ones only through the engine."""

    rules: Rules
    seed: int
    """Seed of the deals not given explicitly: hand ``h``'s pack is a function of (seed, h)."""
    decks: tuple[tuple[Card, ...], ...]
    """Packs given for the first hands (tests, replays); later hands use ``seed``."""
    status: Status
    hand_no: int
    """1 for the first hand of the match."""
    game_no: int
    """1 for the first game (points system); stays 1 in the hands system."""
    dealer: int
    game_scores: tuple[int, ...]
    """Per side: points in the current game (points system)."""
    match_points: tuple[int, ...]
    """Per side: match points (hands system)."""
    games_won: tuple[int, ...]
    """Per side: games won (points system)."""
    winners: tuple[int, ...]
    """Sides that won the match, once it is over."""
    end_reason: str
    """``score``, ``tute`` or ``forfeit`` once over; empty before."""
    last_result: HandResult | None
    """The result of the previous hand of this match."""
    trump: int
    trump_card: Card
    """The card that made trump at the deal (dealer's last card, or the 2p turned card)."""
    stock: tuple[Card, ...]
    """2p: the stock from the top; its last card is the turned trump card. Empty otherwise."""
    leader: int
    trick_no: int
    history: tuple[tuple[int, tuple[Card, ...], int], ...]
    """Completed tricks of this hand: (leader, cards in play order, winner)."""
    won_points: tuple[int, ...]
    """Per side: card points of the tricks won this hand."""
    tricks_won: tuple[int, ...]
    """Per side: tricks won this hand."""
    last_trick_of: tuple[int, ...]
    """Per side: the number of the latest trick it won in this hand (0: none)."""
    cantes: tuple[tuple[int, int, int, int], ...]
    """Cantes of this hand: (seat, suit, points, number of the trick whose window it was in)."""
    sung_suits: int
    """Bit s set: suit s was sung in this hand."""
    sang_twenty: int
    """Bit p set: seat p sang a 20 in this hand (for ``forty_before_twenty = strict``)."""
    held_at_win: tuple[Mask, ...]
    """Each seat's hand when the last card of the previous trick was played."""
    # -- the fields every card play changes come last (see engine.game._played) --
    hands: tuple[Mask, ...]
    trick: tuple[Card, ...]
    """Cards played to the current trick, the leader's first."""
    turn: int
    """The seat whose turn it is (to lead or to follow)."""
    public: Mask
    """Held cards shown to everyone (RULES.md §3)."""
    window_used: int
    """Bit of each side that used its cante allowance in the current window."""
    exchanged: bool
    """An exchange was made in the current lead turn."""
    turn_id: int
    """Grows by one every time a turn begins: a timer for a turn names its turn_id."""

    @property
    def players(self) -> int:
        return self.rules.players

    @property
    def over(self) -> bool:
        return self.status == OVER

    def side_of(self, seat: int) -> int:
        """The side of a seat."""
        return side_of(self.rules.players, seat)
