"""Ratings: OpenSkill (Weng-Lin PlackettLuce, margins off), one ladder per ranked mode.

A rating is OpenSkill's ``mu`` and ``sigma``. The number shown is Elo-like:
``display = 1500 + 20 * (mu - 3 * sigma)`` (the ordinal scaled), so a new player (``mu`` 25,
``sigma`` 25/3, ordinal 0) shows 1500. A rating is provisional while its ``sigma`` is above
:data:`PROVISIONAL_SIGMA`.

Bots have fixed ratings: a level's display rating is its ``engine.bots.RATINGS`` (the bot
round robin's Elo-like scale, ``random`` at 0) moved so that ``medium`` shows 1500, that is
``display = RATINGS[level] + 1500 - RATINGS["medium"]``; as an OpenSkill rating that is
``sigma`` :data:`BOT_SIGMA` and the ``mu`` whose display it is. Bots take part in every
update (they weigh on their opponents' and partners' changes) but their own rating never
changes. The same scale is the matchmaker's (service/matchmaking/entrants.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Sequence
from typing import Final

from openskill.models import PlackettLuce

from engine.bots import RATINGS

MODES: Final = ("2p", "3p", "4p")
"""The ranked modes, one ladder each: 2p, 3p, and 4p in pairs."""

MU: Final = 25.0
SIGMA: Final = MU / 3
"""A new player's rating (OpenSkill's defaults)."""
DISPLAY_NEW: Final = 1500.0
DISPLAY_PER_ORDINAL: Final = 20.0
PROVISIONAL_SIGMA: Final = 5.0
"""A rating whose sigma is above this is shown as provisional (a new player's is 8.33; a few
matches bring it below)."""
BOT_SIGMA: Final = 1.0
"""A bot's fixed uncertainty: small, its level is measured."""
BOT_DISPLAY_OFFSET: Final = DISPLAY_NEW - RATINGS["medium"]


def display(mu: float, sigma: float) -> float:
    """The Elo-like number shown for an OpenSkill rating."""
    return DISPLAY_NEW + DISPLAY_PER_ORDINAL * (mu - 3 * sigma)


def provisional(sigma: float) -> bool:
    """Whether a rating with this sigma is still provisional."""
    return sigma > PROVISIONAL_SIGMA


@dataclasses.dataclass(frozen=True, slots=True)
class Rated:
    """One participant of a rated match: a player (``bot_level`` None) or a bot."""

    player_id: str
    mu: float = MU
    sigma: float = SIGMA
    bot_level: str | None = None

    @property
    def display(self) -> float:
        return display(self.mu, self.sigma)


def bot_rated(level: str) -> Rated:
    """A bot of ``level`` with its fixed rating (see the module's mapping)."""
    if level not in RATINGS:
        raise ValueError(f"unknown bot level {level!r}")
    shown = RATINGS[level] + BOT_DISPLAY_OFFSET
    mu = (shown - DISPLAY_NEW) / DISPLAY_PER_ORDINAL + 3 * BOT_SIGMA
    return Rated(f"bot:{level}", mu, BOT_SIGMA, bot_level=level)


@dataclasses.dataclass(frozen=True, slots=True)
class RatingChange:
    """A player's rating before and after one ranked match."""

    player_id: str
    mode: str
    won: bool
    mu_before: float
    sigma_before: float
    mu_after: float
    sigma_after: float

    @property
    def display_before(self) -> float:
        return display(self.mu_before, self.sigma_before)

    @property
    def display_after(self) -> float:
        return display(self.mu_after, self.sigma_after)


_MODEL = PlackettLuce()  # margin 0: the default, margins off


def rate_match(
    mode: str,
    sides: Sequence[Sequence[Rated]],
    winner_side: int | Collection[int],
    leavers: Collection[str] = (),
) -> list[RatingChange]:
    """The rating changes of one finished ranked match, in side then seat order.

    ``sides`` are the match's sides (4p: two pairs; 2p and 3p: one participant each);
    ``winner_side`` is the winning side, or the winning sides (a 3p match a player left is
    won by both others): the winners share first place and every other side shares the next.
    Bots are rated with the others but get no change. ``leavers`` are the player ids who left
    the match: a leaver's side lost (RULES.md §11), so no winning side may hold one; the
    leaver takes the loss, and the partners a leaver abandoned get no change at all.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    if len(sides) < 2 or any(not side for side in sides):
        raise ValueError("a match has at least two sides, none empty")
    winners = {winner_side} if isinstance(winner_side, int) else set(winner_side)
    if not winners or not all(0 <= w < len(sides) for w in winners):
        raise ValueError("winner_side is not one of the sides")
    if len(winners) == len(sides):
        raise ValueError("a match has a losing side")
    left = set(leavers)
    if any(r.player_id in left for w in winners for r in sides[w]):
        raise ValueError("a leaver's side cannot win")
    for r in (r for side in sides for r in side):
        if not (math.isfinite(r.mu) and math.isfinite(r.sigma) and r.sigma > 0):
            raise ValueError(f"{r.player_id}: a rating is a finite mu and a positive sigma")
    teams = [[_MODEL.rating(mu=r.mu, sigma=r.sigma) for r in side] for side in sides]
    ranks = [0.0 if i in winners else 1.0 for i in range(len(sides))]
    rated = _MODEL.rate(teams, ranks=ranks)
    changes: list[RatingChange] = []
    for i, (side, after) in enumerate(zip(sides, rated, strict=True)):
        abandoned = any(r.player_id in left for r in side)
        for r, new in zip(side, after, strict=True):
            if r.bot_level is not None:
                continue
            if abandoned and r.player_id not in left:
                continue
            changes.append(
                RatingChange(
                    r.player_id,
                    mode,
                    i in winners,
                    r.mu,
                    r.sigma,
                    float(new.mu),
                    float(new.sigma),
                )
            )
    return changes
