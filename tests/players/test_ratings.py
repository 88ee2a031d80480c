"""Ratings: the display scale, bots fixed, leavers and abandoned partners, one ladder per mode."""

from __future__ import annotations

import pytest

from engine.bots import RATINGS
from service.matchmaking import entrants
from service.players import Rated, bot_rated, display, provisional, rate_match


def test_a_new_player_shows_1500_and_is_provisional() -> None:
    new = Rated("a")
    assert display(new.mu, new.sigma) == pytest.approx(1500.0)
    assert provisional(new.sigma)
    assert not provisional(3.0)


def test_bot_levels_map_onto_the_display_scale_with_medium_at_1500() -> None:
    for level, elo in RATINGS.items():
        bot = bot_rated(level)
        assert bot.display == pytest.approx(elo - RATINGS["medium"] + 1500.0)
        # the matchmaker's scale is the same one
        assert bot.display == pytest.approx(entrants.bot_entrant(level).rating)
    with pytest.raises(ValueError):
        bot_rated("grandmaster")


def test_a_4p_match_of_humans_and_bots_moves_only_the_humans() -> None:
    a, b, c = Rated("a"), Rated("b"), Rated("c")
    bot = bot_rated("hard")
    changes = rate_match("4p", [[a, bot], [b, c]], winner_side=0)
    by_id = {ch.player_id: ch for ch in changes}
    assert set(by_id) == {"a", "b", "c"}
    assert by_id["a"].won and by_id["a"].display_after > by_id["a"].display_before
    for loser in ("b", "c"):
        assert not by_id[loser].won
        assert by_id[loser].display_after < by_id[loser].display_before
    assert all(ch.sigma_after < ch.sigma_before for ch in changes)


def test_beating_a_stronger_side_gains_more() -> None:
    weak_win = rate_match("2p", [[Rated("a")], [bot_rated("hard")]], winner_side=0)
    strong_win = rate_match("2p", [[Rated("a")], [bot_rated("random")]], winner_side=0)
    gain = weak_win[0].mu_after - weak_win[0].mu_before
    assert gain > strong_win[0].mu_after - strong_win[0].mu_before > 0


def test_a_leaver_takes_the_loss_and_the_abandoned_partner_is_untouched() -> None:
    a, b, c, d = Rated("a"), Rated("b"), Rated("c"), Rated("d")
    changes = rate_match("4p", [[a, b], [c, d]], winner_side=1, leavers={"a"})
    by_id = {ch.player_id: ch for ch in changes}
    assert set(by_id) == {"a", "c", "d"}  # b, abandoned, keeps its rating
    assert not by_id["a"].won and by_id["a"].mu_after < by_id["a"].mu_before
    assert by_id["c"].won and by_id["d"].won
    with pytest.raises(ValueError, match="leaver"):
        rate_match("4p", [[a, b], [c, d]], winner_side=0, leavers={"a"})


def test_3p_losers_share_second_place() -> None:
    changes = rate_match("3p", [[Rated("a")], [Rated("b")], [Rated("c")]], winner_side=2)
    by_id = {ch.player_id: ch for ch in changes}
    assert by_id["c"].mu_after > by_id["c"].mu_before
    assert by_id["a"].mu_after == pytest.approx(by_id["b"].mu_after)


def test_a_3p_leaver_loses_to_both_others_who_share_first_place() -> None:
    sides = [[Rated("a")], [Rated("b")], [Rated("c")]]
    changes = rate_match("3p", sides, winner_side=(0, 2), leavers=["b"])
    by_id = {ch.player_id: ch for ch in changes}
    assert by_id["b"].mu_after < by_id["b"].mu_before and not by_id["b"].won
    assert by_id["a"].won and by_id["c"].won
    assert by_id["a"].mu_after == pytest.approx(by_id["c"].mu_after)
    assert by_id["a"].mu_after > by_id["a"].mu_before
    with pytest.raises(ValueError):  # a leaver's side cannot be among the winners
        rate_match("3p", sides, winner_side=(0, 1), leavers=["b"])
    with pytest.raises(ValueError):  # somebody loses
        rate_match("3p", sides, winner_side=(0, 1, 2))


@pytest.mark.parametrize(
    "mode,sides,winner",
    [
        ("5p", [[Rated("a")], [Rated("b")]], 0),
        ("2p", [[Rated("a")]], 0),
        ("2p", [[Rated("a")], []], 0),
        ("2p", [[Rated("a")], [Rated("b")]], 2),
        ("2p", [[Rated("a", sigma=0.0)], [Rated("b")]], 0),
        ("2p", [[Rated("a", mu=float("nan"))], [Rated("b")]], 0),
    ],
)
def test_bad_matches_are_refused(mode: str, sides: list[list[Rated]], winner: int) -> None:
    with pytest.raises(ValueError):
        rate_match(mode, sides, winner)
