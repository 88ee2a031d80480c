"""Cards and actions on the wire, for people: text forms, names, symbols, colours and order.

The text notation is the one ``protos/tute/v1/card.proto`` and ``action.proto`` describe:
a card is its rank and suit letter (``3E``, ``12O``), an action is a card, ``sing S``,
``tute 12`` / ``tute 11`` or ``exchange``.

>>> card_text(parse_card("12o"))
'12O'
>>> action_text(parse_action("sing copas"))
'sing C'
>>> [card_text(c) for c in sort_cards([parse_card(t) for t in ("2E", "1E", "12O", "3E")])]
['12O', '1E', '3E', '2E']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from tute.v1 import action_pb2, card_pb2

SUIT_LETTERS: Final[dict[int, str]] = {
    card_pb2.SUIT_OROS: "O",
    card_pb2.SUIT_COPAS: "C",
    card_pb2.SUIT_ESPADAS: "E",
    card_pb2.SUIT_BASTOS: "B",
}
SUIT_NAMES: Final[dict[int, str]] = {
    card_pb2.SUIT_OROS: "oros",
    card_pb2.SUIT_COPAS: "copas",
    card_pb2.SUIT_ESPADAS: "espadas",
    card_pb2.SUIT_BASTOS: "bastos",
}
SUIT_SYMBOLS: Final[dict[int, str]] = {
    card_pb2.SUIT_OROS: "◉",  # a coin
    card_pb2.SUIT_COPAS: "Ʊ",  # a cup
    card_pb2.SUIT_ESPADAS: "†",  # a sword
    card_pb2.SUIT_BASTOS: "♣",  # a baton
}
SUIT_COLOURS: Final[dict[int, str]] = {
    card_pb2.SUIT_OROS: "#e0a800",
    card_pb2.SUIT_COPAS: "#e03c31",
    card_pb2.SUIT_ESPADAS: "#3b82f6",
    card_pb2.SUIT_BASTOS: "#22a04b",
}
"""The colours of the Spanish pack: gold coins, red cups, blue swords, green batons."""

RANK_NAMES: Final = {1: "As", 10: "Sota", 11: "Caballo", 12: "Rey"}
RANKS: Final = (1, 2, 3, 4, 5, 6, 7, 10, 11, 12)
STRENGTH: Final = {2: 0, 4: 1, 5: 2, 6: 3, 7: 4, 10: 5, 11: 6, 12: 7, 3: 8, 1: 9}
"""Strength of a rank inside its suit (RULES.md §2): 1, 3, 12, 11, 10, 7, 6, 5, 4, 2."""
POINTS: Final = {1: 11, 3: 10, 12: 4, 11: 3, 10: 2}
"""Card points by rank (the others are worth 0)."""

_SUIT_BY_LETTER: Final = {
    "O": card_pb2.SUIT_OROS,
    "C": card_pb2.SUIT_COPAS,
    "E": card_pb2.SUIT_ESPADAS,
    "B": card_pb2.SUIT_BASTOS,
}
_SUIT_BY_WORD: Final = {
    **{letter.lower(): s for letter, s in _SUIT_BY_LETTER.items()},
    **{name: _SUIT_BY_LETTER[name[0].upper()] for name in SUIT_NAMES.values()},
}


def card(suit: card_pb2.Suit, rank: int) -> card_pb2.Card:
    """A ``Card`` message."""
    return card_pb2.Card(suit=suit, rank=rank)


def card_key(c: card_pb2.Card) -> tuple[int, int]:
    """The sort key of a card: by suit (oros, copas, espadas, bastos), strongest first."""
    return (int(c.suit), -STRENGTH.get(c.rank, -1))


def sort_cards(cards: Iterable[card_pb2.Card]) -> list[card_pb2.Card]:
    """Cards in the order the server sends a hand: by suit, then strongest first."""
    return sorted(cards, key=card_key)


def same_card(a: card_pb2.Card, b: card_pb2.Card) -> bool:
    return a.suit == b.suit and a.rank == b.rank


def card_text(c: card_pb2.Card) -> str:
    """``3E`` for the 3 of espadas; ``?`` for a card the caller may not see (unset)."""
    letter = SUIT_LETTERS.get(c.suit)
    if letter is None or c.rank not in STRENGTH:
        return "?"
    return f"{c.rank}{letter}"


def card_name(c: card_pb2.Card) -> str:
    """``Rey de oros``, ``3 de espadas``."""
    if c.suit not in SUIT_NAMES:
        return "a hidden card"
    return f"{RANK_NAMES.get(c.rank, str(c.rank))} de {SUIT_NAMES[c.suit]}"


def parse_suit(text: str) -> card_pb2.Suit:
    """``O``, ``oros``, ``c`` ... to a suit; ``ValueError`` otherwise."""
    suit = _SUIT_BY_WORD.get(text.strip().lower())
    if suit is None:
        raise ValueError(f"not a suit: {text!r} (O, C, E, B or oros, copas, espadas, bastos)")
    return suit


def parse_card(text: str) -> card_pb2.Card:
    """``3E``, ``12o`` to a ``Card``; ``ValueError`` otherwise."""
    t = text.strip().upper()
    suit = _SUIT_BY_LETTER.get(t[-1:])
    rank = int(t[:-1]) if t[:-1].isdigit() else 0
    if suit is None or rank not in STRENGTH:
        raise ValueError(f"not a card: {text!r} (rank 1-7, 10, 11, 12 and a suit letter O C E B)")
    return card_pb2.Card(suit=suit, rank=rank)


def action_text(a: action_pb2.Action) -> str:
    """The text form of an action: ``3E``, ``sing O``, ``tute 12``, ``exchange``."""
    kind = a.WhichOneof("kind")
    if kind == "play_card":
        return card_text(a.play_card)
    if kind == "sing":
        return f"sing {SUIT_LETTERS.get(a.sing, '?')}"
    if kind == "declare_tute":
        return f"tute {a.declare_tute.rank}"
    if kind == "exchange_trump":
        return "exchange"
    return "?"


def parse_action(text: str) -> action_pb2.Action:
    """The ``Action`` of a text form (case-insensitive); ``ValueError`` otherwise."""
    words = text.strip().lower().split()
    if words == ["exchange"]:
        return action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump())
    if len(words) == 1:
        return action_pb2.Action(play_card=parse_card(words[0]))
    if len(words) == 2 and words[0] in ("sing", "cante"):
        return action_pb2.Action(sing=parse_suit(words[1]))
    if len(words) == 2 and words[0] == "tute" and words[1] in ("12", "11"):
        return action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=int(words[1])))
    raise ValueError(f"not an action: {text!r} (a card, 'sing S', 'tute 12|11' or 'exchange')")


def action_name(a: action_pb2.Action) -> str:
    """For people: ``play Rey de oros``, ``sing in copas``, ``tute de reyes``,
    ``exchange the trump card``."""
    kind = a.WhichOneof("kind")
    if kind == "play_card":
        return f"play {card_name(a.play_card)}"
    if kind == "sing":
        return f"sing in {SUIT_NAMES.get(a.sing, '?')}"
    if kind == "declare_tute":
        return "tute de reyes" if a.declare_tute.rank == 12 else "tute de caballos"
    if kind == "exchange_trump":
        return "exchange the trump card"
    return "?"
