"""The engine's speed plumbing, kept out of the rules: positional state builders, shared events
and seat tables.

The rules (:mod:`engine.game`) say *what* changes; these helpers build the new value the
cheap way. A :class:`~engine.state.State` is rebuilt from a tuple in field order (one
``tuple.__new__``, several times cheaper than ``_replace``), which is why the asserts below
pin the field order each builder relies on: reordering ``State`` fails here, at import.
Events and (seat, card) pairs are immutable, so one of each is shared by every match.
Tuples are built by concatenation (``a + b``, not ``(*a, b)``): compiled, that is one call.
Compiled, :func:`with_play` and :func:`with_trick_done` list the kept fields one by one (one
tuple built); interpreted, a slice and a concatenation cost less than the subscripts, so
they take that branch (:data:`COMPILED`).
"""

from __future__ import annotations

from typing import Final, cast

from .cards import ALL_CARDS, NUM_CARDS, SUIT_OF, Card, Mask
from .events import CardPlayed
from .state import State

new_tuple: Final = tuple.__new__
"""``new_tuple(cls, values)``: a named tuple of class ``cls`` from a tuple in field order."""
_STATE: Final[type[State]] = State
"""State as a constant: compiled code reads it directly instead of from the module dict."""
_CARD_PLAYED: Final[type[CardPlayed]] = CardPlayed
COMPILED: Final = not __file__.endswith(".py")
"""Whether this module runs compiled (mypyc builds it into an extension module)."""

_HAND_NO: Final = State._fields.index("hand_no")
_DEALER: Final = State._fields.index("dealer")
_TRUMP: Final = State._fields.index("trump")
_TRICK_FIELDS: Final = State._fields.index("stock")
_PLAY_FIELDS: Final = State._fields.index("hands")
assert State._fields[_HAND_NO : _DEALER + 1] == ("hand_no", "game_no", "dealer")
assert State._fields[_TRUMP:] == (
    "trump", "trump_card", "stock", "leader", "trick_no", "history", "won_points",
    "tricks_won", "last_trick_of", "cantes", "sung_suits", "sang_twenty", "held_at_win",
    "hands", "trick", "turn", "public", "window_used", "exchanged", "turn_id",
)  # fmt: skip
assert _TRICK_FIELDS == _TRUMP + 2 and _PLAY_FIELDS == _TRUMP + 13
assert _PLAY_FIELDS == 26 and len(State._fields) == 33  # with_play lists fields 0 .. 25
assert _TRICK_FIELDS == 15  # with_trick_done lists fields 0 .. 14


def with_deal(
    state: State,
    hand_no: int,
    dealer: int,
    trump_card: Card,
    stock: tuple[Card, ...],
    hands: tuple[Mask, ...],
    public: Mask,
) -> State:
    """``state`` with hand ``hand_no`` just dealt: every field of a hand starts afresh, the
    mano (the dealer's right) leads trick 1, and a new turn begins."""
    zeros = (0,) * state.rules.sides
    mano = (dealer + 1) % state.rules.players
    return new_tuple(
        _STATE,
        state[:_HAND_NO]  # noqa: RUF005 (concatenation: one call in compiled code)
        + (hand_no, state.game_no, dealer)
        + state[_DEALER + 1 : _TRUMP]
        + (
            SUIT_OF[trump_card],
            trump_card,
            stock,
            mano,  # leader
            1,  # trick_no
            (),  # history
            zeros,  # won_points
            zeros,  # tricks_won
            zeros,  # last_trick_of
            (),  # cantes
            0,  # sung_suits
            0,  # sang_twenty
            hands,  # held_at_win
            hands,
            (),  # trick
            mano,  # turn
            public,
            0,  # window_used
            False,  # exchanged
            state.turn_id + 1,
        ),
    )


def with_play(
    state: State, hands: tuple[Mask, ...], trick: tuple[Card, ...], turn: int, public: Mask
) -> State:
    """``state`` after a card that does not end the trick: only the per-play fields (the last
    ones of State) change, and the next seat's turn begins.

    The kept fields are listed one by one (``s[0]`` ... ``s[25]``, asserted above as the ones
    before ``hands``): one tuple is built, where a slice and a concatenation would build
    two more and copy every field through each. Interpreted, the slice costs less."""
    if not COMPILED:
        return new_tuple(
            _STATE,
            state[:_PLAY_FIELDS]  # noqa: RUF005 (one slice, one concatenation)
            + (hands, trick, turn, public, 0, False, state.turn_id + 1),
        )
    s: tuple[object, ...] = state
    return new_tuple(
        _STATE,
        (
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12],
            s[13], s[14], s[15], s[16], s[17], s[18], s[19], s[20], s[21], s[22], s[23], s[24],
            s[25], hands, trick, turn, public, 0, False, state.turn_id + 1,
        ),
    )  # fmt: skip


