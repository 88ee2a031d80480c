"""RULES.md §12-§13: options, their validation (errors naming the option) and the presets.

Every value of every option is used, in a test that would fail if the option were ignored,
somewhere in ``tests/engine/test_rules_*.py``; :data:`COVERAGE` says where, and the options
that only the server reads (``turn_time_s``) or that only pick a seat (``first_dealer``) are
tested here.
"""

from __future__ import annotations

from typing import Any

import pytest

import engine
from engine import PRESETS, InvalidOption, Rules, decode_state, encode_state, new_match
from engine.events import HandDealt

DEFAULTS: dict[str, Any] = {
    "players": 4,
    "hand_size_2p": 8,
    "stock_phase_rules": "free",
    "head_led_suit_when_trumped": True,
    "cannot_overtrump": "free",
    "partner_relief": False,
    "cante_singers": "winner",
    "cantes_per_trick": "one",
    "forty_before_twenty": "strict",
    "cante_requires_held_at_win": False,
    "cantes_only_with_stock": False,
    "tute_enabled": True,
    "tute_effect": "wins_unit",
    "tute_unit_value": 1,
    "tute_requires_no_prior_cante": False,
    "swap_seven": True,
    "swap_two_for_low": False,
    "swap_requires_trick_won": True,
    "scoring": "points",
    "target_points": 101,
    "games_to_win": 1,
    "target_match_points": 3,
    "capote_value": 2,
    "tie_rule": "last_trick",
    "turn_time_s": 30,
    "first_dealer": "random",
}

# Where each value of each option of §12 is exercised (file: test).
COVERAGE: dict[str, dict[Any, str]] = {
    "players": {
        2: "cards: two_player_deal",
        3: "cards: three_player_deal",
        4: "cards: four_player_deal",
    },
    "hand_size_2p": {6: "cards: two_player_deal[6-28]", 8: "cards: two_player_deal[8-24]"},
    "stock_phase_rules": {
        v: "arrastre: two_player_stock_phase" for v in ("free", "trump_lead", "strict")
    },
    "head_led_suit_when_trumped": {True: "arrastre: examples", False: "arrastre: examples"},
    "cannot_overtrump": {"free": "arrastre: examples", "must_trump": "arrastre: examples"},
    "partner_relief": {True: "arrastre: partner_relief", False: "arrastre: partner_relief"},
    "cante_singers": {
        "winner": "cantes: only_the_trick_winner",
        "side": "cantes: side_lets_the_partner_sing",
    },
    "cantes_per_trick": {"one": "cantes: cantes_per_trick", "unlimited": "cantes: ..."},
    "forty_before_twenty": {v: "cantes: forty_after_a_twenty" for v in ("off", "hold", "strict")},
    "cante_requires_held_at_win": {True: "cantes", False: "cantes"},
    "cantes_only_with_stock": {True: "cantes", False: "cantes"},
    "tute_enabled": {True: "tute: tute_enabled", False: "tute: tute_enabled"},
    "tute_effect": {"wins_unit": "tute", "wins_match": "tute: wins_match"},
    "tute_unit_value": {1: "tute", 2: "tute", 3: "tute"},
    "tute_requires_no_prior_cante": {True: "tute", False: "tute"},
    "swap_seven": {True: "exchange", False: "exchange: swap_seven_off"},
    "swap_two_for_low": {True: "exchange", False: "exchange"},
    "swap_requires_trick_won": {True: "exchange", False: "exchange"},
    "scoring": {"points": "match", "hands": "match"},
    "target_points": {101: "match: target_points", 80: "match", 1: "match"},
    "games_to_win": {1: "match", 2: "match"},
    "target_match_points": {1: "match", 3: "match", 5: "match", 7: "match"},
    "capote_value": {1: "match: capote_value", 2: "match: capote_value"},
    "tie_rule": {"last_trick": "end_of_hand, match", "none": "end_of_hand, match"},
    "turn_time_s": {0: "here", 30: "here"},
    "first_dealer": {"random": "here", 0: "cards + here", 3: "cards + here"},
}


