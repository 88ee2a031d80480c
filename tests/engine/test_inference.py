"""Inference: sampled deals weighted by how likely the plays seen are under the ``easy`` rules
of thumb (``Budget.infer_eps``)."""

from __future__ import annotations

import random

import pytest

from engine import PRESETS, Rules, State, apply, legal_actions, new_match, view
from engine.bots import HARD, MEDIUM, SearchBot, decisions, easy_bot, easy_card, likelihood
from engine.cards import BIT, card_of
from engine.determinize import knowledge, sample_from

from .positions import deck_for

EPS = 0.3

INFERRING = {
    "medium": SearchBot(MEDIUM._replace(samples=3, time_s=600.0, infer_eps=EPS)),
    "hard": SearchBot(
        HARD._replace(
            samples=3, solve_tricks=2, node_limit=3000, time_s=600.0, infer_eps=EPS, infer_pool=3
        )
    ),
}
"""Small budgets with inference on: the samples, not the time bound, end the search."""


def _easy_trick(s: State, plays: int) -> State:
    """``plays`` cards played by the ``easy`` rules of thumb (declarations included)."""
    rules = s.rules
    rng = random.Random(0)
    done = 0
    while done < plays:
        a = easy_bot(rules, view(s, s.turn), rng)
        s, _ = apply(s, s.turn, a)
        done += a < 40
    return s


def test_a_play_the_rules_of_thumb_would_not_make_weighs_less() -> None:
    """Seat 1 leads trick 1 by the rules of thumb from a hand with no master worth points. A
    deal in which it held the ace of oros (a master worth 11 that the rules of thumb lead) and
    still led that card contradicts the model: it weighs less than the real deal, in which
    every play seen is the rules of thumb's."""
    rules = Rules(players=4, first_dealer=0)
    hands = {
        0: "2O 4O 5O 6O 7O 10O 11O 12O 3O 7B",  # the dealer: its last card (7B) makes trump
        1: "2C 4C 5C 2E 4E 5E 6E 7E 2B 4B",
        2: "6C 7C 10C 11C 12C 10E 11E 12E 3E 1E",
        3: "1O 3C 1C 5B 6B 10B 11B 12B 3B 1B",
    }
    s = new_match(rules, 0, decks=[deck_for(rules, 0, hands)])
    assert s.leader == 1
    assert s.trump == 3  # bastos
    s = _easy_trick(s, 3)  # seats 1, 2 and 3 play; seat 0 is on turn
    assert s.turn == 0
    v = view(s, 0)
    found = decisions(rules, v)
    assert [d.seat for d in found] == [1, 2, 3]
    led = found[0].card
    ace = card_of(0, 1)
    assert ace != led and BIT[ace] & s.hands[3]
    # The real deal: every choice seen is the model's.
    real = likelihood(rules, found, s.hands, EPS, {})
    informative = sum(1 for d in found if (s.hands[d.seat] | d.later).bit_count() > 1)
    assert real == pytest.approx((1 - EPS) ** informative)
    # The ace of oros in seat 1's hand instead of one of its clubs (a card of no trick yet).
    swap = min(c for c in range(10, 20) if BIT[c] & s.hands[1])
    other = list(s.hands)
    other[1] = other[1] & ~BIT[swap] | BIT[ace]
    other[3] = other[3] & ~BIT[ace] | BIT[swap]
    assert easy_card(rules, found[0].template._replace(hand=other[1] | BIT[led], legal=())) != led
    contradicted = likelihood(rules, found, tuple(other), EPS, {})
    assert contradicted < real
    # The view cannot tell the two apart (the search samples both).
    k = knowledge(rules, v)
    for seat in (1, 3):
        assert not k.forbidden[seat] & (BIT[ace] | BIT[swap])


def test_the_real_deal_weighs_most_and_samples_differ() -> None:
    """After two tricks of the rules of thumb, the real deal has the highest weight any deal
    can have, and the sampled deals the view allows do not all weigh the same."""
    rules = PRESETS["parejas"]
    s = _easy_trick(new_match(rules, 5), 8)
    v = view(s, s.turn)
    found = decisions(rules, v)
    assert len(found) == 6  # two tricks, the viewer's own cards left out
    assert all(d.seat != v.seat for d in found)
    real = likelihood(rules, found, s.hands, EPS, {})
    rng = random.Random(2)
    k = knowledge(rules, v)
    cache: dict[int, int] = {}
    weights = [likelihood(rules, found, sample_from(k, rng).hands, EPS, cache) for _ in range(60)]
    assert max(weights) <= real
    assert min(weights) < max(weights)


def test_2p_infers_nothing() -> None:
    """With a stock the replay would need its order: no inference in 2p."""
    rules = PRESETS["corriente-8"]
    s = _easy_trick(new_match(rules, 1), 4)
    assert decisions(rules, view(s, s.turn)) == []


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("level", sorted(INFERRING))
def test_inferring_levels_play_legal_moves_and_the_same_move_for_a_seed(
    preset: str, level: str
) -> None:
    """Over a whole hand, each move with inference on is legal and is the same for the same
    view and seed."""
    rules = PRESETS[preset]
    bot = INFERRING[level]
    rng = random.Random(11)
    s = new_match(rules, rng)
    hand_no = s.hand_no
    while not s.over and s.hand_no == hand_no:
        v = view(s, s.turn)
        a = bot(rules, v, random.Random(s.turn_id))
        assert a in v.legal
        assert bot(rules, v, random.Random(s.turn_id)) == a
        s, _ = apply(s, s.turn, a)
    assert s.over or s.hand_no != hand_no


def test_inference_changes_nothing_with_nothing_seen() -> None:
    """On the first lead nobody has played: the same move as with inference off."""
    rules = PRESETS["parejas"]
    s = new_match(rules, 3)
    v = view(s, s.turn)
    assert [a for a in legal_actions(s, s.turn) if a < 40]
    off = SearchBot(MEDIUM._replace(samples=5, time_s=600.0))
    on = SearchBot(MEDIUM._replace(samples=5, time_s=600.0, infer_eps=EPS, infer_pool=3))
    assert on(rules, v, random.Random(4)) == off(rules, v, random.Random(4))
