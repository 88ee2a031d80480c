"""The checked and the trusted apply: ``apply`` is ``check`` then ``apply_trusted``.

On states of random matches of every preset, for every seat and every action number:
``check`` raises exactly what ``apply`` raises, ``is_legal`` agrees with ``legal_actions``
(plus the server's ``timeout`` for the seat on turn and ``forfeit`` for any seat), and for a
legal action ``apply_trusted`` gives the very state and events ``apply`` gives.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from engine import (
    FORFEIT,
    NUM_PLAYER_ACTIONS,
    PRESETS,
    TIMEOUT,
    IllegalAction,
    InvalidInput,
    State,
    TuteError,
    apply,
    apply_trusted,
    check,
    encode_state,
    is_legal,
    legal_actions,
    new_match,
    parse_action,
)

from .positions import position


def outcome(fn: Callable[..., object], *args: object) -> object:
    try:
        return fn(*args)
    except TuteError as err:
        return (type(err), err.reason, err.message)


def compare_all(s: State) -> int:
    """Every (seat, action) of ``s``; returns how many were legal."""
    legal_count = 0
    for seat in range(s.rules.players):
        legal = set(legal_actions(s, seat))
        if not s.over:
            if seat == s.turn:
                legal.add(TIMEOUT)
            legal.add(FORFEIT)
        for action in range(-1, FORFEIT + 2):
            checked = outcome(apply, s, seat, action)
            verdict = outcome(check, s, seat, action)
            assert is_legal(s, seat, action) == (action in legal), (seat, action)
            if action in legal:
                assert verdict is None
                assert apply_trusted(s, seat, action) == checked
                legal_count += 1
            else:
                assert isinstance(verdict, tuple) and verdict == checked, (seat, action)
    return legal_count


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_check_then_trusted_is_apply(preset: str) -> None:
    rng = random.Random(preset)
    rules = PRESETS[preset]
    s = new_match(rules, rng.getrandbits(32))
    steps = legal = 0
    while not s.over:
        if rng.random() < 0.15:  # every step would take long: sample the states
            legal += compare_all(s)
            steps += 1
        acts = [a for a in legal_actions(s, s.turn) if a < NUM_PLAYER_ACTIONS]
        s, _ = apply_trusted(s, s.turn, rng.choice(acts))
    compare_all(s)  # the match is over: nothing is legal
    assert steps >= 5 and legal > steps


@pytest.mark.parametrize(
    ("seat", "action", "reason"),
    [
        (0, "2O", "must_follow_suit"),
        (0, "7C", "card_not_held"),
        (1, "3C", "not_your_turn"),
        (0, "sing O", "cante_not_allowed"),
        (1, "timeout", "not_your_turn"),
    ],
)
def test_check_raises_the_rule_and_changes_nothing(seat: int, action: str, reason: str) -> None:
    s = position(PRESETS["parejas"], {0: "1C 2O", 1: "3C 4C"}, trump="O", trick="5C", leader=3)
    assert s.turn == 0
    before = encode_state(s)
    with pytest.raises(IllegalAction) as err:
        check(s, seat, parse_action(action))
    assert err.value.reason == reason and not is_legal(s, seat, parse_action(action))
    assert encode_state(s) == before


@pytest.mark.parametrize(
    ("seat", "action", "reason"), [(4, 0, "bad_seat"), (0, 49, "unknown_action")]
)
def test_check_raises_on_malformed_input(seat: int, action: int, reason: str) -> None:
    s = new_match(PRESETS["parejas"], 1)
    with pytest.raises(InvalidInput) as err:
        check(s, seat, action)
    assert err.value.reason == reason