def with_trick_done(
    state: State,
    stock: tuple[Card, ...],
    winner: int,
    trick: tuple[Card, ...],
    won_points: tuple[int, ...],
    tricks_won: tuple[int, ...],
    last_trick_of: tuple[int, ...],
    held_at_win: tuple[Mask, ...],
    hands: tuple[Mask, ...],
    public: Mask,
) -> State:
    """``state`` after its current ``trick`` (complete) went to ``winner``: the trick joins the
    history, the next trick begins with the winner's lead (its declaration window open).
    The kept fields ``s[0]`` ... ``s[14]`` (those before ``stock``) are listed one by one, as
    in :func:`with_play` (interpreted: a slice, as there)."""
    if not COMPILED:
        return new_tuple(
            _STATE,
            state[:_TRICK_FIELDS]  # noqa: RUF005 (one slice, one concatenation)
            + (
                stock, winner, state.trick_no + 1,
                state.history + ((state.leader, trick, winner),),  # noqa: RUF005
                won_points, tricks_won, last_trick_of, state.cantes, state.sung_suits,
                state.sang_twenty, held_at_win, hands, (), winner, public, 0, False,
                state.turn_id + 1,
            ),
        )  # fmt: skip
    s: tuple[object, ...] = state
    return new_tuple(
        _STATE,
        (
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12],
            s[13], s[14],
            stock,
            winner,  # leader
            state.trick_no + 1,
            state.history + ((state.leader, trick, winner),),  # noqa: RUF005
            won_points,
            tricks_won,
            last_trick_of,
            state.cantes,
            state.sung_suits,
            state.sang_twenty,
            held_at_win,
            hands,
            (),  # trick
            winner,  # turn
            public,
            0,  # window_used
            False,  # exchanged
            state.turn_id + 1,
        ),
    )  # fmt: skip


def with_item(t: tuple[int, ...], i: int, value: int) -> tuple[int, ...]:
    """``t`` (per seat or per side: 2, 3 or 4 items) with item ``i`` replaced by ``value``."""
    r: tuple[object, ...] = t
    v: object = value
    out: tuple[object, ...]
    if len(r) == 4:
        if i == 0:
            out = (v, r[1], r[2], r[3])
        elif i == 1:
            out = (r[0], v, r[2], r[3])
        elif i == 2:
            out = (r[0], r[1], v, r[3])
        else:
            out = (r[0], r[1], r[2], v)
    elif len(r) == 3:
        out = (v, r[1], r[2]) if i == 0 else (r[0], v, r[2]) if i == 1 else (r[0], r[1], v)
    else:
        out = (v, r[1]) if i == 0 else (r[0], v)
    return cast(tuple[int, ...], out)


def trick_pairs(players: int, leader: int, trick: tuple[Card, ...]) -> tuple[tuple[int, Card], ...]:
    """The (seat, card) pairs of a (started or complete) trick led by ``leader``, in play
    order."""
    order = SEAT_ORDER[players][leader]
    pairs = SEAT_CARD
    if len(trick) == 4:
        return (
            pairs[order[0]][trick[0]],
            pairs[order[1]][trick[1]],
            pairs[order[2]][trick[2]],
            pairs[order[3]][trick[3]],
        )
    return tuple([pairs[order[i]][trick[i]] for i in range(len(trick))])


MAX_TRICKS: Final = 20
"""The most tricks of a hand (2p): trick numbers run from 1 to this."""
_PLAYED: Final[list[tuple[CardPlayed, ...] | None]] = [None] * (
    (MAX_TRICKS + 1) * 4 * NUM_CARDS * 2
)
"""The shared 1-tuples :func:`played` returns, filled as plays first reach them: item
``((trick_no * 4 + seat) * 40 + card) * 2 + auto``. A few objects per (trick, seat, card)
actually played, not all 6,720 at import (the garbage collector tracks each of them)."""


def played(trick_no: int, seat: int, card: Card, auto: bool) -> tuple[CardPlayed, ...]:
    """``(CardPlayed(seat, card, auto, trick_no),)``, one shared tuple per argument set."""
    i = ((trick_no * 4 + seat) * NUM_CARDS + card) * 2 + auto
    events = _PLAYED[i]
    if events is None:
        events = (new_tuple(_CARD_PLAYED, (seat, card, auto, trick_no)),)
        _PLAYED[i] = events
    return events


ONE_CARD: Final = tuple((c,) for c in ALL_CARDS)
"""``ONE_CARD[c]`` is ``(c,)``."""
SEAT_CARD: Final = tuple(tuple((seat, c) for c in ALL_CARDS) for seat in range(4))
"""(seat, card) pairs, shared by every TrickTaken and view: ``SEAT_CARD[seat][card]``."""
SEAT_ORDER: Final = {
    n: tuple(tuple((lead + i) % n for i in range(n)) for lead in range(n)) for n in (2, 3, 4)
}
"""``SEAT_ORDER[players][leader]``: the seats in play order of a trick."""
