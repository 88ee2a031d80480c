"""RULES.md §6: cantes (las veinte y las cuarenta) with every cante option."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Rules, view
from engine.events import CanteSung

from .positions import act, events_of, legal, position, rejects, texts


def decl(state: Any, seat: int | None = None) -> set[str]:
    """The declarations among the legal actions."""
    return {a for a in legal(state, seat) if not a[0].isdigit()}


def four(**options: Any) -> Rules:
    return Rules(players=4, **options)


def two(**options: Any) -> Rules:
    return Rules(players=2, **options)


# -- points and the forty-first rule ---------------------------------------------------------


@pytest.mark.parametrize(
    "fbt,expected",
    [("off", {"sing O", "sing C"}), ("hold", {"sing O"}), ("strict", {"sing O"})],
)
def test_forty_before_twenty_with_both_pairs(fbt: str, expected: set[str]) -> None:
    s = position(four(forty_before_twenty=fbt), {0: "12O 11O 12C 11C 1E"}, trump="O")
    assert s.trick_no == 6 and decl(s) == expected


def test_forty_is_forty_and_twenty_is_twenty() -> None:
    s = position(four(cantes_per_trick="unlimited"), {0: "12O 11O 12C 11C 1E"}, trump="O")
    s, ev = act(s, "sing O", "sing C")
    assert events_of(ev, CanteSung) == [CanteSung(0, 0, 40, 6), CanteSung(0, 1, 20, 6)]
    assert s.cantes == ((0, 0, 40, 6), (0, 1, 20, 6))


@pytest.mark.parametrize(
    "fbt,expected",
    [("strict", {"sing E"}), ("hold", {"sing O"}), ("off", {"sing O", "sing E"})],
)
def test_forty_after_a_twenty(fbt: str, expected: set[str]) -> None:
    # Seat 0 sang 20 in copas earlier in this hand and now holds both trumps and 12E 11E.
    s = position(
        four(forty_before_twenty=fbt), {0: "12O 11O 12E 11E 4B"}, trump="O", cantes=[(0, "C")]
    )
    assert decl(s) == expected


def test_strict_bars_the_forty_for_good() -> None:
    s = position(four(), {0: "12O 11O 4B"}, trump="O", cantes=[(0, "C")])
    assert decl(s) == set()
    assert rejects(s, "sing O") == "cante_not_allowed"


def test_a_partners_pending_forty_never_blocks_a_twenty() -> None:
    s = position(
        four(cante_singers="side"), {0: "12C 11C 4B", 2: "12O 11O 5B"}, trump="O", leader=0
    )
    assert decl(s, 0) == {"sing C"}
    assert decl(s, 2) == {"sing O"}


# -- §6's worked example (2p, trump O) -------------------------------------------------------

P_HAND = "12O 12C 11C 12E 11E 4B 5B 6B"
OPP_HAND = "1B 3B 2C 4C 5C 6C 7C 2E"
# From the top; P draws 7E after trick 4, 11O after trick 5, 2B after trick 6, 7B after trick 7.
EX_STOCK = "10E 7E 6E 11O 5E 2B 7B 10B 1C 3C 10C 1O 2O 3O 5O 6O 7O 4O"


def _example_at_trick_8(**options: Any) -> Any:
    s = position(two(**options), {0: P_HAND, 1: OPP_HAND}, stock=EX_STOCK, leader=0)
    assert s.trick_no == 4 and s.trump == 0
    # Window of trick 4: P sings 20 in copas (not holding both trumps, no 40 pending).
    assert decl(s) == {"sing C", "sing E"}
    s, ev = act(s, "sing C")
    assert events_of(ev, CanteSung) == [CanteSung(0, 1, 20, 4)]
    if s.rules.cantes_per_trick == "one":
        assert decl(s) == set()  # one cante per trick won
    s, _ = act(s, "4B", "1B")  # trick 4 to the opponent
    s, _ = act(s, "2C", "5B")  # trick 5 to the opponent; P draws 11O
    assert "11O" in texts(s.hands[0])
    s, _ = act(s, "4C", "6B")  # trick 6 to the opponent
    s, _ = act(s, "5C", "11C")  # trick 7: P wins
    assert s.leader == 0 and s.trick_no == 8
    return s


def test_section_6_example_strict() -> None:
    s = _example_at_trick_8()
    # strict bars the 40 (P sang a 20), so it is not pending and does not block the 20 in E.
    assert decl(s) == {"sing E"}
    assert rejects(s, "sing O") == "cante_not_allowed"
    s, ev = act(s, "sing E")
    assert events_of(ev, CanteSung) == [CanteSung(0, 2, 20, 8)]


def test_section_6_example_hold() -> None:
    s = _example_at_trick_8(forty_before_twenty="hold")
    assert decl(s) == {"sing O"}  # the 40 is pending: only the 40
    assert rejects(s, "sing E") == "cante_not_allowed"
    s, ev = act(s, "sing O")
    assert events_of(ev, CanteSung) == [CanteSung(0, 0, 40, 8)]
    assert decl(s) == set()
    # P wins trick 8 and sings the 20 in E in the window of trick 9.
    s, _ = act(s, "12C", "2E")
    assert s.leader == 0 and decl(s) == {"sing E"}


def test_section_6_example_hold_unlimited() -> None:
    s = _example_at_trick_8(forty_before_twenty="hold", cantes_per_trick="unlimited")
    assert decl(s) == {"sing O"}
    s, _ = act(s, "sing O")
    assert decl(s) == {"sing E"}  # right after the 40
    s, ev = act(s, "sing E")
    assert [c.points for c in events_of(ev, CanteSung)] == [20]


# -- who sings (condition 1) and cante_singers -----------------------------------------------

HANDS_4P = {0: "12C 11C 4B", 1: "12E 11E 5B", 2: "12B 11B 6B", 3: "12O 11O 7B"}


def test_only_the_trick_winner_sings_by_default() -> None:
    s = position(four(), HANDS_4P, trump="O", leader=0)
    assert decl(s, 0) == {"sing C"}
    assert legal(s, 1) == legal(s, 2) == legal(s, 3) == set()
    assert rejects(s, "2:sing B") == "cante_not_allowed"
    assert rejects(s, "1:sing E") == "cante_not_allowed"


def test_side_lets_the_partner_sing_not_the_opponents() -> None:
    s = position(four(cante_singers="side"), HANDS_4P, trump="O", leader=0)
    assert decl(s, 0) == {"sing C"} and legal(s, 2) == {"sing B"}
    assert legal(s, 1) == legal(s, 3) == set()
    assert rejects(s, "3:sing O") == "cante_not_allowed"
    # The partner sings; the allowance (one) is the side's, so the leader no longer may.
    turn_id = s.turn_id
    s2, ev = act(s, "2:sing B")
    assert events_of(ev, CanteSung) == [CanteSung(2, 3, 20, 8)]
    assert s2.turn == 0 and s2.turn_id == turn_id  # the leader's deadline does not move
    assert decl(s2, 0) == set() and legal(s2, 2) == set()
    # The leader's lead closes the window for the partner too.
    s3, _ = act(s, "4B")
    assert legal(s3, 2) == set()
    assert rejects(s3, "2:sing B") == "cante_not_allowed"


def test_side_with_unlimited_both_partners_sing() -> None:
    s = position(
        four(cante_singers="side", cantes_per_trick="unlimited"), HANDS_4P, trump="O", leader=0
    )
    s, _ = act(s, "2:sing B", "0:sing C")
    assert [c[:2] for c in s.cantes] == [(2, 3), (0, 1)]


# -- each suit once, allowance ---------------------------------------------------------------


def test_a_suit_is_sung_once_per_hand() -> None:
    s = position(four(), {0: "12C 11C 12E 11E 1O"}, trump="O", cantes=[(0, "C")])
    assert decl(s) == {"sing E"}
    assert rejects(s, "sing C") == "cante_not_allowed"


@pytest.mark.parametrize("per_trick,expected", [("one", set()), ("unlimited", {"sing E"})])
def test_cantes_per_trick(per_trick: str, expected: set[str]) -> None:
    s = position(four(cantes_per_trick=per_trick), {0: "12C 11C 12E 11E 1O"}, trump="O")
    assert decl(s) == {"sing C", "sing E"}
    s, _ = act(s, "sing C")
    assert decl(s) == expected


def test_allowance_is_per_window() -> None:
    s = position(four(), {0: "12C 11C 12E 11E 1O", 1: "2O 3B", 2: "4B 5B", 3: "6B 7B"}, trump="O")
    s, _ = act(s, "sing C", "1O", "2O", "4B", "6B")
    assert s.leader == 0 and decl(s) == {"sing E"}


def test_the_pair_must_be_held() -> None:
    s = position(four(), {0: "12C 11E 1O 2B"}, trump="O")
    assert decl(s) == set() and rejects(s, "sing C") == "cante_not_allowed"


# -- cante_requires_held_at_win (condition 5) -----------------------------------------------


def _drawn_pair(**options: Any) -> Any:
    # 2p: seat 0 holds 12C and wins a trick; it draws 11C from the stock.
    s = position(two(**options), {0: "12C 1E 4B", 1: "2E 2B 6B"}, stock="11C 7B 3B 2O 5O 4O")
    s, _ = act(s, "1E", "2E")
    assert s.leader == 0 and "11C" in texts(s.hands[0])
    return s


@pytest.mark.parametrize("held,expected", [(False, {"sing C"}), (True, set())])
def test_cante_requires_held_at_win(held: bool, expected: set[str]) -> None:
    assert decl(_drawn_pair(cante_requires_held_at_win=held)) == expected


def test_held_at_win_pair_qualifies_in_a_later_window() -> None:
    s = _drawn_pair(cante_requires_held_at_win=True)
    s, _ = act(s, "4B", "2B")  # seat 0 wins again, now holding 12C 11C since the trick ended
    assert s.leader == 0 and decl(s) == {"sing C"}


@pytest.mark.parametrize(
    "fbt,held,expected",
    [
        ("hold", True, set()),  # the 40 cannot be sung (11O just drawn) but still blocks
        ("strict", True, set()),
        ("off", True, {"sing C"}),
        ("hold", False, {"sing O"}),
    ],
)
def test_a_pending_forty_that_cannot_be_sung_blocks_the_twenty(
    fbt: str, held: bool, expected: set[str]
) -> None:
    s = position(
        two(forty_before_twenty=fbt, cante_requires_held_at_win=held),
        {0: "12O 11O 12C 11C 4B 5B 6B 7B", 1: "1E 2E 3E 4E 5E 6E 7E 10E"},
        stock="10B 11B 12B 1B 3C 2C 3B 1O",
        held_at_win={0: "12O 12C 11C 4B 5B 6B 7B"},
    )
    assert decl(s) == expected


# -- cantes_only_with_stock (condition 6, 2p) -----------------------------------------------


@pytest.mark.parametrize("only,expected", [(True, set()), (False, {"sing C"})])
def test_cantes_only_with_stock_after_the_stock(only: bool, expected: set[str]) -> None:
    s = position(two(cantes_only_with_stock=only), {0: "12C 11C 1E", 1: "2E 3E 4E"}, trump="O")
    assert s.stock == () and s.trick_no == 18
    assert decl(s) == expected


def test_cantes_only_with_stock_while_stock_lasts() -> None:
    s = position(two(cantes_only_with_stock=True), {0: "12C 11C 1E", 1: "2E 3E 4E"}, stock="5B 4O")
    assert decl(s) == {"sing C"}


@pytest.mark.parametrize("only,expected", [(True, set()), (False, {"sing C"})])
def test_winner_of_the_last_stock_trick(only: bool, expected: set[str]) -> None:
    s = position(two(cantes_only_with_stock=only), {0: "12C 11C 1E", 1: "2E 3E 4E"}, stock="5B 4O")
    s, _ = act(s, "1E", "2E")
    assert s.stock == () and s.leader == 0
    assert decl(s) == expected


# -- the window -----------------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3, 4])
def test_no_cante_in_the_window_of_trick_one(players: int) -> None:
    hands = {0: "12C 11C 1E"}
    stock = "5B 4O" if players == 2 else ""
    s = position(Rules(players=players), hands, trump="O", stock=stock, trick_no=1)
    assert decl(s) == set()
    assert rejects(s, "sing C") == "cante_not_allowed"


@pytest.mark.parametrize("players,trick_no", [(2, 19), (3, 12), (4, 9)])
def test_last_window_for_a_cante_is_trick_n_minus_1(players: int, trick_no: int) -> None:
    s = position(Rules(players=players), {0: "12C 11C"}, trump="O")
    assert s.trick_no == trick_no and decl(s) == {"sing C"}


def test_the_lead_closes_the_window() -> None:
    s = position(four(), {0: "12C 11C 1E", 1: "2E 3B 4B"}, trump="O")
    s, _ = act(s, "1E")
    assert rejects(s, "0:sing C") == "cante_not_allowed"
    assert rejects(s, "1:sing C") == "cante_not_allowed"


def test_two_player_window_opens_after_the_draw() -> None:
    # Seat 0 wins with 11C in hand and draws 12C: it may sing at once (default options).
    s = position(two(), {0: "11C 1E", 1: "2E 5B"}, stock="12C 7B 2B 4O")
    s, _ = act(s, "1E", "2E")
    assert decl(s) == {"sing C"}


def test_sung_cards_are_public_until_played() -> None:
    s = position(four(), {0: "12C 11C 1E", 1: "2C 3B 4B"}, trump="O")
    s, _ = act(s, "sing C")
    assert texts(view(s, 1).public_cards[0]) == {"12C", "11C"}
    assert texts(view(s, None).public_cards[0]) == {"12C", "11C"}
    s, _ = act(s, "12C")
    assert texts(view(s, 3).public_cards[0]) == {"11C"}


def test_three_player_cante() -> None:
    s = position(Rules(players=3), {1: "12E 11E 1C", 2: "4C 5C 6C"}, trump="O", leader=1)
    assert decl(s) == {"sing E"} and legal(s, 2) == set()
    s, ev = act(s, "sing E")
    assert events_of(ev, CanteSung) == [CanteSung(1, 2, 20, 11)]
