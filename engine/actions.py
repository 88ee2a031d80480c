"""Actions as dense integers with a short text form that parses back.

==========  ===========================  ==================
action      meaning                      text
==========  ===========================  ==================
0..39       play that card               ``3E``, ``12O``
40..43      sing (cante) the suit        ``sing O``
44          declare tute de reyes        ``tute 12``
45          declare tute de caballos     ``tute 11``
46          exchange the turned trump    ``exchange``
47          timeout (server only)        ``timeout``
48          forfeit (server only)        ``forfeit``
==========  ===========================  ==================

``timeout`` and ``forfeit`` are the automatic actions a server applies (RULES.md §11); they
are never in :func:`engine.legal_actions`, which lists what a player may choose (the actions
below :data:`NUM_PLAYER_ACTIONS`). :func:`kind_of` names an action's kind.

>>> [action_text(a) for a in (parse_action("3e"), parse_action("sing copas"), TUTE_11)]
['3E', 'sing C', 'tute 11']
>>> [str(kind_of(a)) for a in (parse_action("3e"), SING + 2, TUTE_12, EXCHANGE, FORFEIT)]
['card', 'sing', 'tute', 'exchange', 'forfeit']
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from .cards import NUM_CARDS, SUIT_LETTERS, card_text, parse_card, parse_suit
from .errors import InvalidInput

Action = int

SING: Final = 40
"""``SING + suit`` sings that suit (the actions after the :data:`~engine.cards.NUM_CARDS`
cards)."""
TUTE_12: Final = 44
TUTE_11: Final = 45
EXCHANGE: Final = 46
TIMEOUT: Final = 47
FORFEIT: Final = 48
NUM_PLAYER_ACTIONS: Final = 47
"""The actions a player may choose are ``0 .. NUM_PLAYER_ACTIONS - 1`` (cards, cantes, tutes,
the exchange); ``TIMEOUT`` and ``FORFEIT`` are the server's."""
assert SING == NUM_CARDS and NUM_PLAYER_ACTIONS == EXCHANGE + 1


class ActionKind(StrEnum):
    """What an action does."""

    CARD = "card"
    SING = "sing"
    TUTE = "tute"
    EXCHANGE = "exchange"
    TIMEOUT = "timeout"
    FORFEIT = "forfeit"


def kind_of(action: Action) -> ActionKind:
    """The kind of an action number; :class:`InvalidInput` (``bad_action``) for no action."""
    if 0 <= action < NUM_CARDS:
        return ActionKind.CARD
    if SING <= action < SING + 4:
        return ActionKind.SING
    if action in (TUTE_12, TUTE_11):
        return ActionKind.TUTE
    if action == EXCHANGE:
        return ActionKind.EXCHANGE
    if action == TIMEOUT:
        return ActionKind.TIMEOUT
    if action == FORFEIT:
        return ActionKind.FORFEIT
    raise InvalidInput("bad_action", "not an action number")


def is_card(action: Action) -> bool:
    """Whether the action plays a card."""
    return 0 <= action < NUM_CARDS


def is_sing(action: Action) -> bool:
    """Whether the action sings a suit (a cante)."""
    return SING <= action < SING + 4


def sing(suit: int) -> Action:
    """The action singing ``suit``."""
    return SING + suit


def tute(rank: int) -> Action:
    """The tute action of rank 12 (reyes) or 11 (caballos)."""
    if rank == 12:
        return TUTE_12
    if rank == 11:
        return TUTE_11
    raise InvalidInput("bad_action_text", "a tute is of rank 12 or 11")


def action_text(action: Action) -> str:
    """The short text of an action."""
    if 0 <= action < NUM_CARDS:
        return card_text(action)
    if SING <= action < SING + 4:
        return f"sing {SUIT_LETTERS[action - SING]}"
    names = {TUTE_12: "tute 12", TUTE_11: "tute 11", EXCHANGE: "exchange", TIMEOUT: "timeout"}
    if action in names:
        return names[action]
    if action == FORFEIT:
        return "forfeit"
    raise InvalidInput("bad_action", "not an action number")


def parse_action(text: str) -> Action:
    """Parse the text form of an action (case-insensitive)."""
    words = text.strip().lower().split()
    if len(words) == 1:
        word = words[0]
        fixed = {"exchange": EXCHANGE, "timeout": TIMEOUT, "forfeit": FORFEIT}
        if word in fixed:
            return fixed[word]
        return parse_card(word)
    if len(words) == 2 and words[0] in ("sing", "cante"):
        return SING + parse_suit(words[1])
    if len(words) == 2 and words[0] == "tute" and words[1] in ("12", "11"):
        return tute(int(words[1]))
    raise InvalidInput(
        "bad_action_text", "not an action: a card, 'sing S', 'tute 12|11' or 'exchange'"
    )
