"""Illegal actions: each is refused with the reason code of the rule, the state untouched.

:func:`positions.rejects` checks, for every case, that the state encodes to the same bytes
after the refusal and that the action is not among the seat's legal actions.
"""

from __future__ import annotations

from typing import Any

import pytest

import engine
from engine import IllegalAction, InvalidInput, Rules, apply
from engine.cards import card_text

from .positions import act, position, rejects

CASES = [
    # rules, trick, hand of the seat on turn, move, reason
    ({}, "4C", "12C 2O", "2O", "must_follow_suit"),  # holding copas, trumps
    ({}, "4C", "12C 2E", "2E", "must_follow_suit"),  # holding copas, discards
    ({}, "4C", "12C 2C", "2C", "must_beat"),
    ({}, "4O", "12O 2O 1C", "2O", "must_beat"),  # trump led: beat the trump
    ({}, "4O", "12O 2O 1C", "1C", "must_follow_suit"),
    ({}, "4C", "2O 5E", "5E", "must_trump"),
    ({}, "4C 5O", "3O 2O 5E", "2O", "must_overtrump"),
    ({}, "4C 5O", "3O 2O 5E", "5E", "must_overtrump"),
    ({"cannot_overtrump": "must_trump"}, "4C 5O", "2O 5E", "5E", "must_trump"),
    ({}, "4C 5O 3C", "1C 2C 1O", "2C", "must_beat"),
    ({"head_led_suit_when_trumped": False}, "4C 5O 3C", "1C 2C 1O", "1O", "must_follow_suit"),
    ({}, "4C", "12C 2C", "1C", "card_not_held"),
    ({}, "", "12C 2C", "1C", "card_not_held"),
]


@pytest.mark.parametrize("options,trick,hand,move,reason", CASES)
def test_illegal_cards(
    options: dict[str, Any], trick: str, hand: str, move: str, reason: str
) -> None:
    seat = len(trick.split())
    s = position(
        Rules(players=4, **options),
        {seat: hand},
        trump="O",
        trick=trick,
        trick_no=5,
    )
    assert rejects(s, move) == reason


def test_error_messages_name_the_rule_not_the_cards() -> None:
    s = position(Rules(players=4), {1: "12C 2C 7E"}, trump="O", trick="4C", trick_no=5)
    with pytest.raises(IllegalAction) as e:
        apply(s, 1, engine.parse_card("2C"))
    assert e.value.reason == "must_beat" and "copas" in e.value.message
    assert not any(card_text(c) in str(e.value) for c in range(40))


def test_two_player_trump_lead_reason() -> None:
    s = position(
        Rules(players=2, stock_phase_rules="trump_lead"), {1: "2O 5C"}, trick="1O", stock="5E 4O"
    )
    assert rejects(s, "5C") == "must_follow_suit"


def test_not_your_turn() -> None:
    s = position(Rules(players=4), {0: "1C 2C", 1: "3C 4C", 2: "5C 6C", 3: "7C 10C"}, trump="O")
    assert rejects(s, "1:3C") == "not_your_turn"
    s, _ = act(s, "1C")
    assert rejects(s, "0:2C") == "not_your_turn"
    assert rejects(s, "2:5C") == "not_your_turn"
    assert rejects(s, "3:timeout") == "not_your_turn"


def test_declaration_reasons() -> None:
    s = position(
        Rules(players=2), {0: "12C 11C 12O 12E 1E 2B", 1: "7O 2E 3E 4E 5E 6E"}, stock="5B 1O"
    )
    assert rejects(s, "1:sing C") == "cante_not_allowed"  # not the trick winner
    assert rejects(s, "sing E") == "cante_not_allowed"  # 11E not held
    assert rejects(s, "tute 12") == "tute_not_allowed"  # three reyes only
    assert rejects(s, "tute 11") == "tute_not_allowed"
    assert rejects(s, "1:exchange") == "exchange_not_allowed"  # 7O held, but not the leader
    assert rejects(s, "exchange") == "exchange_not_allowed"  # the leader holds no 7O


def test_bad_seat_and_unknown_action_are_invalid_input() -> None:
    s = position(Rules(players=2), {0: "1C", 1: "2C"}, trump="O")
    with pytest.raises(InvalidInput) as e:
        apply(s, 2, engine.parse_card("1C"))
    assert e.value.reason == "bad_seat"
    with pytest.raises(engine.TuteError):
        apply(s, 0, 99)


def test_match_over() -> None:
    s = position(Rules(players=4), {0: "1C", 1: "2C", 2: "3C", 3: "4C"}, trump="O")
    s, _ = act(s, "2:forfeit")
    for move in ("1C", "1:2C", "sing C", "tute 12", "exchange", "timeout", "3:forfeit"):
        assert rejects(s, move) == "match_over"
