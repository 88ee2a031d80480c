"""RULES.md §9: end of a hand: totals, las diez de últimas, capote, hand winner and ties.

Positions here are the last trick of a hand (one card per player) with the cards each side
won so far; the last plays are applied and the ``HandEnded`` result is checked. Complete
hands are also driven from given deck orders.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Rules, new_match
from engine.events import GameEnded, HandEnded, HandResult, MatchEnded, TrickTaken

from .positions import deck_for, events_of, play_out, position


def finish(state: Any) -> tuple[Any, HandResult, list[Any]]:
    """Play the last trick (every seat holds one card) and return the hand's result."""
    state, events = play_out(state)
    return state, events_of(events, HandEnded)[0].result, events


# 4p, trump O, last trick led by seat 0: 1C wins (11 + 10 points of the trick's cards).
LAST_4P = {0: "1C", 1: "2C", 2: "3C", 3: "4C"}
WON_30 = "1O 3O 12O 11O 10O 7O 6O 5O"  # 30 points in 2 tricks


def test_totals_cards_last_trick_and_cantes() -> None:
    s = position(
        Rules(players=4),
        LAST_4P,
        trump="O",
        won={0: WON_30, 1: "*"},
        cantes=[(0, "E", 3), (3, "B", 5)],
    )
    assert s.trick_no == 10 and s.won_points == (30, 69)
    _, r, _ = finish(s)
    assert r.card_points == (51, 69) and r.last_trick_side == 0
    assert r.cante_points == (20, 20) and r.totals == (81, 89)
    assert sum(r.card_points) + 10 == 130
    assert r.winner == 1 and not r.capote and r.tute_seat == -1


def test_the_last_trick_is_worth_ten() -> None:
    # Same cards, but seat 1 wins the last trick with 1C: the 10 goes to side 1.
    s = position(
        Rules(players=4), {0: "2C", 1: "1C", 2: "3C", 3: "4C"}, trump="O", won={0: WON_30, 1: "*"}
    )
    _, r, _ = finish(s)
    assert r.card_points == (30, 90) and r.last_trick_side == 1 and r.totals == (30, 100)


# A tie at 65: side 0 took 65 in its tricks, side 1 44 plus the last trick (11 + 10).
TIE_HANDS = {0: "4C", 1: "1C", 2: "2C", 3: "5C"}
TIE_WON = {0: "1O 3O 1E 3E 1B 3B 10O 2O", 1: "*"}


@pytest.mark.parametrize("tie_rule,winner", [("last_trick", 1), ("none", -1)])
def test_tie_for_highest(tie_rule: str, winner: int) -> None:
    s = position(Rules(players=4, tie_rule=tie_rule), TIE_HANDS, trump="O", won=TIE_WON)
    _, r, _ = finish(s)
    assert r.totals == (65, 65) and r.winner == winner


# 3p: seat 2 takes the last trick (10 points) but sides 0 and 1 tie at 50.
THREE_HANDS = {0: "4C", 1: "5C", 2: "6C"}
THREE_WON = {0: "1O 1C 1E 3O 12O 11O", 1: "1B 3B 3C 3E 12C 11C 10C 7O 5O", 2: "*"}


@pytest.mark.parametrize(
    "tie_rule,last_trick_of,winner",
    [("last_trick", (11, 12, 13), 1), ("last_trick", (12, 11, 13), 0), ("none", (11, 12, 13), -1)],
)
def test_three_player_tie_latest_trick_among_the_tied(
    tie_rule: str, last_trick_of: tuple[int, ...], winner: int
) -> None:
    s = position(
        Rules(players=3, tie_rule=tie_rule),
        THREE_HANDS,
        trump="O",
        won=THREE_WON,
        last_trick_of=last_trick_of,
    )
    assert s.trick_no == 13 and s.tricks_won == (2, 3, 7)
    _, r, _ = finish(s)
    assert r.totals == (50, 50, 30) and r.last_trick_side == 2 and r.winner == winner


def test_three_player_strict_winner() -> None:
    s = position(Rules(players=3), {0: "6C", 1: "5C", 2: "4C"}, trump="O", won=THREE_WON)
    _, r, _ = finish(s)
    assert r.totals == (60, 50, 20) and r.winner == 0


@pytest.mark.parametrize("players", [2, 3, 4])
def test_capote(players: int) -> None:
    hands = {0: "1C", 1: "2C", 2: "3C", 3: "4C"}
    hands = {i: hands[i] for i in range(players)}
    rules = Rules(players=players)
    s = position(
        rules,
        hands,
        trump="O",
        won={0: "*"},
        tricks_won=(rules.tricks_per_hand - 1,) + (0,) * (rules.sides - 1),
    )
    _, r, _ = finish(s)
    assert r.capote and r.winner == 0 and r.totals[0] == 130


