"""RULES.md §11: timeouts (the cheapest legal card), deadlines as turn ids, and forfeits."""

from __future__ import annotations

import pytest

from engine import FORFEIT, TIMEOUT, Rules, apply, card_text, cheapest_card, legal_actions
from engine.events import (
    CanteSung,
    CardPlayed,
    HandEnded,
    MatchEnded,
    PlayerForfeited,
    Standing,
    TurnTimedOut,
)

from .positions import act, cards, events_of, legal, position, rejects

# -- the cheapest legal card --------------------------------------------------------------------


@pytest.mark.parametrize(
    "trick,hand,cheapest",
    [
        ("", "1C 2O 4E 12B", "4E"),  # a zero-point non-trump before any trump
        ("", "2O 10C", "2O"),  # a zero-point trump before a counting card
        ("", "4E 4C 4B", "4C"),  # suit order O < C < E < B
        ("", "2E 4C", "2E"),  # strength: the 2 is the weakest
        ("", "1O 3C", "3C"),  # card points first
        ("", "12O 12C", "12C"),  # same points: the non-trump
        ("", "7B 6B 5B", "5B"),
        ("", "10O 11C", "10O"),  # 2 points (trump) before 3 points
        ("4C", "12C 5C 2O", "5C"),  # only among the legal cards (must beat 4C)
        ("4C", "2O 3O 1E", "2O"),  # must trump
        ("4C 5O", "1E 2O 3O", "3O"),  # must overtrump: 3O is the only legal card
    ],
)
def test_cheapest_legal_card(trick: str, hand: str, cheapest: str) -> None:
    seat = len(trick.split())
    s = position(Rules(players=4), {seat: hand}, trump="O", trick=trick, leader=0, trick_no=5)
    assert card_text(cheapest_card(s, seat)) == cheapest


def test_cheapest_with_free_contrafallo() -> None:
    # Void in copas, the trick trumped by 5O, holding 2O 4O 12E: nothing overtrumps 5O, so
    # any card may be played (contrafallar) and the cheapest is the zero-point trump 2O.
    s = position(Rules(players=4), {2: "2O 4O 12E"}, trump="O", trick="4C 5O", trick_no=5)
    assert legal(s) == {"2O", "4O", "12E"}
    assert card_text(cheapest_card(s, 2)) == "2O"


def test_timeout_plays_the_cheapest_card() -> None:
    s = position(Rules(players=4), {0: "1C 2O 4E 12B", 1: "5E 6E 7E 10E"}, trump="O")
    s, ev = act(s, "timeout")
    assert ev == [TurnTimedOut(0, 7), CardPlayed(0, cards("4E")[0], True, 7)]  # trick 7 of 10
    assert s.turn == 1


def test_timeout_forfeits_the_window_declarations_for_this_window_only() -> None:
    s = position(
        Rules(players=4),
        {0: "12C 11C 4E 1O", 1: "5E 6E 7E 10E", 2: "2B 3B 4B 5B", 3: "6B 7B 10B 11B"},
        trump="O",
    )
    assert "sing C" in legal(s)
    s, ev = act(s, "timeout")
    assert not events_of(ev, CanteSung) and events_of(ev, CardPlayed)[0].card == cards("4E")[0]
    assert rejects(s, "0:sing C") == "cante_not_allowed"
    s, _ = act(s, "5E", "2B", "6B")  # seat 1 wins trick 7
    s, _ = act(s, "6E", "3B", "7B", "1O")  # seat 0 trumps and wins trick 8
    # A later window whose conditions allow it: the cante is possible again.
    assert s.leader == 0 and "sing C" in legal(s)


def test_timeout_forfeits_the_exchange_and_a_later_window_allows_it() -> None:
    s = position(Rules(players=2), {0: "7O 1E 2E", 1: "3E 4E 5C"}, stock="5B 6B 1B 2B 3B 1O")
    assert "exchange" in legal(s)
    s, _ = act(s, "timeout")  # plays 2E
    assert rejects(s, "0:exchange") == "exchange_not_allowed"
    s, _ = act(s, "5C")  # free stock phase: 5C does not win; seat 0 wins and draws
    assert s.leader == 0 and "exchange" in legal(s)


def test_the_partners_right_to_sing_lapses_with_the_leaders_timeout() -> None:
    s = position(
        Rules(players=4, cante_singers="side"),
        {0: "4E 5E", 1: "6E 7E", 2: "12B 11B", 3: "2E 3E"},
        trump="O",
    )
    assert legal(s, 2) == {"sing B"}
    assert rejects(s, "2:timeout") == "not_your_turn"  # no deadline of its own
    s, _ = act(s, "timeout")
    assert legal(s, 2) == set() and rejects(s, "2:sing B") == "cante_not_allowed"


def test_timeout_only_for_the_seat_on_turn() -> None:
    s = position(Rules(players=4), {0: "1C", 1: "2C", 2: "3C", 3: "4C"}, trump="O")
    assert rejects(s, "1:timeout") == "not_your_turn"
    assert all(TIMEOUT not in legal_actions(s, seat) for seat in range(4))


def test_deadlines_turn_ids() -> None:
    # A turn begins at every card and at every trick's end (after the draw in 2p);
    # declarations do not move the deadline.
    s = position(
        Rules(players=4, cante_singers="side"),
        {0: "12C 11C 4E", 1: "5E 6E 7E", 2: "12B 11B 2E", 3: "3E 2B 3B"},
        trump="O",
    )
    t0 = s.turn_id
    s, _ = act(s, "2:sing B")
    assert s.turn_id == t0
    s, _ = act(s, "4E")
    assert s.turn_id == t0 + 1
    s, _ = act(s, "5E", "2E", "3E")  # seat 3 wins with 3E
    assert s.turn_id == t0 + 4 and s.turn == 3


# -- forfeits -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "players,seat,winners",
    [(2, 0, (1,)), (2, 1, (0,)), (3, 1, (0, 2)), (3, 0, (1, 2)), (4, 1, (0,)), (4, 2, (1,))],
)
def test_forfeit_ends_the_match(players: int, seat: int, winners: tuple[int, ...]) -> None:
    s = position(Rules(players=players), {0: "1C 2C", 1: "3C 4C"}, trump="O")
    before = s.hand_no
    s2, ev = apply(s, seat, FORFEIT)  # by any seat, on turn or not
    zeros = (0,) * s.rules.sides
    final = Standing(zeros, zeros, zeros, s.won_points, zeros, s.tricks_won)
    assert ev == (PlayerForfeited(seat), MatchEnded(winners, "forfeit", final, seat))
    assert s2.over and s2.winners == winners and s2.end_reason == "forfeit"
    assert not [e for e in ev if isinstance(e, HandEnded)] and s2.hand_no == before
    assert s2.last_result is None  # the interrupted hand has no result


@pytest.mark.parametrize("move", ["1C", "0:forfeit", "1:forfeit", "0:timeout", "sing C"])
def test_nothing_after_the_match_is_over(move: str) -> None:
    s = position(Rules(players=2), {0: "1C 12C 11C", 1: "3C 4C 5C"}, trump="O")
    s, _ = act(s, "1:forfeit")
    assert legal(s, 0) == legal(s, 1) == set()
    assert rejects(s, move) == "match_over"
