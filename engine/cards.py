"""Cards of the Spanish pack as small integers, hands as bit masks.

A card is an ``int`` in ``0..39``: ``suit * 10 + rank_index``, where suits are ordered
oros, copas, espadas, bastos (``O C E B``, also the tie-break order of RULES.md §11) and
``rank_index`` walks the ranks ``1 2 3 4 5 6 7 10 11 12`` (there are no 8s or 9s).
A set of cards (a hand, the cards won) is a bit mask: bit ``c`` set means card ``c`` is in it.

Every fact about a card is a lookup in a table built once at import: its suit, its rank,
its *strength* inside the suit (RULES.md §2: 1, 3, 12, 11, 10, 7, 6, 5, 4, 2 from strongest
down; 2 has strength 0 and the ace 9) and its points (1 → 11, 3 → 10, rey → 4, caballo → 3,
sota → 2, the rest 0).

The short text form is rank followed by suit letter: ``3E`` (tres de espadas), ``12O``
(rey de oros), ``10B`` (sota de bastos).

>>> parse_card("12O") == card_of(OROS, 12)
True
>>> card_text(parse_card("3E"))
'3E'
>>> mask_text(mask_of([parse_card("1C"), parse_card("12C")]))
'1C 12C'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from .errors import InvalidInput

Card = int
"""A card, ``0..39``."""
Mask = int
"""A set of cards as a bit mask over card numbers."""

OROS, COPAS, ESPADAS, BASTOS = 0, 1, 2, 3
SUITS: Final[tuple[int, ...]] = (OROS, COPAS, ESPADAS, BASTOS)
SUIT_LETTERS: Final = "OCEB"
SUIT_NAMES: Final = ("oros", "copas", "espadas", "bastos")

RANKS: Final[tuple[int, ...]] = (1, 2, 3, 4, 5, 6, 7, 10, 11, 12)
"""Ranks in card-number order inside a suit (not in strength order)."""
SOTA, CABALLO, REY = 10, 11, 12

_STRENGTH_BY_RANK = {2: 0, 4: 1, 5: 2, 6: 3, 7: 4, 10: 5, 11: 6, 12: 7, 3: 8, 1: 9}
_POINTS_BY_RANK = {1: 11, 3: 10, 12: 4, 11: 3, 10: 2}

NUM_CARDS: Final = 40
"""The Spanish pack: cards are the numbers ``0 .. NUM_CARDS - 1``."""
ALL_CARDS: Final[tuple[Card, ...]] = tuple(range(NUM_CARDS))
FULL_PACK: Final[Mask] = (1 << NUM_CARDS) - 1

SUIT_OF: Final[tuple[int, ...]] = tuple(c // 10 for c in ALL_CARDS)
RANK_OF: Final[tuple[int, ...]] = tuple(RANKS[c % 10] for c in ALL_CARDS)
STRENGTH: Final[tuple[int, ...]] = tuple(_STRENGTH_BY_RANK[RANK_OF[c]] for c in ALL_CARDS)
POINTS: Final[tuple[int, ...]] = tuple(_POINTS_BY_RANK.get(RANK_OF[c], 0) for c in ALL_CARDS)
BIT: Final[tuple[Mask, ...]] = tuple(1 << c for c in ALL_CARDS)
SUIT_MASK: Final[tuple[Mask, ...]] = tuple(0x3FF << (10 * s) for s in SUITS)

STRONGER: Final[tuple[Mask, ...]] = tuple(
    sum(BIT[d] for d in ALL_CARDS if SUIT_OF[d] == SUIT_OF[c] and STRENGTH[d] > STRENGTH[c])
    for c in ALL_CARDS
)
"""``STRONGER[c]``: the cards of ``c``'s suit that beat ``c``."""


def card_of(suit: int, rank: int) -> Card:
    """The card of ``suit`` and ``rank`` (1..7, 10, 11, 12)."""
    return suit * 10 + RANKS.index(rank)


