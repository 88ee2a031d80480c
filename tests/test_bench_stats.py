"""The bot tournament's statistics against known values (textbook and hand-computed)."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.bots import score_deal, seatings
from benchmarks.stats import elo, rating_intervals, ratings, sprt, sprt_bounds, sprt_llr, wilson


def test_wilson_intervals_match_published_values() -> None:
    # Newcombe (1998), table I: 81/263 -> 0.2553-0.3662; 15/148 -> 0.0624-0.1605.
    lo, hi = wilson(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    lo, hi = wilson(15, 148)
    assert (round(lo, 4), round(hi, 4)) == (0.0624, 0.1605)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and round(hi, 4) == 0.2775
    assert wilson(0, 0) == (0.0, 1.0)


def test_sprt_bounds_and_llr() -> None:
    lower, upper = sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(-math.log(19)) and upper == pytest.approx(math.log(19))
    assert sprt_llr(55, 45) == pytest.approx(55 * math.log(1.1) + 45 * math.log(0.9))
    assert sprt_llr(55, 45) == pytest.approx(0.5008, abs=1e-4)
    assert sprt(55, 45) == "continue"
    # 330 wins in 600 (55%): LLR = 330 ln 1.1 + 270 ln 0.9 = 3.0058 > ln 19 = 2.9444.
    assert sprt(330, 270) == "H1"
    # Even results: each win-loss pair adds ln(1.1 * 0.9) = -0.01005.
    assert sprt(100, 100) == "continue"  # -1.005
    assert sprt(300, 300) == "H0"  # -3.015 < -ln 19


def test_elo_of_known_scores() -> None:
    assert elo(0.5) == 0.0
    assert elo(0.75) == pytest.approx(400 * math.log10(3))
    assert elo(0.25) == pytest.approx(-400 * math.log10(3))


def test_ratings_recover_a_known_ladder() -> None:
    # Expected scores of a ladder 0 / 200 / 400 under the logistic Elo model.
    def expect(d: float) -> float:
        return 1 / (1 + 10 ** (-d / 400))

    results = {
        ("b", "a"): (expect(200), 4000),
        ("c", "b"): (expect(200), 4000),
        ("c", "a"): (expect(400), 4000),
    }
    r = ratings(results, "a", ["a", "b", "c"])
    assert r["a"] == 0.0
    assert r["b"] == pytest.approx(200, abs=1)
    assert r["c"] == pytest.approx(400, abs=1)


def test_duplicate_seatings_and_scores() -> None:
    assert seatings(4, "x", "y") == [("x", "y", "x", "y"), ("y", "x", "y", "x")]
    assert seatings(2, "x", "y") == [("x", "y"), ("y", "x")]
    assert seatings(3, "x", "y") == [("x", "y", "y"), ("y", "x", "y"), ("y", "y", "x")]
    seats = seatings(2, "x", "y")
    results = [
        {"winners": [0], "totals": [100, 60], "match_points": [3, 1]},
        {"winners": [0], "totals": [90, 70], "match_points": [3, 0]},
    ]
    # x wins the first (side 0), loses the second (y is side 0 there); margin 40 - 20.
    assert score_deal(2, "x", seats, results) == (1.0, 2, 20.0)
    seats3 = seatings(3, "x", "y")
    results3 = [
        {"match_points": [3, 1, 1], "totals": [50, 40, 40]},
        {"match_points": [2, 2, 3], "totals": [30, 30, 70]},
        {"match_points": [0, 1, 1], "totals": [20, 30, 80]},
    ]
    wins, trials, _ = score_deal(3, "x", seats3, results3)
    assert trials == 6 and wins == 2 + 0.5 + 1.5


def test_rating_intervals_cover_the_fit_and_narrow_with_games() -> None:
    def expect(d: float) -> float:
        return 1 / (1 + 10 ** (-d / 400))

    few = {("b", "a"): (expect(200), 100), ("c", "b"): (expect(200), 100)}
    many = {k: (p, n * 25) for k, (p, n) in few.items()}
    fit = ratings(few, "a", ["a", "b", "c"])
    wide = rating_intervals(few, "a", ["a", "b", "c"], reps=200)
    narrow = rating_intervals(many, "a", ["a", "b", "c"], reps=200)
    assert wide["a"] == (0.0, 0.0)
    for k in ("b", "c"):
        assert wide[k][0] < fit[k] < wide[k][1]
        assert narrow[k][1] - narrow[k][0] < (wide[k][1] - wide[k][0]) / 3
    # b's interval from 100 games at an expected 200 points: about +-70 Elo.
    assert 100 < wide["b"][0] < 160 and 240 < wide["b"][1] < 300
    assert 360 < narrow["c"][0] < 400 < narrow["c"][1] < 440


def test_the_levels_ratings_are_the_fit_of_the_kept_round_robin() -> None:
    """engine.bots.RATINGS and their intervals are what the fit gives for the round robin's
    JSON lines kept beside the benchmarks (README, Bots, run W), rounded to whole points."""
    from pathlib import Path

    from benchmarks.bots import rate
    from engine.bots import BOTS, RATINGS, RATINGS_CI95

    path = Path(__file__).parent.parent / "benchmarks/results/bots-round-robin-2026-12-07.jsonl"
    rows = [p for line in path.read_text().splitlines() for p in json.loads(line)["pairs"]]
    assert {r["preset"] for r in rows} == {"parejas", "tres", "corriente-8"}
    fitted, intervals = rate(rows)
    assert {level: round(fitted[level]) for level in BOTS} == RATINGS
    assert {level: (round(intervals[level][0]), round(intervals[level][1])) for level in BOTS} == (
        RATINGS_CI95
    )
