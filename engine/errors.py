"""The engine's errors: one small hierarchy, each error with a stable reason code.

- :class:`InvalidInput`: malformed input (unknown card or action text, a bad deck).
- :class:`InvalidOption`: a rules option with a value outside RULES.md §12; ``option`` names it.
- :class:`IllegalAction`: a well-formed action the rules forbid now (wrong seat, a card the
  arrastre forbids, a cante not allowed, the match is over). ``reason`` names the rule.

Messages never name a card the actor may not see: they name the rule, the suit led and the
trump suit only, so they are safe to log and to send to the actor.
"""

from __future__ import annotations


class TuteError(Exception):
    """Base of every engine error. ``reason`` is a stable snake_case code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class InvalidInput(TuteError):
    """Malformed input: text that is not a card or action, an impossible deck."""


class InvalidOption(TuteError):
    """A rules option outside its values (RULES.md §12); ``option`` is its name."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__("invalid_option", f"{option}: {message}")
        self.option = option


class IllegalAction(TuteError):
    """An action the rules forbid in this state. The state is never changed.

    Reasons: ``not_your_turn``, ``match_over``, ``card_not_held``, ``must_follow_suit``,
    ``must_beat``, ``must_trump``, ``must_overtrump``, ``cante_not_allowed``,
    ``tute_not_allowed``, ``exchange_not_allowed``, ``unknown_action``.
    """


REASONS: tuple[str, ...] = (
    "not_your_turn",
    "match_over",
    "card_not_held",
    "must_follow_suit",
    "must_beat",
    "must_trump",
    "must_overtrump",
    "cante_not_allowed",
    "tute_not_allowed",
    "exchange_not_allowed",
    "unknown_action",
)
"""Every reason code an :class:`IllegalAction` may carry."""

INPUT_REASONS: tuple[str, ...] = (
    "invalid_option",
    "bad_action",
    "bad_action_text",
    "bad_card_text",
    "bad_suit_text",
    "bad_deck",
    "bad_seat",
    "bad_state_bytes",
)
"""Every other reason code the engine raises: :class:`InvalidInput`'s and :class:`InvalidOption`'s
(``unknown_action``, an :class:`InvalidInput`'s too, is in :data:`REASONS`)."""
