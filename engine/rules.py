"""Every option of RULES.md §12 in one frozen value, and the presets of §13.

>>> r = Rules.preset("tres")
>>> (r.players, r.scoring, r.tute_effect)
(3, <Scoring.HANDS: 'hands'>, <TuteEffect.WINS_MATCH: 'wins_match'>)
>>> Rules(players=5)
Traceback (most recent call last):
...
engine.errors.InvalidOption: invalid_option: players: must be one of 2, 3, 4
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from .errors import InvalidOption


class StockPhaseRules(enum.StrEnum):
    """How a follower may play in the 2p stock phase (§5)."""

    FREE = "free"
    TRUMP_LEAD = "trump_lead"
    STRICT = "strict"


class CannotOvertrump(enum.StrEnum):
    """What a player void in the led suit may play when unable to overtrump (§5.3)."""

    FREE = "free"
    MUST_TRUMP = "must_trump"


class CanteSingers(enum.StrEnum):
    """Who may sing in 4p (§6.1)."""

    WINNER = "winner"
    SIDE = "side"


class CantesPerTrick(enum.StrEnum):
    """How many cantes (and tutes) one window allows (§6.3)."""

    ONE = "one"
    UNLIMITED = "unlimited"


class FortyBeforeTwenty(enum.StrEnum):
    """Ordering of the 40 and the 20s (§6.4)."""

    OFF = "off"
    HOLD = "hold"
    STRICT = "strict"


class TuteEffect(enum.StrEnum):
    """What a declared tute wins (§7)."""

    WINS_UNIT = "wins_unit"
    WINS_MATCH = "wins_match"


class Scoring(enum.StrEnum):
    """The match scoring system (§10)."""

    POINTS = "points"
    HANDS = "hands"


class TieRule(enum.StrEnum):
    """Who wins a tie for highest (§9, §10)."""

    LAST_TRICK = "last_trick"
    NONE = "none"


RANDOM_DEALER = "random"

_CHOICES: dict[str, tuple[Any, ...]] = {
    "players": (2, 3, 4),
    "hand_size_2p": (6, 8),
    "capote_value": (1, 2),
}
_ENUMS: dict[str, type[enum.StrEnum]] = {
    "stock_phase_rules": StockPhaseRules,
    "cannot_overtrump": CannotOvertrump,
    "cante_singers": CanteSingers,
    "cantes_per_trick": CantesPerTrick,
    "forty_before_twenty": FortyBeforeTwenty,
    "tute_effect": TuteEffect,
    "scoring": Scoring,
    "tie_rule": TieRule,
}
_BOOLS = (
    "head_led_suit_when_trumped",
    "partner_relief",
    "cante_requires_held_at_win",
    "cantes_only_with_stock",
    "tute_enabled",
    "tute_requires_no_prior_cante",
    "swap_seven",
    "swap_two_for_low",
    "swap_requires_trick_won",
)
_INT_RANGES = {
    "tute_unit_value": (1, 15),
    "target_points": (1, 1000),
    "games_to_win": (1, 15),
    "target_match_points": (1, 15),
    "turn_time_s": (0, 3600),
}
"""The integer options' bounds (inclusive). The upper ones keep every match finite: a
played-out hand hands out 130 points, and a hand with a winner at least one match point, so
each target is reached within a bounded number of hands (tied hands under ``tie_rule =
none`` aside, which score nothing), and each turn lasts at most the turn time."""


def _check(name: str, value: Any) -> Any:
    """The value of option ``name`` (an enum option's string becomes its member), or
    :class:`InvalidOption`. ``first_dealer``'s seat range is checked against ``players`` later.
    """
    if name in _CHOICES:
        choices = _CHOICES[name]
        if type(value) is not int or value not in choices:
            raise InvalidOption(name, "must be one of " + ", ".join(map(str, choices)))
    elif name in _ENUMS:
        kind = _ENUMS[name]
        if not isinstance(value, kind):
            if not (isinstance(value, str) and value in kind._value2member_map_):
                raise InvalidOption(name, "must be one of " + ", ".join(m.value for m in kind))
            value = kind(value)
    elif name in _BOOLS:
        if type(value) is not bool:
            raise InvalidOption(name, "must be true or false")
    elif name in _INT_RANGES:
        low, high = _INT_RANGES[name]
        if type(value) is not int or not low <= value <= high:
            raise InvalidOption(name, f"must be an integer from {low} to {high}")
    elif name == "first_dealer" and value != RANDOM_DEALER and type(value) is not int:
        raise InvalidOption("first_dealer", "must be 'random' or a seat number")
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class Rules:
    """The options of a table (RULES.md §12). Defaults are §12's; invalid values raise.

    Enum options may be given as their strings (``scoring="hands"``); they are always stored
    as the enum members (the ``| str`` in their annotations is for the constructor only).

    Options that do not apply (for example ``capote_value`` under ``scoring = points``)
    are kept but have no effect.
    """

    players: int = 4
    hand_size_2p: int = 8
    stock_phase_rules: StockPhaseRules | str = StockPhaseRules.FREE
    head_led_suit_when_trumped: bool = True
    cannot_overtrump: CannotOvertrump | str = CannotOvertrump.FREE
    partner_relief: bool = False
    cante_singers: CanteSingers | str = CanteSingers.WINNER
    cantes_per_trick: CantesPerTrick | str = CantesPerTrick.ONE
    forty_before_twenty: FortyBeforeTwenty | str = FortyBeforeTwenty.STRICT
    cante_requires_held_at_win: bool = False
    cantes_only_with_stock: bool = False
    tute_enabled: bool = True
    tute_effect: TuteEffect | str = TuteEffect.WINS_UNIT
    tute_unit_value: int = 1
    tute_requires_no_prior_cante: bool = False
    swap_seven: bool = True
    swap_two_for_low: bool = False
    swap_requires_trick_won: bool = True
    scoring: Scoring | str = Scoring.POINTS
    target_points: int = 101
    games_to_win: int = 1
    target_match_points: int = 3
    capote_value: int = 2
    tie_rule: TieRule | str = TieRule.LAST_TRICK
    turn_time_s: int = 30
    first_dealer: int | str = RANDOM_DEALER

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            checked = _check(f.name, value)
            if checked is not value:
                object.__setattr__(self, f.name, checked)
        fd = self.first_dealer
        if fd != RANDOM_DEALER and (type(fd) is not int or not 0 <= fd < self.players):
            raise InvalidOption(
                "first_dealer", f"must be 'random' or a seat from 0 to {self.players - 1}"
            )

    # -- derived facts -------------------------------------------------------------------
    @property
    def sides(self) -> int:
        """Number of sides: 2 in 2p and 4p (partnerships), 3 in 3p."""
        return 3 if self.players == 3 else 2

    @property
    def hand_size(self) -> int:
        """Cards dealt to each player."""
        return {2: self.hand_size_2p, 3: 13, 4: 10}[self.players]

    @property
    def tricks_per_hand(self) -> int:
        """10, 13 or 20."""
        return {2: 20, 3: 13, 4: 10}[self.players]

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> Rules:
        """The preset ``name`` of RULES.md §13, with some options overridden."""
        try:
            base = PRESETS[name]
        except KeyError:
            raise InvalidOption(
                "preset", "unknown preset; known: " + ", ".join(sorted(PRESETS))
            ) from None
        return cls.from_options(overrides, base=base)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], base: Rules | None = None) -> Rules:
        """Rules from a mapping of option names to values (strings for the enum options).

        Unknown option names and values of the wrong type are rejected with
        :class:`InvalidOption` naming them. This is the way in for untrusted values; the
        constructor itself expects the enum members.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        checked: dict[str, Any] = {}
        for name, value in options.items():
            if name not in names:
                raise InvalidOption(name, "unknown option")
            checked[name] = _check(name, value)
        return dataclasses.replace(base or cls(), **checked)

    def options(self) -> dict[str, Any]:
        """Every option as a plain value (enum options as their strings)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.value if isinstance(v, enum.Enum) else v
        return out


PRESETS: dict[str, Rules] = {
    "parejas": Rules(players=4),
    "corriente-6": Rules(players=2, hand_size_2p=6),
    "parejas-manos": Rules(
        players=4, scoring=Scoring.HANDS, target_match_points=3, tute_effect=TuteEffect.WINS_MATCH
    ),
    "tres": Rules(
        players=3, scoring=Scoring.HANDS, target_match_points=3, tute_effect=TuteEffect.WINS_MATCH
    ),
    "corriente-8": Rules(
        players=2, scoring=Scoring.HANDS, target_match_points=3, tute_effect=TuteEffect.WINS_MATCH
    ),
    "parejas-mejor-de-3": Rules(
        players=4,
        scoring=Scoring.HANDS,
        target_match_points=2,
        capote_value=1,
        head_led_suit_when_trumped=False,
    ),
    "corriente-juegos": Rules(
        players=2,
        scoring=Scoring.HANDS,
        target_match_points=3,
        capote_value=1,
        tie_rule=TieRule.NONE,
        tute_unit_value=2,
        cantes_only_with_stock=True,
    ),
}
"""The presets of RULES.md §13 by name."""
