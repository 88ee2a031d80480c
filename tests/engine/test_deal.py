"""The packs drawn from a match seed (RULES.md §3: a shuffled pack for every hand).

``deck_for_hand(seed, h)`` is a function of the seed and the hand number only, so a stored
state needs no generator state; these tests check that it is a permutation of the table's
pack, deterministic, different from hand to hand, and uniform (chi-square over many seeds).
"""

from __future__ import annotations

import itertools
import statistics
from statistics import NormalDist

from engine import PRESETS, Rules, new_match
from engine.game import PACK_3P, PACK_4P, _first_dealer, deck_for_hand

FOUR = PRESETS["parejas"]
THREE = PRESETS["tres"]


def chi2(counts: list[int], expected: float) -> float:
    return sum((c - expected) ** 2 / expected for c in counts)


def critical(df: int, p: float = 0.001) -> float:
    """The chi-square value a uniform draw exceeds with probability ``p`` (Wilson-Hilferty).

    At p = 0.001 a correct shuffle would fail one run in a thousand per statistic; the seeds
    are fixed, so the outcome is the same on every run.
    """
    z = NormalDist().inv_cdf(1 - p)
    return float(df * (1 - 2 / (9 * df) + z * (2 / (9 * df)) ** 0.5) ** 3)


def test_every_pack_is_a_permutation_of_the_tables_cards() -> None:
    for seed, hand in itertools.product((0, 1, 2**63 + 5, -7), (1, 2, 3, 50)):
        assert sorted(deck_for_hand(seed, hand, FOUR)) == list(PACK_4P)
        assert sorted(deck_for_hand(seed, hand, THREE)) == list(PACK_3P)


def test_a_pack_depends_on_the_seed_and_the_hand_only() -> None:
    assert deck_for_hand(42, 3, FOUR) == deck_for_hand(42, 3, Rules(players=4))
    packs = {deck_for_hand(seed, hand, FOUR) for seed in range(30) for hand in range(1, 11)}
    assert len(packs) == 300  # no two (seed, hand) pairs share a pack


def test_the_first_deal_follows_the_pack_of_hand_one() -> None:
    state = new_match(FOUR, 1234)
    pack = deck_for_hand(1234, 1, FOUR)
    for i, card in enumerate(pack):
        assert state.hands[(state.dealer + 1 + i) % 4] >> card & 1
    assert state.trump_card == pack[-1]


def test_every_card_is_as_likely_in_every_position() -> None:
    # 40 cards x 40 positions, 48,000 packs: 30 expected per cell.
    n = 48_000
    counts = [0] * 1600
    for seed in range(n):
        for pos, card in enumerate(deck_for_hand(seed, 1, FOUR)):
            counts[card * 40 + pos] += 1
    assert chi2(counts, n / 40) < critical(1599)
    # and for each position on its own (40 cells, 39 degrees of freedom; 40 tests at once)
    for pos in range(40):
        column = [counts[card * 40 + pos] for card in range(40)]
        assert chi2(column, n / 40) < critical(39, 0.001 / 40), pos


def test_the_hands_of_one_seed_are_independent() -> None:
    # The card on top of hand 1 says nothing about the card on top of hand 2.
    n = 40_000
    same_suit = sum(
        deck_for_hand(seed, 1, FOUR)[0] // 10 == deck_for_hand(seed, 2, FOUR)[0] // 10
        for seed in range(n)
    )
    # P(same suit) = 1/4; a binomial's 4.5 standard deviations around it.
    assert abs(same_suit - n / 4) < 4.5 * (n * 0.25 * 0.75) ** 0.5


def test_the_random_first_dealer_is_uniform() -> None:
    for players in (2, 3, 4):
        n = 20_000
        counts = [0] * players
        for seed in range(n):
            counts[_first_dealer(seed, players)] += 1
        assert chi2(counts, n / players) < critical(players - 1), counts
    dealers = [new_match(Rules(first_dealer="random"), seed).dealer for seed in range(400)]
    assert statistics.pstdev(dealers) > 0.9  # all four seats deal