def card_text(card: Card) -> str:
    """``3E`` for the 3 of espadas."""
    return f"{RANK_OF[card]}{SUIT_LETTERS[SUIT_OF[card]]}"


_CARD_BY_TEXT: Final = {card_text(c): c for c in ALL_CARDS}


def parse_card(text: str) -> Card:
    """Parse ``3E``, ``12o``, `` 1B ``; raise :class:`InvalidInput` otherwise."""
    card = _CARD_BY_TEXT.get(text.strip().upper())
    if card is None:
        raise InvalidInput(
            "bad_card_text", "not a card: expected rank (1-7, 10-12) and suit O/C/E/B"
        )
    return card


def parse_suit(text: str) -> int:
    """Parse a suit letter (``O C E B``) or its Spanish name."""
    t = text.strip().lower()
    for s in SUITS:
        if t in (SUIT_LETTERS[s].lower(), SUIT_NAMES[s]):
            return s
    raise InvalidInput("bad_suit_text", "not a suit: expected O, C, E or B")


# Mask → tuple of cards, by 10-bit chunks: four lookups instead of a bit loop.
_CHUNK: Final[tuple[tuple[tuple[Card, ...], ...], ...]] = tuple(
    tuple(tuple(s * 10 + i for i in range(10) if m >> i & 1) for m in range(1024)) for s in SUITS
)


def cards_of(mask: Mask) -> tuple[Card, ...]:
    """The cards of a mask in card-number order."""
    return (
        _CHUNK[0][mask & 0x3FF]
        + _CHUNK[1][(mask >> 10) & 0x3FF]
        + _CHUNK[2][(mask >> 20) & 0x3FF]
        + _CHUNK[3][mask >> 30]
    )


def mask_of(cards: Iterable[Card]) -> Mask:
    """The mask of some cards."""
    m = 0
    for c in cards:
        m |= BIT[c]
    return m


def mask_text(mask: Mask) -> str:
    """Cards of a mask as text, ``'1C 12C'``."""
    return " ".join(card_text(c) for c in cards_of(mask))


def parse_cards(text: str) -> Mask:
    """Parse space-separated cards into a mask; duplicates are an error."""
    m = 0
    for word in text.split():
        c = parse_card(word)
        if m & BIT[c]:
            raise InvalidInput("bad_card_text", "a card is listed twice")
        m |= BIT[c]
    return m


def trick_winner(trick: Sequence[Card], trump: int) -> int:
    """Position in ``trick`` of the winning card (§4.4)."""
    led_suit = SUIT_OF[trick[0]]
    win = 0
    for pos in range(1, len(trick)):
        c = trick[pos]
        w = trick[win]
        s = SUIT_OF[c]
        if s == SUIT_OF[w]:
            if STRENGTH[c] > STRENGTH[w]:
                win = pos
        elif s == trump or (s == led_suit and SUIT_OF[w] != trump):
            win = pos
    return win


def trick_standing(trick: Sequence[Card], trump: int) -> tuple[Card, int, Card, bool]:
    """Where a started trick stands (§5): the card winning it so far and its position in the
    trick, the strongest card of the led suit so far, and whether it has been trumped.

    >>> trick_standing((parse_card("3C"), parse_card("1C"), parse_card("2O")), 0)[:2] == (
    ...     parse_card("2O"), 2)
    True
    """
    led = trick[0]
    led_suit = SUIT_OF[led]
    win = led
    best_led = led
    win_pos = 0
    trumped = False
    for pos in range(1, len(trick)):
        c = trick[pos]
        s = SUIT_OF[c]
        if s == led_suit:
            if STRENGTH[c] > STRENGTH[best_led]:
                best_led = c
            if SUIT_OF[win] == led_suit and STRENGTH[c] > STRENGTH[win]:
                win, win_pos = c, pos
        elif s == trump:
            trumped = True
            if SUIT_OF[win] != trump or STRENGTH[c] > STRENGTH[win]:
                win, win_pos = c, pos
    return win, win_pos, best_led, trumped
