"""The tournament's statistics: Wilson intervals, the SPRT of chess engine testing, Elo.

Pure functions, checked against known values in ``tests/test_bench_stats.py``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


def wilson(wins: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``wins / n`` (``(0, 1)`` when ``n == 0``)."""
    if n <= 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def sprt_llr(wins: float, losses: float, p0: float = 0.5, p1: float = 0.55) -> float:
    """Log-likelihood ratio of H1 (win rate ``p1``) against H0 (``p0``) for Bernoulli trials
    (a draw counts half a win and half a loss)."""
    return wins * math.log(p1 / p0) + losses * math.log((1 - p1) / (1 - p0))


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's bounds (lower, upper): accept H0 at or below the lower, H1 at or above."""
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def sprt(
    wins: float,
    losses: float,
    p0: float = 0.5,
    p1: float = 0.55,
    alpha: float = 0.05,
    beta: float = 0.05,
) -> str:
    """``H1``, ``H0`` or ``continue``."""
    llr = sprt_llr(wins, losses, p0, p1)
    lower, upper = sprt_bounds(alpha, beta)
    if llr >= upper:
        return "H1"
    if llr <= lower:
        return "H0"
    return "continue"


def elo(score: float) -> float:
    """The Elo difference whose expected score is ``score`` (clamped away from 0 and 1)."""
    s = min(max(score, 1e-3), 1 - 1e-3)
    return -400.0 * math.log10(1 / s - 1)


def ratings(
    results: Mapping[tuple[str, str], tuple[float, int]], anchor: str, levels: Sequence[str]
) -> dict[str, float]:
    """Ratings on one Elo scale with ``anchor`` at 0, from pairwise (score, games) results.

    A Bradley-Terry fit by minorize-maximize iterations (Hunter 2004) over every pair played,
    so a level that only met some others is still placed; scores of 0 or 1 are shrunk by half
    a game so the fit stays finite.
    """
    strength = dict.fromkeys(levels, 1.0)
    wins: dict[str, float] = dict.fromkeys(levels, 0.0)
    games: dict[tuple[str, str], float] = {}
    for (a, b), (score, n) in results.items():
        if n <= 0:
            continue
        w = min(max(score * n, 0.5), n - 0.5)
        wins[a] += w
        wins[b] += n - w
        games[(a, b)] = games.get((a, b), 0.0) + n
    for _ in range(5000):
        new: dict[str, float] = {}
        for i in levels:
            denom = 0.0
            for (a, b), g in games.items():
                if i in (a, b):
                    j = b if i == a else a
                    denom += g / (strength[i] + strength[j])
            new[i] = wins[i] / denom if denom > 0 else strength[i]
        norm = new[anchor] if new[anchor] > 0 else 1.0
        new = {k: v / norm for k, v in new.items()}
        moved = max(abs(math.log(new[k] / strength[k])) for k in levels if new[k] > 0)
        strength = new
        if moved < 1e-9:
            break
    return {k: 400.0 * math.log10(v) if v > 0 else float("-inf") for k, v in strength.items()}


def rating_intervals(
    results: Mapping[tuple[str, str], tuple[float, int]],
    anchor: str,
    levels: Sequence[str],
    reps: int = 400,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, tuple[float, float]]:
    """Percentile intervals of :func:`ratings` by a parametric bootstrap: each pair's games
    drawn again as a binomial of its observed score (half-game scores rounded to whole
    games), the ladder refitted, the ``level`` central share of each rating kept."""
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {k: [] for k in levels}
    for _ in range(reps):
        again: dict[tuple[str, str], tuple[float, int]] = {}
        for pair, (score, n) in results.items():
            wins = sum(1 for _ in range(n) if rng.random() < score)
            again[pair] = (wins / n if n else 0.0, n)
        for k, v in ratings(again, anchor, levels).items():
            draws[k].append(v)
    out = {}
    tail = (1 - level) / 2
    for k, xs in draws.items():
        xs.sort()
        lo = xs[min(len(xs) - 1, int(tail * len(xs)))]
        hi = xs[min(len(xs) - 1, int((1 - tail) * len(xs)))]
        out[k] = (lo, hi)
    return out
