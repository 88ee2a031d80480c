"""Hand-built Tute positions in card notation, for the worked-example tests.

The one builder is :func:`position`: it starts from ``new_match(rules, seed)`` and replaces
the fields of the hand being played, so a test reads like a diagram::

    s = position(Rules(players=4), trump="E", leader=0, trick="11C",
                 hands={1: "12C 4O"})
    assert legal(s) == {"12C"}

Conventions (everything is card text, ``"12C 4O"``; suits are letters ``O C E B``):

- ``hands``: seat -> its cards now; seats not listed hold nothing.
- ``trick``: the cards already played to the current trick, the leader's first; the seat on
  turn is ``leader + len(trick)``.
- ``trump``: the trump suit; in 2p it defaults to the suit of the turned card (last of
  ``stock``). ``trump_card`` defaults to the turned card in 2p, otherwise to a card of the
  trump suit that is nowhere in the position (already played), or else one held by the dealer.
- ``stock`` (2p): the stock from the top, its last card being the turned trump card.
- ``trick_no`` defaults to what the cards imply: in the 2p stock phase from the stock size,
  otherwise from the leader's cards left (so a 4p leader with 2 cards leads trick 9).
- ``dealer`` defaults to the seat before the leader (right for trick 1).
- ``cantes``: ``[(seat, "C"), ...]`` sung earlier in this hand, in order (20 or 40 each), in
  the window of trick ``trick_no - 1`` (at least 2) unless a third item gives it: ``(0, "C", 3)``.
- ``held_at_win``: seat -> its hand when the previous trick ended (default: its hand now).
- ``won``: side -> the cards its tricks took; ``"*"`` means every card not elsewhere.
  ``tricks_won`` defaults to those cards / players; ``last_trick_of`` to the leader's side
  having won trick ``trick_no - 1`` and any other side with tricks trick 1 (pass it when a
  tie depends on it).
- ``public``: extra held cards that the table has seen. The 3p/4p trump card (when held),
  the 2p turned card (when held with the stock empty) and held cards of ``cantes`` are
  public anyway.
- Any other :class:`engine.State` field (``match_points``, ``game_scores``, ``window_used``,
  ``exchanged``, ``hand_no``...) may be passed as a keyword.

The builder checks that no card is in two places (and no ``2O`` in 3p).

Helpers: :func:`legal` (legal actions as texts), :func:`act` (apply moves in text),
:func:`rejects` (the reason code of an illegal action, checking the state is untouched),
:func:`deck_for` (a deck order that deals given hands), :func:`play_out`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import engine
from engine import IllegalAction, Rules, State, action_text, apply, legal_actions, new_match
from engine.cards import BIT, POINTS, SUIT_LETTERS, SUIT_OF, card_of, cards_of

__all__ = [
    "act",
    "cards",
    "deck_for",
    "events_of",
    "legal",
    "play_out",
    "position",
    "rejects",
    "texts",
]


def cards(text: str) -> tuple[int, ...]:
    """Card numbers of a text, in the order written."""
    return tuple(engine.parse_card(w) for w in text.split())


def texts(mask_or_cards: int | Iterable[int]) -> set[str]:
    """A mask or some cards as a set of texts."""
    cs = cards_of(mask_or_cards) if isinstance(mask_or_cards, int) else mask_or_cards
    return {engine.card_text(c) for c in cs}


def _suit(letter: str) -> int:
    return SUIT_LETTERS.index(letter.upper())


def position(  # noqa: C901 - a position builder: one branch per thing a test may set
    rules: Rules,
    hands: Mapping[int, str],
    *,
    trump: str | None = None,
    trick: str = "",
    leader: int = 0,
    stock: str = "",
    trick_no: int | None = None,
    trump_card: str | None = None,
    dealer: int | None = None,
    cantes: Sequence[tuple[int, str] | tuple[int, str, int]] = (),
    held_at_win: Mapping[int, str] | None = None,
    won: Mapping[int, str] | None = None,
    tricks_won: Sequence[int] | None = None,
    last_trick_of: Sequence[int] | None = None,
    public: str = "",
    seed: int = 0,
    **fields: Any,
) -> State:
    """A state in the middle of a hand; see the module docstring."""
    n = rules.players
    sides = rules.sides
    base = new_match(rules, seed)
    hand_masks = [0] * n
    for seat, text in hands.items():
        hand_masks[seat] = engine.parse_cards(text)
    trick_t = cards(trick)
    stock_t = cards(stock)
    if stock_t and n != 2:
        raise ValueError("only 2p has a stock")
    used = 0
    for m in [*hand_masks, *(BIT[c] for c in trick_t), *(BIT[c] for c in stock_t)]:
        if used & m:
            raise ValueError("a card is in two places")
        used |= m
    won_masks = [0] * sides
    rest_side = -1
    for side, text in (won or {}).items():
        if text.strip() == "*":
            rest_side = side
            continue
        m = engine.parse_cards(text)
        if used & m:
            raise ValueError("a won card is also in play")
        used |= m
        won_masks[side] = m
    pack = (1 << 40) - 1
    if n == 3:
        if used & BIT[card_of(0, 2)]:
            raise ValueError("3p plays without 2O")
        pack &= ~BIT[card_of(0, 2)]
    if rest_side >= 0:
        won_masks[rest_side] = pack & ~used
        used |= won_masks[rest_side]
    # Trump suit and card.
    if trump_card is not None:
        tc = engine.parse_card(trump_card)
    elif n == 2 and stock_t:
        tc = stock_t[-1]
    else:
        if trump is None:
            raise ValueError("say the trump suit")
        t = _suit(trump)
        free = [c for c in range(t * 10, t * 10 + 10) if pack >> c & 1 and not used >> c & 1]
        tc = free[0] if free else -1
    trump_suit = _suit(trump) if trump is not None else SUIT_OF[tc]
    if dealer is None:
        dealer = (leader - 1) % n
    if tc < 0:
        held = [c for c in cards_of(hand_masks[dealer]) if SUIT_OF[c] == trump_suit]
        tc = held[-1] if held else card_of(trump_suit, 4)
    # Trick number implied by the cards.
    if trick_no is None:
        if n == 2 and stock_t:
            trick_no = (40 - 2 * rules.hand_size_2p - len(stock_t)) // 2 + 1
        else:
            left = hand_masks[leader].bit_count() + (1 if trick_t else 0)
            trick_no = rules.tricks_per_hand - left + 1
    # Cantes of this hand.
    cante_t: list[tuple[int, int, int, int]] = []
    sung = 0
    sang_twenty = 0
    pub = engine.parse_cards(public)
    for cante in cantes:
        seat, letter = cante[0], cante[1]
        when = cante[2] if len(cante) == 3 else max(trick_no - 1, 2)
        s = _suit(letter)
        pts = 40 if s == trump_suit else 20
        cante_t.append((seat, s, pts, when))
        sung |= 1 << s
        if pts == 20:
            sang_twenty |= 1 << seat
        pub |= BIT[card_of(s, 12)] | BIT[card_of(s, 11)]
    all_held = 0
    for m in hand_masks:
        all_held |= m
    if n != 2 or not stock_t:
        pub |= BIT[tc]
    pub &= all_held
    # Tricks already won.
    won_points = tuple(sum(POINTS[c] for c in cards_of(m)) for m in won_masks)
    if tricks_won is None:
        tricks_won = [m.bit_count() // n for m in won_masks]
    if last_trick_of is None:
        lt = [1 if t else 0 for t in tricks_won]
        if trick_no > 1:
            lt[leader % 2 if n == 4 else leader] = trick_no - 1
        last_trick_of = lt
    held = list(hand_masks)
    for seat, text in (held_at_win or {}).items():
        held[seat] = engine.parse_cards(text)
    values: dict[str, Any] = {
        "dealer": dealer,
        "trump": trump_suit,
        "trump_card": tc,
        "hands": tuple(hand_masks),
        "stock": stock_t,
        "leader": leader,
        "turn": (leader + len(trick_t)) % n,
        "trick": trick_t,
        "trick_no": trick_no,
        "history": (),
        "won_points": won_points,
        "tricks_won": tuple(tricks_won),
        "last_trick_of": tuple(last_trick_of),
        "cantes": tuple(cante_t),
        "sung_suits": sung,
        "sang_twenty": sang_twenty,
        "window_used": 0,
        "exchanged": False,
        "held_at_win": tuple(held),
        "public": pub,
    }
    values.update(fields)
    return base._replace(**values)


def legal(state: State, seat: int | None = None) -> set[str]:
    """The legal actions of ``seat`` (default: the seat on turn) as texts."""
    return {action_text(a) for a in legal_actions(state, state.turn if seat is None else seat)}


def _move(state: State, move: str) -> tuple[int, int]:
    if ":" in move:
        seat_text, action = move.split(":", 1)
        return int(seat_text), engine.parse_action(action)
    return state.turn, engine.parse_action(move)


def act(state: State, *moves: str) -> tuple[State, list[engine.Event]]:
    """Apply moves in text, ``"12C"`` (by the seat on turn) or ``"2:sing O"`` (by seat 2);
    return the final state and every event."""
    events: list[engine.Event] = []
    for move in moves:
        seat, action = _move(state, move)
        state, evs = apply(state, seat, action)
        events.extend(evs)
    return state, events


def rejects(state: State, move: str) -> str:
    """The reason code with which ``apply`` refuses ``move``; checks the state is untouched."""
    seat, action = _move(state, move)
    before = engine.encode_state(state)
    try:
        apply(state, seat, action)
    except IllegalAction as exc:
        assert engine.encode_state(state) == before
        assert action not in legal_actions(state, seat)
        return exc.reason
    raise AssertionError(f"{move} was accepted")


def events_of(events: Iterable[engine.Event], kind: type) -> list[Any]:
    """The events of one type."""
    return [e for e in events if type(e) is kind]


def deck_for(rules: Rules, dealer: int, hands: Mapping[int, str], stock: str = "") -> list[int]:
    """A deck order that deals ``hands`` (seat -> its cards, in deal order) with ``dealer``.

    3p/4p: the dealer's last listed card is the trump card. 2p: ``stock`` lists the turned card
    first, then the stock from the top (that is ``d[2H], d[2H+1], ...``).
    """
    n = rules.players
    per = [cards(hands[s]) for s in range(n)]
    size = rules.hand_size
    deck = [per[(dealer + 1 + i) % n][i // n] for i in range(size * n)]
    deck.extend(cards(stock))
    return deck


def play_out(
    state: State, sing: bool = False, until_hand_ends: bool = True
) -> tuple[State, list[engine.Event]]:
    """Play the current hand to its end: in each window (when ``sing``) the leader, then its
    partner, make their first legal declaration while they have one; then the seat on turn
    plays its lowest-numbered legal card."""
    events: list[engine.Event] = []
    hand_no = state.hand_no
    while state.status == "playing" and state.hand_no == hand_no:
        if sing and not state.trick:
            declared = False
            n = state.rules.players
            for seat in (state.leader, (state.leader + 2) % n):
                decl = [a for a in legal_actions(state, seat) if a >= 40]
                if decl:
                    state, evs = apply(state, seat, decl[0])
                    events.extend(evs)
                    declared = True
                    break
            if declared:
                continue
        card = min(a for a in legal_actions(state, state.turn) if a < 40)
        state, evs = apply(state, state.turn, card)
        events.extend(evs)
        if not until_hand_ends:
            break
    return state, events


def random_action(
    rng: random.Random, state: State, acts: Sequence[int], forfeit_rate: float
) -> tuple[int, int]:
    """A random player's (seat, action) for the seat on turn, given its legal ``acts``: it
    forfeits (any seat) at ``forfeit_rate``, lets the clock run out (timeout) in 5% of turns,
    and otherwise prefers a declaration when it has one."""
    r = rng.random()
    declarations = [a for a in acts if a >= engine.SING]
    if r < forfeit_rate:
        return rng.randrange(state.rules.players), engine.FORFEIT
    if r < 0.05:
        return state.turn, engine.TIMEOUT
    if declarations and r < 0.8:
        return state.turn, rng.choice(declarations)
    return state.turn, rng.choice(acts)
