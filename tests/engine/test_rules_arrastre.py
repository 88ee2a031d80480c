"""RULES.md §5: obligations (el arrastre), with every option that changes them."""

from __future__ import annotations

import pytest

from engine import Rules

from .positions import legal, position

# -- §5's own examples (4p and 3p, trump E, 11C led, default options unless named) -----------

EXAMPLES = [
    # trick so far, hand, options, legal set
    ("11C", "12C 4O", {}, {"12C"}),  # follow and beat
    ("11C", "4C 1O", {}, {"4C"}),  # follow, cannot beat
    ("11C", "4E 1O", {}, {"4E"}),  # void in cups: trump
    ("11C 7E", "4E 1O", {}, {"4E", "1O"}),  # cannot overtrump: free
    ("11C 7E", "4E 1O", {"cannot_overtrump": "must_trump"}, {"4E"}),
    ("11C 7E", "4E 1C 5C", {}, {"1C"}),  # still head the suit led
    ("11C 7E", "4E 1C 5C", {"head_led_suit_when_trumped": False}, {"1C", "5C"}),
]


@pytest.mark.parametrize("players", [3, 4])
@pytest.mark.parametrize("trick,hand,options,expected", EXAMPLES)
def test_rules_section_5_examples(
    players: int, trick: str, hand: str, options: dict[str, object], expected: set[str]
) -> None:
    rules = Rules(players=players, **options)  # type: ignore[arg-type]
    seat = len(trick.split())
    s = position(rules, {seat: hand}, trump="E", trick=trick, leader=0)
    assert s.turn == seat
    assert legal(s) == expected


# -- the strict algorithm, step by step (4p, trump O unless said) ----------------------------

STRICT = [
    # trump, trick, hand, options, legal set
    ("O", "", "4C 1O 12E", {}, {"4C", "1O", "12E"}),  # the leader leads any card
    ("O", "4C", "5C 2C 1O", {}, {"5C"}),  # beat B
    ("O", "4C", "2C 1O", {}, {"2C"}),  # cannot beat: any of the suit, never trump
    ("O", "4C 3C", "1C 12C 2C", {}, {"1C"}),  # beat B = the strongest of L so far
    ("O", "3C 4C", "12C 2C", {}, {"12C", "2C"}),  # nothing beats 3C
    ("O", "4O 10O", "5O 12O 1C", {}, {"12O"}),  # trump led: beat W
    ("O", "4O 10O", "5O 6O 1C", {}, {"5O", "6O"}),  # trump led, cannot beat: any trump
    ("O", "4O 10O", "5O 12O", {"head_led_suit_when_trumped": False}, {"12O"}),  # L = T
    ("O", "4C 10C", "1E 2E", {}, {"1E", "2E"}),  # void, no trumps: any card
    ("O", "4C", "2O 3O 1E", {}, {"2O", "3O"}),  # no trump in the trick: any trump
    ("O", "4C 5O", "2O 3O 1E", {}, {"3O"}),  # overtrump (pisar)
    ("O", "4C 5O", "2O 4O 1E", {}, {"2O", "4O", "1E"}),  # contrafallar allowed (free)
    ("O", "4C 5O", "2O 4O 1E", {"cannot_overtrump": "must_trump"}, {"2O", "4O"}),
    ("O", "4C 5O 12O", "1O 10O 1E", {}, {"1O"}),  # beat the highest trump of the trick
    ("O", "4C 5O 3C", "1C 2C 1O", {}, {"1C"}),  # trumped, still head B = 3C
    ("O", "4C 5O 3C", "12C 2C 1O", {}, {"12C", "2C"}),  # cannot head 3C: any copa
    ("O", "4C 5O 3C", "1C 2C 1O", {"head_led_suit_when_trumped": False}, {"1C", "2C"}),
    ("O", "4C 5O", "1C 2C 1O", {"head_led_suit_when_trumped": True}, {"1C"}),
    ("O", "4C 5O", "1C 2C 1O", {"cannot_overtrump": "free"}, {"1C"}),  # holding L: no trump
]


@pytest.mark.parametrize("trump,trick,hand,options,expected", STRICT)
def test_strict_algorithm(
    trump: str, trick: str, hand: str, options: dict[str, object], expected: set[str]
) -> None:
    rules = Rules(players=4, **options)  # type: ignore[arg-type]
    seat = len(trick.split())
    s = position(rules, {seat: hand}, trump=trump, trick=trick, leader=0, trick_no=5)
    got = {a for a in legal(s) if not a.startswith(("sing", "tute", "exchange"))}
    assert got == expected


def test_no_partner_exception_by_default() -> None:
    # Seat 0 (partner of seat 2) wins with 1O; seat 2 void in copas must still overtrump.
    s = position(Rules(players=4), {2: "2O 3O 5E"}, trump="O", trick="4C 5O", leader=0)
    assert legal(s) == {"3O"}