def test_defaults_are_section_12s() -> None:
    assert Rules().options() == DEFAULTS


def test_every_option_value_is_covered() -> None:
    assert set(COVERAGE) == set(DEFAULTS)
    for name, values in COVERAGE.items():
        assert DEFAULTS[name] in values, name
        for value in values:
            Rules.from_options({name: value})  # each listed value is valid


PRESET_VALUES: dict[str, dict[str, Any]] = {
    "parejas": {"players": 4},
    "corriente-6": {"players": 2, "hand_size_2p": 6},
    "parejas-manos": {
        "players": 4,
        "scoring": "hands",
        "target_match_points": 3,
        "tute_effect": "wins_match",
    },
    "tres": {
        "players": 3,
        "scoring": "hands",
        "target_match_points": 3,
        "tute_effect": "wins_match",
    },
    "corriente-8": {
        "players": 2,
        "scoring": "hands",
        "target_match_points": 3,
        "tute_effect": "wins_match",
    },
    "parejas-mejor-de-3": {
        "players": 4,
        "scoring": "hands",
        "target_match_points": 2,
        "capote_value": 1,
        "head_led_suit_when_trumped": False,
    },
    "corriente-juegos": {
        "players": 2,
        "scoring": "hands",
        "target_match_points": 3,
        "capote_value": 1,
        "tie_rule": "none",
        "tute_unit_value": 2,
        "cantes_only_with_stock": True,
    },
}


@pytest.mark.parametrize("name", sorted(PRESET_VALUES))
def test_presets(name: str) -> None:
    assert Rules.preset(name).options() == {**DEFAULTS, **PRESET_VALUES[name]}


def test_presets_are_exactly_section_13s() -> None:
    assert set(PRESETS) == set(PRESET_VALUES)


def test_preset_with_overrides() -> None:
    r = Rules.preset("tres", target_match_points=5, tie_rule="none")
    assert (r.players, r.target_match_points, r.tie_rule) == (3, 5, "none")
    with pytest.raises(InvalidOption) as e:
        Rules.preset("tres", target_match_points=0)
    assert e.value.option == "target_match_points"


def test_unknown_preset_and_unknown_option() -> None:
    with pytest.raises(InvalidOption) as e:
        Rules.preset("brisca")
    assert e.value.option == "preset"
    with pytest.raises(InvalidOption) as e:
        Rules.from_options({"trumps": "O"})
    assert e.value.option == "trumps" and "trumps" in str(e.value)


BAD: list[tuple[str, Any]] = [
    ("players", 5),
    ("players", 1),
    ("players", "4"),
    ("players", True),
    ("hand_size_2p", 7),
    ("hand_size_2p", 10),
    ("stock_phase_rules", "lenient"),
    ("stock_phase_rules", 1),
    ("head_led_suit_when_trumped", 1),
    ("head_led_suit_when_trumped", "true"),
    ("cannot_overtrump", "must_overtrump"),
    ("partner_relief", 0),
    ("partner_relief", None),
    ("cante_singers", "all"),
    ("cantes_per_trick", "two"),
    ("cantes_per_trick", 1),
    ("forty_before_twenty", "on"),
    ("forty_before_twenty", True),
    ("cante_requires_held_at_win", 1),
    ("cantes_only_with_stock", "no"),
    ("tute_enabled", 0),
    ("tute_effect", "wins_hand"),
    ("tute_unit_value", 0),
    ("tute_unit_value", True),
    ("tute_unit_value", 1.0),
    ("tute_requires_no_prior_cante", 1),
    ("swap_seven", 1),
    ("swap_two_for_low", 0),
    ("swap_requires_trick_won", None),
    ("scoring", "both"),
    ("target_points", 0),
    ("target_points", -101),
    ("target_points", "101"),
    ("games_to_win", 0),
    ("games_to_win", False),
    ("target_match_points", 0),
    ("target_match_points", 2.5),
    ("capote_value", 3),
    ("capote_value", 0),
    ("capote_value", True),
    ("tie_rule", "dealer"),
    ("turn_time_s", -1),
    ("turn_time_s", 1.5),
    ("turn_time_s", True),
    ("first_dealer", 4),
    ("first_dealer", -1),
    ("first_dealer", "0"),
    ("first_dealer", True),
    ("first_dealer", "Random"),
    # upper bounds: every match ends
    ("target_points", 1001),
    ("target_points", 4_000_000_000),
    ("games_to_win", 16),
    ("target_match_points", 16),
    ("tute_unit_value", 16),
    ("turn_time_s", 3601),
    ("turn_time_s", 2**32 - 1),
]

