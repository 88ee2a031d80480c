"""RULES.md §10: match scoring, the hands system and the points system (games to a target).

Each test starts from the last trick of a hand (4p, trump O) with known piles and scores,
plays it, and checks match points, game scores and the ``GameEnded``/``MatchEnded`` events.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Rules
from engine.events import GameEnded, HandDealt, HandEnded, MatchEnded

from .positions import events_of, play_out, position

# Side 0 wins the hand 81 to 69: 30 in its piles + 21 and 10 for the last trick + a 20.
LAST = {0: "1C", 1: "2C", 2: "3C", 3: "4C"}
WON_30 = "1O 3O 12O 11O 10O 7O 6O 5O"
# A tie at 65, side 1 taking the last trick.
TIE = {0: "4C", 1: "1C", 2: "2C", 3: "5C"}
TIE_WON = {0: "1O 3O 1E 3E 1B 3B 10O 2O", 1: "*"}


def side0_wins(rules: Rules, **kw: Any) -> Any:
    """Side 0 wins the last hand 81 to 69 (no capote)."""
    return position(
        rules, LAST, trump="O", won={0: WON_30, 1: "*"}, cantes=[(0, "E", 3)], dealer=2, **kw
    )


def capote(rules: Rules, **kw: Any) -> Any:
    return position(rules, LAST, trump="O", won={0: "*"}, tricks_won=(9, 0), dealer=2, **kw)


def finish(state: Any) -> tuple[Any, list[Any]]:
    return play_out(state)


# -- scoring = hands --------------------------------------------------------------------------


def hands(**options: Any) -> Rules:
    return Rules(players=4, scoring="hands", **options)


def test_hand_winner_gains_one_match_point() -> None:
    s, ev = finish(side0_wins(hands(), match_points=(0, 1)))
    r = events_of(ev, HandEnded)[0].result
    assert r.totals == (81, 69) and r.winner == 0
    assert s.match_points == (1, 1) and s.status == "playing" and s.hand_no == 2
    assert events_of(ev, HandDealt)[0].dealer == 3 and s.leader == 0


@pytest.mark.parametrize("value", [1, 2])
def test_capote_value(value: int) -> None:
    s, _ = finish(capote(hands(capote_value=value, target_match_points=5)))
    assert s.match_points == (value, 0)


def test_match_points_count_not_hands_won() -> None:
    # One hand won before; a capote worth 2 reaches the target of 3.
    s, ev = finish(capote(hands(), match_points=(1, 2)))
    assert s.match_points == (3, 2) and s.over and s.winners == (0,)
    assert [m[:2] for m in events_of(ev, MatchEnded)] == [((0,), "score")]


@pytest.mark.parametrize("target", [1, 3, 5, 7])
def test_target_match_points(target: int) -> None:
    s, ev = finish(side0_wins(hands(target_match_points=target), match_points=(target - 1, 0)))
    assert s.over and s.winners == (0,) and s.end_reason == "score"
    assert [m[:2] for m in events_of(ev, MatchEnded)] == [((0,), "score")]
    if target > 1:
        s, ev = finish(side0_wins(hands(target_match_points=target), match_points=(target - 2, 0)))
        assert not s.over and s.match_points == (target - 1, 0)


@pytest.mark.parametrize("tie_rule,points", [("last_trick", (0, 1)), ("none", (0, 0))])
def test_hands_system_tie(tie_rule: str, points: tuple[int, int]) -> None:
    s = position(hands(tie_rule=tie_rule), TIE, trump="O", won=TIE_WON)
    s, ev = finish(s)
    assert events_of(ev, HandEnded)[0].result.totals == (65, 65)
    assert s.match_points == points and s.hand_no == 2


def test_hands_system_ignores_the_points_options() -> None:
    s, ev = finish(side0_wins(hands(target_points=1, games_to_win=1)))
    assert not events_of(ev, GameEnded) and not s.over and s.game_scores == (0, 0)


# -- scoring = points -------------------------------------------------------------------------


def points(**options: Any) -> Rules:
    return Rules(players=4, scoring="points", **options)


def test_scores_accumulate_below_the_target() -> None:
    s, ev = finish(side0_wins(points(), game_scores=(10, 31)))
    assert s.game_scores == (91, 100) and not events_of(ev, GameEnded) and s.hand_no == 2


def test_reaching_the_target_ends_the_game_and_the_match() -> None:
    s, ev = finish(side0_wins(points(), game_scores=(20, 10)))
    assert events_of(ev, GameEnded) == [GameEnded(1, 0, (101, 79), False)]
    assert [m[:2] for m in events_of(ev, MatchEnded)] == [((0,), "score")]
    assert s.over and s.games_won == (1, 0) and s.game_scores == (101, 79)


def test_highest_game_score_wins_even_if_it_lost_the_hand() -> None:
    _, ev = finish(side0_wins(points(), game_scores=(30, 45)))
    assert events_of(ev, GameEnded) == [GameEnded(1, 1, (111, 114), False)]
    _, ev = finish(side0_wins(points(), game_scores=(25, 90)))
    assert events_of(ev, GameEnded) == [GameEnded(1, 1, (106, 159), False)]


@pytest.mark.parametrize("target,ends", [(101, False), (80, True), (1, True)])
def test_target_points(target: int, ends: bool) -> None:
    s, ev = finish(side0_wins(points(target_points=target)))
    assert bool(events_of(ev, GameEnded)) == ends and s.over == ends


def test_games_to_win_two_scores_restart_and_the_dealer_rotates() -> None:
    s, ev = finish(side0_wins(points(games_to_win=2), game_scores=(20, 10), hand_no=4))
    assert events_of(ev, GameEnded) == [GameEnded(1, 0, (101, 79), False)]
    assert not events_of(ev, MatchEnded) and not s.over
    assert s.games_won == (1, 0) and s.game_scores == (0, 0) and s.game_no == 2
    dealt = events_of(ev, HandDealt)[0]
    assert (dealt.hand_no, dealt.game_no, dealt.dealer) == (5, 2, 3)


def test_games_to_win_two_second_game_wins_the_match() -> None:
    s, ev = finish(
        side0_wins(points(games_to_win=2), game_scores=(20, 10), game_no=3, games_won=(1, 1))
    )
    assert events_of(ev, GameEnded) == [GameEnded(3, 0, (101, 79), False)]
    assert [m[:2] for m in events_of(ev, MatchEnded)] == [((0,), "score")] and s.games_won == (2, 1)


@pytest.mark.parametrize("tie_rule", ["last_trick", "none"])
def test_points_system_tie_at_the_target(tie_rule: str) -> None:
    s = position(points(tie_rule=tie_rule), TIE, trump="O", won=TIE_WON, game_scores=(40, 40))
    s, ev = finish(s)
    if tie_rule == "last_trick":
        assert events_of(ev, GameEnded) == [GameEnded(1, 1, (105, 105), False)] and s.over
    else:
        # No winner: another hand with the scores carried on.
        assert not events_of(ev, GameEnded) and s.game_scores == (105, 105)
        assert s.hand_no == 2 and s.game_no == 1 and not s.over


def test_points_system_ignores_the_hands_options() -> None:
    s, _ = finish(side0_wins(points(target_match_points=1, capote_value=1)))
    assert not s.over and s.match_points == (0, 0) and s.game_scores == (81, 69)


def test_capote_earns_nothing_extra_in_the_points_system() -> None:
    s, _ = finish(capote(points(capote_value=2, target_points=500)))
    assert s.game_scores == (130, 0) and s.match_points == (0, 0)


def test_three_player_points_game() -> None:
    s = position(
        Rules(players=3, target_points=60),
        {0: "6C", 1: "5C", 2: "4C"},
        trump="O",
        won={0: "1O 1C 1E 3O 12O 11O", 1: "1B 3B 3C 3E 12C 11C 10C 7O 5O", 2: "*"},
        game_scores=(0, 5, 50),
    )
    s, ev = finish(s)
    assert events_of(ev, GameEnded) == [GameEnded(1, 2, (60, 55, 70), False)]
    assert s.winners == (2,)
