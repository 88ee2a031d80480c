"""The game's facts, spelled once by the engine: cards and action numbers, sides, status, the
points of the last trick and of a hand in the hands system (RULES.md §2, §6, §9, §10)."""

from __future__ import annotations

import pytest

import engine
from engine import (
    EXCHANGE,
    FORFEIT,
    LAST_TRICK_POINTS,
    NUM_CARDS,
    NUM_PLAYER_ACTIONS,
    SIDE_SEATS,
    SING,
    TIMEOUT,
    TUTE_11,
    TUTE_12,
    ActionKind,
    InvalidInput,
    Rules,
    Status,
    is_card,
    is_sing,
    kind_of,
    match_points_awarded,
    new_match,
    parse_action,
    side_of,
)
from engine.score import hand_result


def test_the_action_numbers_and_their_kinds() -> None:
    assert NUM_CARDS == 40 and SING == NUM_CARDS and NUM_PLAYER_ACTIONS == EXCHANGE + 1 == 47
    kinds = [kind_of(a) for a in range(FORFEIT + 1)]
    assert kinds == (
        [ActionKind.CARD] * 40
        + [ActionKind.SING] * 4
        + [ActionKind.TUTE] * 2
        + [ActionKind.EXCHANGE, ActionKind.TIMEOUT, ActionKind.FORFEIT]
    )
    assert [a for a in range(FORFEIT + 1) if is_card(a)] == list(range(40))
    assert [a for a in range(FORFEIT + 1) if is_sing(a)] == [40, 41, 42, 43]
    assert kind_of(parse_action("tute 11")) is ActionKind.TUTE and TUTE_11 == TUTE_12 + 1
    assert kind_of(TIMEOUT) == "timeout"  # a StrEnum: the value is the metrics label
    for bad in (-1, FORFEIT + 1, 1000):
        with pytest.raises(InvalidInput) as err:
            kind_of(bad)
        assert err.value.reason == "bad_action"


@pytest.mark.parametrize("players", [2, 3, 4])
def test_sides_and_their_seats(players: int) -> None:
    seats = SIDE_SEATS[players]
    assert len(seats) == Rules(players=players).sides
    assert sorted(s for side in seats for s in side) == list(range(players))
    for side, members in enumerate(seats):
        assert all(side_of(players, seat) == side for seat in members)
    state = new_match(Rules(players=players), 1)
    assert [state.side_of(seat) for seat in range(players)] == [
        side_of(players, seat) for seat in range(players)
    ]


def test_status_is_the_states_and_the_views() -> None:
    s = new_match(Rules(), 3)
    assert s.status is Status.PLAYING and engine.view(s, 0).status is Status.PLAYING
    assert Status.PLAYING == "playing" and Status.OVER == "over"
    decoded = engine.decode_state(engine.encode_state(s))
    assert decoded.status is Status.PLAYING and decoded == s
    over, _ = engine.apply(s, 0, FORFEIT)
    assert over.status is Status.OVER and over.over


def test_the_last_trick_is_worth_ten() -> None:
    rules = Rules(players=2)
    s = new_match(rules, 5)._replace(won_points=(70, 50), tricks_won=(12, 8))
    result = hand_result(s, 1, None)
    assert LAST_TRICK_POINTS == 10 and result.totals == (70, 50 + LAST_TRICK_POINTS)


@pytest.mark.parametrize(
    ("options", "tute", "capote", "winner", "expected"),
    [
        ({"scoring": "hands"}, False, False, 0, 1),
        ({"scoring": "hands", "capote_value": 2}, False, True, 1, 2),
        ({"scoring": "hands", "capote_value": 1}, False, True, 1, 1),
        ({"scoring": "hands", "tute_unit_value": 3}, True, False, 0, 3),
        ({"scoring": "hands", "tute_effect": "wins_match"}, True, False, 0, 0),
        ({"scoring": "hands", "tie_rule": "none"}, False, False, -1, 0),
        ({"scoring": "points"}, False, True, 0, 0),
        ({"scoring": "points"}, True, False, 0, 0),
    ],
)
def test_match_points_awarded(
    options: dict[str, object], tute: bool, capote: bool, winner: int, expected: int
) -> None:
    rules = Rules.from_options({"players": 4, **options})
    s = new_match(rules, 9)
    result = hand_result(s, 0, (0, 12, 0) if tute else None)._replace(winner=winner, capote=capote)
    assert match_points_awarded(rules, result) == expected