def test_no_capote_when_the_other_side_takes_only_the_last_trick() -> None:
    s = position(
        Rules(players=4),
        {0: "2C", 1: "1C", 2: "3C", 3: "4C"},
        trump="O",
        won={0: "*"},
        tricks_won=(9, 0),
    )
    _, r, _ = finish(s)
    assert not r.capote and r.totals == (99, 31) and r.winner == 0


# -- complete hands from deck orders ----------------------------------------------------------

# Seat 3 (the dealer) holds all ten bastos; its last card 12B makes bastos trump. Whatever the
# others play, seat 3 trumps trick 1 and leads bastos from then on: a capote.
CAPOTE_DEAL = {
    0: "1O 2O 3O 4O 5O 6O 7O 10O 11O 12O",
    1: "1C 2C 3C 4C 5C 6C 7C 10C 11C 12C",
    2: "1E 2E 3E 4E 5E 6E 7E 10E 11E 12E",
    3: "1B 2B 3B 4B 5B 6B 7B 10B 11B 12B",
}


def test_four_player_capote_hand_from_a_deck() -> None:
    rules = Rules.preset("parejas", first_dealer=3)
    s = new_match(rules, 0, decks=[deck_for(rules, 3, CAPOTE_DEAL)])
    s, events = play_out(s, sing=True)
    tricks = events_of(events, TrickTaken)
    assert len(tricks) == 10 and {t.winner for t in tricks} == {3}
    r = events_of(events, HandEnded)[0].result
    assert r == HandResult(
        hand_no=1,
        card_points=(0, 120),
        last_trick_side=1,
        cante_points=(0, 40),
        totals=(0, 170),
        winner=1,
        capote=True,
        tute_seat=-1,
        tute_rank=0,
        tute_cards=0,
        game_no=1,
        tricks_won=(0, 10),
        cantes=((3, 3, 40, 2),),
        tute_trick=0,
    )
    assert events_of(events, GameEnded) == [GameEnded(1, 1, (0, 170), False)]
    assert [m[:2] for m in events_of(events, MatchEnded)] == [((1,), "score")]


def test_four_player_side_singers_hand_from_a_deck() -> None:
    # With cante_singers = side, seat 1 sings its 20 in copas in a window of its partner.
    rules = Rules.preset("parejas", first_dealer=3, cante_singers="side")
    s = new_match(rules, 0, decks=[deck_for(rules, 3, CAPOTE_DEAL)])
    s, events = play_out(s, sing=True)
    r = events_of(events, HandEnded)[0].result
    assert [c[:3] for c in s.cantes] == [(3, 3, 40), (1, 1, 20)]
    assert [c[3] for c in s.cantes] == [2, 3]  # one per window
    assert r.cante_points == (0, 60) and r.totals == (0, 190)


def test_three_player_capote_hand_from_a_deck() -> None:
    rules = Rules.preset("tres", first_dealer=2)
    deal = {
        0: "3O 12O 11O 10O 7O 6O 5O 4O 3C 12C 11C 10C 7C",
        1: "6C 5C 4C 2C 3E 12E 11E 10E 7E 6E 5E 4E 2E",
        2: "1O 1C 1E 2B 3B 4B 5B 6B 7B 10B 11B 12B 1B",
    }
    s = new_match(rules, 0, decks=[deck_for(rules, 2, deal)])
    assert s.trump == 3 and s.leader == 0
    s, events = play_out(s, sing=True)
    r = events_of(events, HandEnded)[0].result
    assert r.capote and r.totals == (0, 0, 170) and r.winner == 2
    assert s.match_points == (0, 0, 2) and s.hand_no == 2 and s.dealer == 0


@pytest.mark.parametrize("size", [6, 8])
def test_two_player_hand_from_a_deck_distributes_130(size: int) -> None:
    rules = Rules(players=2, hand_size_2p=size, first_dealer=0, target_points=500)
    s = new_match(rules, 0, decks=[list(range(39, -1, -1))])
    s, events = play_out(s, sing=True)
    tricks = events_of(events, TrickTaken)
    r = events_of(events, HandEnded)[0].result
    assert len(tricks) == 20 and sum(t.points for t in tricks) == 120
    assert sum(r.card_points) == 120 and r.last_trick_side == tricks[-1].winner
    assert sum(r.totals) == 130 + sum(r.cante_points)
    assert s.game_scores == r.totals and s.hand_no == 2
