"""Events carry their own context: trick numbers, the standing after a hand, match points.

Each event says what a reader of one event needs (RULES.md §9, §10): ``CardPlayed``,
``TurnTimedOut``, ``CanteSung`` and ``TuteDeclared`` the trick they belong to; ``HandEnded``
the standing once the hand is scored and the match points it awarded; ``GameEnded`` whether
a tute won it; ``MatchEnded`` the final standing and the seat whose forfeit ended it. The
random matches check every one of them against the states before and after the action,
derived here independently of the engine's scoring.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine import FORFEIT, PRESETS, Rules, State, apply, legal_actions, new_match
from engine.events import (
    CanteSung,
    CardPlayed,
    GameEnded,
    HandEnded,
    MatchEnded,
    PlayerForfeited,
    Standing,
    TurnTimedOut,
    TuteDeclared,
)

from .positions import act, events_of, play_out, position, random_action


def side_cantes(s: State) -> tuple[int, ...]:
    out = [0] * s.rules.sides
    for seat, _suit, points, _trick in s.cantes:
        out[s.side_of(seat)] += points
    return tuple(out)


def check_context(before: State, after: State, events: tuple[Any, ...]) -> None:
    """Every context field of ``events`` (one ``apply``) against the two states."""
    game_ended = [e for e in events if type(e) is GameEnded]
    forfeits = [e.seat for e in events if type(e) is PlayerForfeited]
    by_tute = any(type(e) is TuteDeclared for e in events)
    for e in events:
        if type(e) in (CardPlayed, TurnTimedOut, CanteSung, TuteDeclared):
            assert e.trick_no == before.trick_no, e
        elif type(e) is HandEnded:
            res = e.result
            scores = game_ended[0].scores if game_ended else after.game_scores
            # A tute scores no card points (the result has 0s), but the tricks it cut short
            # were won all the same.
            card_points = before.won_points if res.tute_seat >= 0 else res.card_points
            expected = Standing(
                scores,
                after.games_won,
                after.match_points,
                card_points,
                res.cante_points,
                res.tricks_won,
            )
            assert e.standing == expected
            gained = sum(after.match_points) - sum(before.match_points)
            assert e.match_points_awarded == gained
            if gained:
                assert after.match_points[res.winner] - before.match_points[res.winner] == gained
        elif type(e) is GameEnded:
            assert e.by_tute == by_tute
        elif type(e) is MatchEnded:
            final = Standing(
                after.game_scores,
                after.games_won,
                after.match_points,
                after.won_points,
                side_cantes(after),
                after.tricks_won,
            )
            assert e.standing == final
            assert e.forfeited_seat == (forfeits[0] if forfeits else -1)
            assert (e.reason == "forfeit") == bool(forfeits)


def play(rules: Rules, seed: int) -> dict[str, int]:
    """A random match (declarations preferred, some timeouts, rarely a forfeit), checking
    every step; returns how many events of each kind it saw."""
    rng = random.Random(seed)
    s = new_match(rules, rng.getrandbits(32))
    seen: dict[str, int] = {}
    while not s.over:
        seat, action = random_action(rng, s, legal_actions(s, s.turn), 0.003)
        after, events = apply(s, seat, action)
        check_context(s, after, events)
        for e in events:
            seen[type(e).__name__] = seen.get(type(e).__name__, 0) + 1
        s = after
    return seen


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_random_matches_carry_their_context(preset: str) -> None:
    seen: dict[str, int] = {}
    for seed in range(6):
        for kind, count in play(PRESETS[preset], seed).items():
            seen[kind] = seen.get(kind, 0) + count
    assert seen["CardPlayed"] and seen["HandEnded"] and seen["MatchEnded"] == 6
    assert seen["TurnTimedOut"] and seen["CanteSung"]


@pytest.mark.parametrize("seed", range(12))
def test_random_options_carry_their_context(seed: int) -> None:
    rng = random.Random(seed)
    rules = Rules(
        players=rng.choice([2, 3, 4]),
        scoring=rng.choice(["hands", "points"]),
        tute_effect=rng.choice(["wins_unit", "wins_match"]),
        tute_unit_value=rng.choice([1, 3]),
        capote_value=rng.choice([1, 2]),
        games_to_win=rng.choice([1, 2]),
        target_points=rng.choice([60, 101]),
        tie_rule=rng.choice(["last_trick", "none"]),
    )
    play(rules, seed)


# -- the figures themselves, on known positions -------------------------------------------------

LAST = {0: "1C", 1: "2C", 2: "3C", 3: "4C"}
KINGS = "12O 12C 12E 12B"


def test_card_played_names_its_trick_up_to_the_last_of_a_2p_hand() -> None:
    s = position(Rules(players=2), {0: "1C", 1: "2C"}, trump="O", leader=0)
    assert s.trick_no == 20
    _, ev = act(s, "1C", "2C")
    assert [e.trick_no for e in events_of(ev, CardPlayed)] == [20, 20]


def test_a_capote_in_the_hands_system_awards_its_value() -> None:
    rules = Rules(players=4, scoring="hands", capote_value=2, target_match_points=5)
    s = position(
        rules, LAST, trump="O", won={0: "*"}, tricks_won=(9, 0), dealer=2, match_points=(1, 0)
    )
    s, ev = play_out(s)
    ended = events_of(ev, HandEnded)[0]
    assert ended.result.capote and ended.match_points_awarded == 2
    assert ended.standing.match_points == (3, 0) == s.match_points
    assert ended.standing.tricks_won == (10, 0) and ended.standing.card_points == (120, 0)


def test_the_points_system_awards_no_match_points_and_shows_a_won_games_scores() -> None:
    rules = Rules(players=4, target_points=101, games_to_win=2)
    s = position(
        rules,
        LAST,
        trump="O",
        won={0: "1O 3O 12O 11O 10O 7O 6O 5O", 1: "*"},
        cantes=[(0, "E", 3)],
        dealer=2,
        game_scores=(30, 0),
    )
    s, ev = play_out(s)
    ended = events_of(ev, HandEnded)[0]
    assert ended.match_points_awarded == 0
    # The game is won at 111: the standing shows its final scores, the state the next game's.
    assert ended.standing.game_scores == (111, 69) and s.game_scores == (0, 0)
    assert ended.standing.games_won == (1, 0) == s.games_won
    assert ended.standing.cante_points == (20, 0)
    assert events_of(ev, GameEnded) == [GameEnded(1, 0, (111, 69), False)]


@pytest.mark.parametrize(("effect", "awarded"), [("wins_unit", 3), ("wins_match", 0)])
def test_a_tute_awards_its_unit_or_wins_the_match(effect: str, awarded: int) -> None:
    rules = Rules(
        players=4, scoring="hands", tute_effect=effect, tute_unit_value=3, target_match_points=5
    )
    s = position(
        rules,
        {0: KINGS + " 1O", 1: "2C 3C 4C 5C 6C"},
        trump="O",
        leader=0,
        won={0: "1E 2E 3E 4E", 1: "1C 7C 10C 11C 1B 2B 3B 4B"},
    )
    before = s
    s, ev = act(s, "tute 12")
    ended = events_of(ev, HandEnded)[0]
    assert events_of(ev, TuteDeclared)[0].trick_no == before.trick_no == 6
    assert ended.match_points_awarded == awarded
    assert ended.standing.match_points == (awarded, 0)
    # A tute scores no card points, but the standing keeps the tally of the tricks won.
    assert ended.result.card_points == (0, 0)
    assert ended.standing.card_points == before.won_points != (0, 0)
    if effect == "wins_match":
        assert events_of(ev, MatchEnded)[0].standing == ended.standing


def test_a_forfeit_ends_with_the_standing_as_it_was() -> None:
    rules = Rules(players=4, cantes_per_trick="unlimited")
    s = position(
        rules, {0: "12O 11O 12C 11C 1E", 1: "2E 3E 4E 5E 6E"}, trump="O", game_scores=(40, 55)
    )
    s, _ = act(s, "sing O")
    s, ev = apply(s, 3, FORFEIT)
    end = events_of(ev, MatchEnded)[0]
    assert end.forfeited_seat == 3 and end.reason == "forfeit" and end.winners == (0,)
    assert end.standing.game_scores == (40, 55) and end.standing.cante_points == (40, 0)
