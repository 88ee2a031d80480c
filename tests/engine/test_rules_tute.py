"""RULES.md §7: tute (four reyes or four caballos), with every tute option."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Rules, parse_cards
from engine.events import GameEnded, HandDealt, HandEnded, HandResult, MatchEnded, TuteDeclared

from .positions import act, events_of, legal, position, rejects

KINGS = "12O 12C 12E 12B"
KNIGHTS = "11O 11C 11E 11B"


def decl(state: Any, seat: int | None = None) -> set[str]:
    return {a for a in legal(state, seat) if not a[0].isdigit()}


def four(**options: Any) -> Rules:
    return Rules(players=4, **options)


def kings_position(rules: Rules, **kw: Any) -> Any:
    """4p, trump O, seat 0 won trick 5 and holds the four reyes and the ace of oros."""
    kw.setdefault("hands", {0: KINGS + " 1O", 1: "2C 3C 4C 5C 6C"})
    return position(rules, trump="O", leader=0, **kw)


@pytest.mark.parametrize("enabled,expected", [(True, {"tute 12"}), (False, set())])
def test_tute_enabled(enabled: bool, expected: set[str]) -> None:
    s = kings_position(four(tute_enabled=enabled))
    assert s.trick_no == 6 and decl(s) == expected
    if not enabled:
        assert rejects(s, "tute 12") == "tute_not_allowed"


def test_tute_ends_the_hand_with_no_card_points() -> None:
    s = kings_position(
        four(), won={0: "1E 2E 3E 4E", 1: "1C 7C 10C 11C 1B 2B 3B 4B"}, tricks_won=(1, 2)
    )
    _s2, ev = act(s, "tute 12")
    assert events_of(ev, TuteDeclared) == [TuteDeclared(0, 12, parse_cards(KINGS), 6)]
    result = events_of(ev, HandEnded)[0].result
    assert result == HandResult(
        hand_no=1,
        card_points=(0, 0),
        last_trick_side=-1,
        cante_points=(0, 0),
        totals=(0, 0),
        winner=0,
        capote=False,
        tute_seat=0,
        tute_rank=12,
        tute_cards=parse_cards(KINGS),
        game_no=1,
        tricks_won=(1, 2),
        cantes=(),
        tute_trick=6,
    )


def test_both_tutes_declare_either() -> None:
    s = position(four(), {0: KINGS + " " + KNIGHTS, 1: "1C 2C 3C 4C 5C 6C 7C 10C"}, trump="B")
    assert s.trick_no == 3
    assert decl(s) == {"sing B", "tute 12", "tute 11"}  # the 40 is pending: no 20s
    _, ev = act(s, "tute 11")
    r = events_of(ev, HandEnded)[0].result
    assert (r.tute_rank, r.tute_cards) == (11, parse_cards(KNIGHTS))


@pytest.mark.parametrize("players", [2, 3, 4])
def test_no_tute_before_a_trick_is_won(players: int) -> None:
    hands = {0: KINGS + " 11O 1O 3O"}
    s = position(
        Rules(players=players), hands, trump="O", stock="5B 4O" if players == 2 else "", trick_no=1
    )
    assert decl(s) == set()


# -- the allowance and tute_requires_no_prior_cante ----------------------------------------


@pytest.mark.parametrize("per_trick,expected", [("one", set()), ("unlimited", {"tute 12"})])
def test_a_cante_and_a_tute_share_the_allowance(per_trick: str, expected: set[str]) -> None:
    s = kings_position(four(cantes_per_trick=per_trick), hands={0: KINGS + " 11C 1O"})
    assert decl(s) == {"sing C", "tute 12"}
    s, _ = act(s, "sing C")
    assert decl(s) == expected


@pytest.mark.parametrize("no_prior,expected", [(True, set()), (False, {"tute 12"})])
def test_tute_requires_no_prior_cante(no_prior: bool, expected: set[str]) -> None:
    s = kings_position(
        four(tute_requires_no_prior_cante=no_prior), cantes=[(0, "C", 3)], hands={0: KINGS + " 1O"}
    )
    assert decl(s) == expected


def test_no_prior_cante_counts_the_players_own_cantes_only() -> None:
    s = kings_position(
        four(tute_requires_no_prior_cante=True), cantes=[(2, "C", 3)], hands={0: KINGS + " 1O"}
    )
    assert decl(s) == {"tute 12"}


def test_no_prior_cante_with_unlimited_in_the_same_window() -> None:
    rules = four(tute_requires_no_prior_cante=True, cantes_per_trick="unlimited")
    s = kings_position(rules, hands={0: KINGS + " 11C 1O"})
    s, _ = act(s, "sing C")
    assert decl(s) == set()


def test_cantes_before_a_tute_are_listed_but_score_nothing() -> None:
    s = kings_position(four(), cantes=[(0, "E", 3)], hands={0: KINGS + " 1O"}, game_scores=(50, 60))
    s, ev = act(s, "tute 12")
    r = events_of(ev, HandEnded)[0].result
    assert r.cante_points == (20, 0) and r.totals == (0, 0)
    assert events_of(ev, GameEnded) == [GameEnded(1, 0, (50, 60), True)]


# -- who, when ------------------------------------------------------------------------------


def test_opponents_never_declare_a_tute() -> None:
    s = kings_position(four(), hands={0: "1O 2O", 1: KINGS + " 1B"})
    assert legal(s, 1) == set()
    assert rejects(s, "1:tute 12") == "tute_not_allowed"


@pytest.mark.parametrize("singers,expected", [("side", {"tute 11"}), ("winner", set())])
def test_partner_tute_with_side_singers(singers: str, expected: set[str]) -> None:
    s = position(four(cante_singers=singers), {0: "1O 2O 3O 4O", 2: KNIGHTS}, trump="O")
    assert legal(s, 2) == expected
    if expected:
        _, ev = act(s, "2:tute 11")
        r = events_of(ev, HandEnded)[0].result
        assert (r.winner, r.tute_seat) == (0, 2)


@pytest.mark.parametrize("players,trick_no", [(2, 17), (3, 10), (4, 7)])
def test_last_window_for_a_tute_is_trick_n_minus_3(players: int, trick_no: int) -> None:
    s = position(Rules(players=players), {0: KINGS}, trump="O")
    assert s.trick_no == trick_no and decl(s) == {"tute 12"}


@pytest.mark.parametrize("held,expected", [(True, set()), (False, {"tute 12"})])
def test_tute_and_cante_requires_held_at_win(held: bool, expected: set[str]) -> None:
    # 2p: 12B was just drawn after the trick seat 0 won.
    s = position(
        Rules(players=2, cante_requires_held_at_win=held),
        {0: KINGS + " 1E 2E 3E 4E", 1: "5E 6E 7E 10E 1C 2C 3C 4C"},
        stock="5C 6C 7C 4O",
        trick_no=10,
        held_at_win={0: "12O 12C 12E 1E 2E 3E 4E"},
    )
    assert decl(s) == expected


@pytest.mark.parametrize("only,expected", [(True, set()), (False, {"tute 12"})])
def test_tute_and_cantes_only_with_stock(only: bool, expected: set[str]) -> None:
    s = position(
        Rules(players=2, cantes_only_with_stock=only),
        {0: KINGS + " 1E", 1: "5E 6E 7E 10E 1C"},
        trump="O",
    )
    assert s.stock == () and decl(s) == expected


# -- tute_effect and tute_unit_value -------------------------------------------------------


@pytest.mark.parametrize("unit", [1, 2, 3])
def test_wins_unit_in_the_hands_system_gains_tute_unit_value(unit: int) -> None:
    rules = four(scoring="hands", tute_unit_value=unit, target_match_points=7)
    s = kings_position(rules, match_points=(1, 2))
    s, ev = act(s, "tute 12")
    assert s.match_points == (1 + unit, 2) and s.status == "playing"
    assert events_of(ev, HandDealt)[0].hand_no == 2
    assert not events_of(ev, MatchEnded)


def test_wins_unit_tute_reaching_the_target_wins_the_match() -> None:
    rules = four(scoring="hands", tute_unit_value=2, target_match_points=3)
    s = kings_position(rules, match_points=(1, 2))
    s, ev = act(s, "tute 12")
    assert s.match_points == (3, 2) and s.over and s.winners == (0,)
    assert [m[:2] for m in events_of(ev, MatchEnded)] == [((0,), "tute")]


def test_wins_unit_in_the_points_system_wins_the_game() -> None:
    s = kings_position(four(games_to_win=2), game_scores=(10, 90))
    s, ev = act(s, "tute 12")
    assert events_of(ev, GameEnded) == [GameEnded(1, 0, (10, 90), True)]
    assert s.games_won == (1, 0) and s.game_no == 2 and s.game_scores == (0, 0)
    assert not events_of(ev, MatchEnded) and s.hand_no == 2


def test_wins_unit_in_the_points_system_last_game_wins_the_match() -> None:
    s = kings_position(four(), game_scores=(10, 90))
    s, ev = act(s, "tute 12")
    assert [m[:2] for m in events_of(ev, MatchEnded)] == [((0,), "tute")] and s.games_won == (1, 0)


@pytest.mark.parametrize("scoring", ["hands", "points"])
def test_wins_match(scoring: str) -> None:
    rules = four(scoring=scoring, tute_effect="wins_match", games_to_win=3)
    s = kings_position(rules, match_points=(0, 2), game_scores=(0, 95))
    s, ev = act(s, "tute 12")
    assert s.over and s.winners == (0,) and s.end_reason == "tute"
    assert [m[:2] for m in events_of(ev, MatchEnded)] == [((0,), "tute")]
    assert s.match_points == (0, 2)  # a wins_match tute adds no match points
