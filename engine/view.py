"""What one seat (or a spectator) may see of a match: the only way information leaves the engine.

A seat sees its own hand, everything played (the current trick and the tricks of this hand),
the public held cards of RULES.md §3 (the 3p/4p trump card until played, the 2p turned card
under the stock and once held, cards shown in a cante, a tute or an exchange), hand sizes,
scores, and its own legal actions. A spectator (``seat = None``) sees no private card.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from ._fast import new_tuple, trick_pairs
from .cards import Card, Mask
from .events import HandResult
from .game import legal_actions
from .state import State, Status


class View(NamedTuple):
    """One seat's (or a spectator's) picture of the match."""

    seat: int | None
    players: int
    status: Status
    hand_no: int
    game_no: int
    dealer: int
    trump: int
    trump_card: Card
    """The card that made trump at the deal (public, §3)."""
    hand: Mask
    """The viewer's own hand (0 for a spectator)."""
    hand_sizes: tuple[int, ...]
    public_cards: tuple[Mask, ...]
    """Per seat: its held cards everybody may see (§3)."""
    turned_card: Card
    """2p: the turned trump card under the stock, -1 when the stock is empty (or 3p/4p)."""
    stock_size: int
    leader: int
    turn: int
    trick_no: int
    trick: tuple[tuple[int, Card], ...]
    """The current trick: (seat, card) in play order."""
    history: tuple[tuple[int, tuple[Card, ...], int], ...]
    """Completed tricks of this hand: (leader, cards in play order, winner)."""
    tricks_won: tuple[int, ...]
    won_points: tuple[int, ...]
    cantes: tuple[tuple[int, int, int, int], ...]
    """Cantes of this hand: (seat, suit, points, trick number)."""
    game_scores: tuple[int, ...]
    match_points: tuple[int, ...]
    games_won: tuple[int, ...]
    last_result: HandResult | None
    winners: tuple[int, ...]
    end_reason: str
    legal: tuple[int, ...]
    """The viewer's legal actions now (empty for a spectator)."""
    turn_id: int
    held_at_win: Mask = -1
    """The viewer's hand when the last trick ended, before any draw: the cards a cante may use
    under ``cante_requires_held_at_win`` (the viewer knows which card it drew). -1: not known
    (a spectator, or a view rebuilt from the wire)."""


def view(state: State, seat: int | None) -> View:
    """The match as ``seat`` sees it; ``None`` for a spectator."""
    n = state.rules.players
    public = state.public
    hands = state.hands
    leader = state.leader
    trick = state.trick
    return new_tuple(
        _VIEW,
        (
            seat,
            n,
            state.status,
            state.hand_no,
            state.game_no,
            state.dealer,
            state.trump,
            state.trump_card,
            hands[seat] if seat is not None else 0,
            tuple([h.bit_count() for h in hands]),
            tuple([h & public for h in hands]),
            state.stock[-1] if state.stock else -1,
            len(state.stock),
            leader,
            state.turn,
            state.trick_no,
            trick_pairs(n, leader, trick) if trick else (),
            state.history,
            state.tricks_won,
            state.won_points,
            state.cantes,
            state.game_scores,
            state.match_points,
            state.games_won,
            state.last_result,
            state.winners,
            state.end_reason,
            legal_actions(state, seat) if seat is not None else (),
            state.turn_id,
            state.held_at_win[seat] if seat is not None else -1,
        ),
    )


_VIEW: Final[type[View]] = View
"""View as a constant, for :func:`~engine._fast.new_tuple` (field order: the tuple above)."""


def visible_to(v: View) -> Mask:
    """Every card of the current deal the view shows (for checks: no hidden card may be in it).

    ``last_result`` is left out: its tute cards belong to the previous deal.
    """
    m = v.hand
    for p in v.public_cards:
        m |= p
    if v.turned_card >= 0:
        m |= 1 << v.turned_card
    for _, c in v.trick:
        m |= 1 << c
    for _, cards, _ in v.history:
        for c in cards:
            m |= 1 << c
    return m | 1 << v.trump_card