# -- partner_relief (4p) ---------------------------------------------------------------------

RELIEF = [
    # leader, trick, seat's hand, relief on, legal set
    (0, "4C 10C 2C", "5C 12C 2O", False, {"12C"}),  # W = seat 1, partner of seat 3
    (0, "4C 10C 2C", "5C 12C 2O", True, {"5C", "12C"}),  # relief: any copa
    (1, "4C 10C", "5C 12C 2O", True, {"12C"}),  # partner led, but W = seat 2: beat
    (0, "4C 10C 2E", "2O 5E", False, {"2O"}),  # void: must trump over the partner
    (0, "4C 10C 2E", "2O 5E", True, {"2O", "5E"}),  # relief: any card
    (0, "10C 4C", "12C 5C", True, {"12C", "5C"}),  # seat 2, partner seat 0 wins
    (0, "10C 4C", "12C 5C", False, {"12C"}),
    (0, "4C 10C 12C", "1C 5C", True, {"1C"}),  # W = seat 2, an opponent of seat 3: beat
    (0, "4C 2O", "3O 5E 1C", True, {"1C"}),  # W = seat 1, an opponent of seat 2: head 4C
]


@pytest.mark.parametrize("leader,trick,hand,relief,expected", RELIEF)
def test_partner_relief(
    leader: int, trick: str, hand: str, relief: bool, expected: set[str]
) -> None:
    seat = (leader + len(trick.split())) % 4
    s = position(
        Rules(players=4, partner_relief=relief),
        {seat: hand},
        trump="O",
        trick=trick,
        leader=leader,
    )
    assert legal(s) == expected


def test_partner_relief_keeps_following_suit() -> None:
    # Partner seat 0 wins with 1C; seat 2 holds copas: any copa, but no discard or trump.
    s = position(
        Rules(players=4, partner_relief=True),
        {2: "2C 12C 1O 7E"},
        trump="O",
        trick="1C 4C",
    )
    assert legal(s) == {"2C", "12C"}


def test_partner_relief_has_no_effect_in_three_players() -> None:
    s = position(Rules(players=3, partner_relief=True), {2: "12C 5C"}, trump="O", trick="10C 4C")
    assert legal(s) == {"12C"}


# -- 2p: stock phase and final phase ---------------------------------------------------------

STOCK = "5E 5B 6E 6B 4O"  # turned card 4O: trump oros


@pytest.mark.parametrize(
    "phase_rules,led,hand,expected",
    [
        ("free", "1O", "2O 5C", {"2O", "5C"}),
        ("free", "4C", "5C 2O 1E", {"5C", "2O", "1E"}),
        ("trump_lead", "1O", "2O 3O 5C", {"2O", "3O"}),  # any trump, no need to beat
        ("trump_lead", "10O", "2O 3O 5C", {"2O", "3O"}),
        ("trump_lead", "1O", "5C 1E", {"5C", "1E"}),  # no trumps: any card
        ("trump_lead", "4C", "5C 2O 1E", {"5C", "2O", "1E"}),  # non-trump led: any card
        ("strict", "4C", "5C 2C 2O", {"5C"}),
        ("strict", "4C", "2O 1E", {"2O"}),
        ("strict", "10O", "2O 3O 5C", {"3O"}),
    ],
)
def test_two_player_stock_phase(phase_rules: str, led: str, hand: str, expected: set[str]) -> None:
    rules = Rules(players=2, stock_phase_rules=phase_rules)
    s = position(rules, {1: hand}, trick=led, leader=0, stock=STOCK)
    assert legal(s) == expected


@pytest.mark.parametrize("phase_rules", ["free", "trump_lead", "strict"])
@pytest.mark.parametrize(
    "led,hand,expected",
    [
        ("4C", "5C 2C 2O", {"5C"}),
        ("4C", "2C 3O", {"2C"}),
        ("4C", "2O 1E", {"2O"}),
        ("10O", "2O 3O 5C", {"3O"}),
        ("1O", "2O 3O 5C", {"2O", "3O"}),
        ("4C", "1E 2B", {"1E", "2B"}),
    ],
)
def test_two_player_final_phase_is_strict(
    phase_rules: str, led: str, hand: str, expected: set[str]
) -> None:
    rules = Rules(players=2, stock_phase_rules=phase_rules)
    s = position(rules, {1: hand}, trump="O", trick=led, leader=0)
    assert s.stock == () and legal(s) == expected


def test_stock_phase_is_fixed_by_the_stock_when_the_trick_was_led() -> None:
    # Same cards, with and without stock: the rule depends only on the phase.
    with_stock = position(Rules(players=2), {1: "5C 2O"}, trick="4C", stock="5E 4O")
    without = position(Rules(players=2), {1: "5C 2O"}, trump="O", trick="4C")
    assert legal(with_stock) == {"5C", "2O"} and legal(without) == {"5C"}