LIMITS = {
    "target_points": (1, 1000),
    "games_to_win": (1, 15),
    "target_match_points": (1, 15),
    "tute_unit_value": (1, 15),
    "turn_time_s": (0, 3600),
}


@pytest.mark.parametrize("name,value", BAD)
def test_bad_option_values_are_rejected_naming_the_option(name: str, value: Any) -> None:
    with pytest.raises(InvalidOption) as e:
        Rules.from_options({name: value})
    assert e.value.option == name and e.value.reason == "invalid_option"
    assert name in str(e.value)


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_integer_options_accept_their_whole_range_and_say_it(name: str) -> None:
    low, high = LIMITS[name]
    for value in (low, high):
        assert getattr(Rules.from_options({name: value}), name) == value
    with pytest.raises(InvalidOption) as e:
        Rules.from_options({name: high + 1})
    assert e.value.option == name
    assert str(e.value) == f"invalid_option: {name}: must be an integer from {low} to {high}"


def test_first_dealer_must_be_a_seat_of_the_table() -> None:
    assert Rules(players=4, first_dealer=3).first_dealer == 3
    with pytest.raises(InvalidOption) as e:
        Rules(players=2, first_dealer=2)
    assert e.value.option == "first_dealer"
    with pytest.raises(InvalidOption):
        Rules(players=3, first_dealer=3)


def test_enum_options_accept_their_strings() -> None:
    r = Rules.from_options({"stock_phase_rules": "strict", "tie_rule": "none"})
    assert r.stock_phase_rules is engine.rules.StockPhaseRules.STRICT
    assert r.tie_rule is engine.rules.TieRule.NONE


@pytest.mark.parametrize("players,seat", [(2, 0), (2, 1), (3, 2), (4, 0), (4, 3)])
def test_first_dealer_seat(players: int, seat: int) -> None:
    s = new_match(Rules(players=players, first_dealer=seat), 99)
    dealt = engine.opening_events(s)[0]
    assert isinstance(dealt, HandDealt)
    assert s.dealer == dealt.dealer == seat and s.leader == (seat + 1) % players


def test_first_dealer_random_is_drawn_from_the_seed_and_recorded() -> None:
    dealers = {new_match(Rules(first_dealer="random"), seed).dealer for seed in range(40)}
    assert dealers == {0, 1, 2, 3}
    assert new_match(Rules(), 7).dealer == new_match(Rules(), 7).dealer


@pytest.mark.parametrize("seconds", [0, 30, 600])
def test_turn_time_s_is_kept_for_the_server(seconds: int) -> None:
    # The clock is the server's (§11, §14.28); the engine keeps the value with the state.
    s = new_match(Rules(turn_time_s=seconds), 1)
    assert decode_state(encode_state(s)).rules.turn_time_s == seconds
    assert s.rules.options()["turn_time_s"] == seconds


def test_options_that_do_not_apply_have_no_effect() -> None:
    # capote_value, tute_unit_value and target_match_points under points; 2p options in 4p.
    a = new_match(Rules(players=4), 3)
    b = new_match(
        Rules(
            players=4,
            capote_value=1,
            tute_unit_value=5,
            target_match_points=1,
            hand_size_2p=6,
            swap_two_for_low=True,
        ),
        3,
    )
    assert a.hands == b.hands and a.stock == b.stock == ()
