"""RULES.md §8: exchanging the turned trump card (2 players), with every exchange option."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Rules, card_text, parse_card, view
from engine.events import TrumpExchanged

from .positions import act, legal, position, rejects, texts

OPP = "1C 2C 3C 4C 5C 6C 7C 10C"


def two(**options: Any) -> Rules:
    return Rules(players=2, **options)


def window(rules: Rules, hand: str, turned: str, **kw: Any) -> Any:
    """Seat 0 leads trick 10 (it won trick 9); the stock is 1B 2B 3B 4B 5B and the turned card."""
    return position(rules, {0: hand, 1: OPP}, stock="1B 2B 3B 4B 5B " + turned, **kw)


def decl(state: Any, seat: int | None = None) -> set[str]:
    return {a for a in legal(state, seat) if not a[0].isdigit()}


SEVEN_HAND = "7O 1E 2E 3E 4E 5E 6E 7E"
TWO_HAND = "2O 1E 3E 4E 5E 6E 7E 10E"


@pytest.mark.parametrize(
    "turned,allowed",
    [
        ("1O", True),
        ("3O", True),
        ("12O", True),
        ("11O", True),
        ("10O", True),
        ("6O", False),
        ("5O", False),
        ("4O", False),
        ("2O", False),
    ],
)
def test_swap_seven_for_a_counting_card(turned: str, allowed: bool) -> None:
    s = window(two(), SEVEN_HAND, turned)
    assert s.trick_no == 10
    assert decl(s) == ({"exchange"} if allowed else set())


def test_swap_seven_off() -> None:
    s = window(two(swap_seven=False), SEVEN_HAND, "1O")
    assert decl(s) == set()
    assert rejects(s, "exchange") == "exchange_not_allowed"


@pytest.mark.parametrize(
    "turned,on,allowed",
    [
        ("4O", True, True),
        ("5O", True, True),
        ("6O", True, True),
        ("7O", True, True),
        ("4O", False, False),
        ("7O", False, False),
        ("1O", True, False),
        ("10O", True, False),
    ],
)
def test_swap_two_for_low(turned: str, on: bool, allowed: bool) -> None:
    s = window(two(swap_two_for_low=on), TWO_HAND, turned)
    assert decl(s) == ({"exchange"} if allowed else set())


@pytest.mark.parametrize("requires,expected", [(True, set()), (False, {"exchange"})])
def test_swap_requires_trick_won(requires: bool, expected: set[str]) -> None:
    # The opening lead of the hand: the mano holds 7O, the turned card is 1O.
    stock = "1B 2B 3B 4B 5B 6B 7B 10B 11B 12B 11C 12C 10O 2O 3O 4O 5O 6O 11O 12O 10E 11E 12E 1O"
    s = position(two(swap_requires_trick_won=requires), {0: SEVEN_HAND, 1: OPP}, stock=stock)
    assert s.trick_no == 1 and len(s.stock) == 24
    assert decl(s) == expected
    assert legal(s, 1) == set()


def test_the_exchange() -> None:
    s = window(two(), SEVEN_HAND, "1O")
    turn_id = s.turn_id
    s, ev = act(s, "exchange")
    assert ev == [TrumpExchanged(0, parse_card("7O"), parse_card("1O"))]
    assert "1O" in texts(s.hands[0]) and "7O" not in texts(s.hands[0])
    assert card_text(s.stock[-1]) == "7O" and len(s.stock) == 6
    other = view(s, 1)
    assert card_text(other.turned_card) == "7O"
    assert texts(other.public_cards[0]) == {"1O"}  # the card taken stays shown
    assert s.turn == 0 and s.turn_id == turn_id  # not a turn: the deadline stays
    assert decl(s) == set()  # once per lead turn
    assert rejects(s, "exchange") == "exchange_not_allowed"


def test_exchange_does_not_use_the_cante_allowance() -> None:
    s = window(two(), "7O 12C 11C 3E 4E 5E 6E 7E", "1O")
    assert decl(s) == {"exchange", "sing C"}
    s, _ = act(s, "exchange")
    assert decl(s) == {"sing C"}
    s, _ = act(s, "sing C")
    assert decl(s) == set()


def test_only_the_leader_exchanges() -> None:
    s = position(
        two(),
        {0: "1E 2E 3E 4E 5E 6E 7E 10E", 1: "7O 1C 2C 3C 4C 5C 6C 7C"},
        stock="1B 2B 3B 4B 5B 1O",
    )
    assert legal(s, 1) == set()
    assert rejects(s, "1:exchange") == "exchange_not_allowed"
    s, _ = act(s, "1E")
    assert rejects(s, "1:exchange") == "exchange_not_allowed"  # nor a follower
    assert "exchange" not in legal(s)


def test_no_exchange_once_the_stock_is_empty() -> None:
    s = position(two(), {0: "7O 1E", 1: "2C 3C"}, trump="O", trump_card="1O")
    assert decl(s) == set() and rejects(s, "exchange") == "exchange_not_allowed"


def test_exchange_in_the_last_stock_window() -> None:
    s = position(two(), {0: "7O 1E", 1: "2C 3C"}, stock="5B 3O")
    assert decl(s) == {"exchange"}


@pytest.mark.parametrize("held", [False, True])
def test_a_seven_just_drawn_may_be_exchanged(held: bool) -> None:
    # Seat 0 wins the trick and draws 7O; the exchange is open at once (§14.13), and
    # cante_requires_held_at_win does not apply to it.
    s = position(
        two(cante_requires_held_at_win=held), {0: "1E 2B", 1: "2E 3B"}, stock="7O 5B 6B 10B 4B 12O"
    )
    s, _ = act(s, "1E", "2E")
    assert s.leader == 0 and "7O" in texts(s.hands[0])
    assert decl(s) == {"exchange"}


@pytest.mark.parametrize("held,expected", [(False, {"sing O"}), (True, set())])
def test_the_card_taken_may_complete_a_pair(held: bool, expected: set[str]) -> None:
    s = window(two(cante_requires_held_at_win=held), "7O 11O 3E 4E 5E 6E 7E 10E", "12O")
    s, _ = act(s, "exchange")
    assert decl(s) == expected


def test_exchanging_again_in_a_later_window() -> None:
    # §14.26: the 7 given for the 1, later the 2 for that 7 (swap_two_for_low).
    s = window(two(swap_two_for_low=True), "7O 2O 1E 3E 4E 5E 6E 7E", "1O")
    s, _ = act(s, "exchange")
    assert card_text(s.stock[-1]) == "7O"
    assert decl(s) == set()  # once per lead turn, though 2O for 7O would fit
    s, _ = act(s, "1E", "10C")  # seat 0 wins trick 10
    assert s.leader == 0 and decl(s) == {"exchange"}
    s, ev = act(s, "exchange")
    assert ev == [TrumpExchanged(0, parse_card("2O"), parse_card("7O"))]


def test_the_card_given_goes_to_the_loser_of_the_final_draw() -> None:
    s = position(two(), {0: "7O 1E", 1: "2E 3C"}, stock="5B 1O")
    s, _ = act(s, "exchange", "1E", "2E")
    assert s.stock == () and "7O" in texts(s.hands[1])
    assert texts(view(s, 0).public_cards[1]) == {"7O"}
    assert texts(view(s, 1).public_cards[0]) == {"1O"}


@pytest.mark.parametrize("players", [3, 4])
def test_no_exchange_in_three_or_four_players(players: int) -> None:
    s = position(Rules(players=players), {0: "7O 1E", 1: "2E 3E"}, trump="O", trump_card="1O")
    assert decl(s) == set() and rejects(s, "exchange") == "exchange_not_allowed"
