"""RULES.md §1-§4: cards, text forms, dealing and layouts, the flow of a hand, trick winner."""

from __future__ import annotations

import pytest

import engine
from engine import Rules, new_match, view
from engine.cards import POINTS, STRENGTH, card_of
from engine.events import CardDrawn, HandDealt, TrickTaken

from .positions import act, cards, deck_for, events_of, legal, play_out, position, texts

# -- §2 cards ----------------------------------------------------------------------------------


def test_strength_order_in_every_suit() -> None:
    for suit in "OCEB":
        order = [engine.parse_card(f"{r}{suit}") for r in (1, 3, 12, 11, 10, 7, 6, 5, 4, 2)]
        assert [STRENGTH[c] for c in order] == list(range(9, -1, -1))


def test_card_points_and_pack_total() -> None:
    pts = {r: POINTS[engine.parse_card(f"{r}C")] for r in (1, 2, 3, 4, 5, 6, 7, 10, 11, 12)}
    assert pts == {1: 11, 3: 10, 12: 4, 11: 3, 10: 2, 7: 0, 6: 0, 5: 0, 4: 0, 2: 0}
    for s in range(4):
        assert sum(POINTS[card_of(s, r)] for r in (1, 2, 3, 4, 5, 6, 7, 10, 11, 12)) == 30
    assert sum(POINTS) == 120


def test_three_player_pack_drops_two_of_oros_only() -> None:
    s = new_match(Rules(players=3), 1)
    held = 0
    for h in s.hands:
        assert h.bit_count() == 13
        held |= h
    assert held.bit_count() == 39 and "2O" not in texts(held)
    assert sum(POINTS[c] for c in engine.cards_of(held)) == 120


# -- text forms ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["3E", "12O", "1C", "10B", "11E", "2O", "7B"])
def test_card_text_round_trips(text: str) -> None:
    assert engine.card_text(engine.parse_card(text)) == text


def test_every_action_text_round_trips() -> None:
    for a in range(49):
        assert engine.parse_action(engine.action_text(a)) == a
    assert engine.action_text(engine.SING + 2) == "sing E"
    assert engine.parse_action("tute 12") == engine.TUTE_12
    assert engine.parse_action("tute 11") == engine.TUTE_11
    assert engine.parse_action("exchange") == engine.EXCHANGE
    assert engine.parse_action("sing oros") == engine.SING + 0
    assert engine.mask_text(engine.parse_cards("12C 1C")) == "1C 12C"


@pytest.mark.parametrize("bad", ["8O", "9C", "13E", "0B", "1X", "", "sing X", "tute 10", "12"])
def test_bad_text_is_invalid_input(bad: str) -> None:
    with pytest.raises(engine.InvalidInput):
        engine.parse_action(bad)


# -- §3 dealing and layouts ------------------------------------------------------------------

FOUR = {
    0: "1O 2O 3O 4O 5O 6O 7O 10O 11O 12O",
    1: "1C 2C 3C 4C 5C 6C 7C 10C 11C 12C",
    2: "1E 2E 3E 4E 5E 6E 7E 10E 11E 12E",
    3: "1B 2B 3B 4B 5B 6B 7B 10B 11B 12B",
}


@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_four_player_deal_goes_to_the_right_from_the_dealer(dealer: int) -> None:
    rules = Rules(players=4, first_dealer=dealer)
    deck = deck_for(rules, dealer, FOUR)
    s = new_match(rules, 0, decks=[deck])
    assert engine.card_text(deck[0]) == FOUR[(dealer + 1) % 4].split()[0]
    assert s.hands == tuple(engine.parse_cards(FOUR[i]) for i in range(4))
    # The trump card is d[39], the dealer's last card: shown to all, held by the dealer.
    assert s.trump_card == deck[39] and s.trump == dealer
    assert s.dealer == dealer and s.leader == s.turn == (dealer + 1) % 4 and s.trick_no == 1
    other = (dealer + 2) % 4
    assert view(s, other).public_cards[dealer] == 1 << deck[39]
    shown = tuple(1 << deck[39] if i == dealer else 0 for i in range(4))
    assert view(s, None).public_cards == shown


def test_three_player_deal_trump_is_dealers_thirteenth_card() -> None:
    rules = Rules(players=3, first_dealer=1)
    hands = {
        0: "3O 12O 11O 10O 7O 6O 5O 4O 3C 12C 11C 10C 7C",
        1: "6C 5C 4C 2C 3E 12E 11E 10E 7E 6E 5E 4E 2E",
        2: "1O 1C 1E 2B 3B 4B 5B 6B 7B 10B 11B 12B 1B",
    }
    # dealer 1: d[0] to seat 2, ...; the dealer's 13th card d[38] is 2E, so trump is espadas.
    deck = deck_for(rules, 1, hands)
    s = new_match(rules, 0, decks=[deck])
    assert len(deck) == 39 and engine.card_text(s.trump_card) == "2E" and s.trump == 2
    assert s.leader == 2 and s.stock == ()


def test_three_player_deck_with_two_of_oros_is_rejected() -> None:
    with pytest.raises(engine.InvalidInput) as e:
        new_match(Rules(players=3), 0, decks=[list(range(40))])
    assert e.value.reason == "bad_deck"


@pytest.mark.parametrize("size,stock_len", [(8, 24), (6, 28)])
def test_two_player_deal_turned_card_and_stock(size: int, stock_len: int) -> None:
    rules = Rules(players=2, hand_size_2p=size, first_dealer=1)
    deck = list(range(40))
    s = new_match(rules, 0, decks=[deck])
    # dealer 1: d[even] to seat 0 (mano), d[odd] to seat 1.
    assert s.hands[0] == sum(1 << c for c in deck[0 : 2 * size : 2])
    assert s.hands[1] == sum(1 << c for c in deck[1 : 2 * size : 2])
    assert s.trump_card == deck[2 * size] and s.trump == deck[2 * size] // 10
    assert len(s.stock) == stock_len == 40 - 2 * size
    assert s.stock == (*deck[2 * size + 1 :], deck[2 * size])
    assert view(s, None).turned_card == deck[2 * size] and s.leader == 0


def test_two_player_draw_winner_first_then_loser() -> None:
    # trump O (turned 4O); seat 0 leads 1C, seat 1 plays 4C: seat 0 wins, draws 5E, seat 1 5B.
    s = position(Rules(players=2), {0: "1C 2E", 1: "4C 2B"}, stock="5E 5B 6E 6B 4O", leader=0)
    s, ev = act(s, "1C", "4C")
    draws = events_of(ev, CardDrawn)
    assert [(d.seat, engine.card_text(d.card), d.public) for d in draws] == [
        (0, "5E", False),
        (1, "5B", False),
    ]
    assert texts(s.hands[0]) == {"2E", "5E"} and texts(s.hands[1]) == {"2B", "5B"}
    assert s.stock == cards("6E 6B 4O") and s.leader == 0
    # The other seat does not see the drawn card.
    assert engine.redact(draws[0], 1).card is None  # type: ignore[union-attr]


def test_final_draw_loser_takes_the_turned_card_which_becomes_public() -> None:
    # Last two stock cards: 5E face down, turned 4O. Seat 1 wins the trick (trumps with 2O).
    s = position(Rules(players=2), {0: "1C 2E", 1: "2O 2B"}, stock="5E 4O", leader=0)
    s, ev = act(s, "1C", "2O")
    draws = events_of(ev, CardDrawn)
    assert [(d.seat, engine.card_text(d.card), d.public) for d in draws] == [
        (1, "5E", False),
        (0, "4O", True),
    ]
    assert s.stock == () and "4O" in texts(s.hands[0])
    assert texts(view(s, 1).public_cards[0]) == {"4O"}
    assert view(s, 1).turned_card == -1
    # From now on the final phase: strict play (§5).
    s, _ = act(s, "2B")
    assert legal(s) == {"4O"}  # void in bastos, holding a trump: must trump


@pytest.mark.parametrize("size,stock_tricks", [(8, 12), (6, 14)])
def test_two_player_stock_lasts_for_the_first_tricks(size: int, stock_tricks: int) -> None:
    rules = Rules(players=2, hand_size_2p=size, first_dealer=0)
    deck = list(range(40))
    s = new_match(rules, 0, decks=[deck])
    turned = deck[2 * size]
    tricks = 0
    while s.stock:
        if not s.trick:
            assert [h.bit_count() for h in s.hands] == [size, size]
        s, ev = play_out(s, until_hand_ends=False)
        if events_of(ev, TrickTaken):
            tricks += 1
            last = events_of(ev, TrickTaken)[0]
    assert tricks == stock_tricks and s.trick_no == stock_tricks + 1
    loser = 1 - last.winner
    assert s.hands[loser] >> turned & 1
    assert view(s, last.winner).public_cards[loser] == 1 << turned
    assert [h.bit_count() for h in s.hands] == [size, size]  # played from hand from now on


def test_given_decks_deal_the_first_hands_in_order() -> None:
    rules = Rules(players=4, first_dealer=0, scoring="hands", target_match_points=7)
    d1, d2 = list(range(40)), list(range(39, -1, -1))
    s = new_match(rules, 0, decks=[d1, d2])
    s, ev = play_out(s)
    dealt = events_of(ev, HandDealt)[0]
    assert dealt.hand_no == 2 and dealt.dealer == 1 and s.leader == 2
    # dealer 1: d2[i] goes to seat (2 + i) % 4; the trump card d2[39] = 1O is seat 1's.
    assert s.hands[2] == sum(1 << c for c in d2[0::4])
    assert s.hands[1] == sum(1 << c for c in d2[3::4])
    assert s.trump_card == 0 and s.trump == 0


# -- §4 flow and trick winner --------------------------------------------------------------------

WINNER_CASES = [
    # trump, cards in play order from seat 0, winning seat
    ("O", "4C 1C 2E 3C", 1),  # no trump: highest of the suit led
    ("O", "4C 1C 2O 3C", 2),  # the only trump wins
    ("O", "4C 2O 1O 3C", 2),  # highest trump
    ("O", "2C 1E 3E 4B", 0),  # other non-trump suits never win
    ("E", "12C 11C 10C 3C", 3),  # 3 beats 12, 11, 10
    ("B", "7B 6B 2B 5B", 0),  # trump led, highest trump
    ("B", "10E 11E 12E 4E", 2),
]


@pytest.mark.parametrize("trump,played,winner", WINNER_CASES)
def test_trick_winner(trump: str, played: str, winner: int) -> None:
    hands = {i: c for i, c in enumerate(played.split())}
    s = position(Rules(players=4), hands, trump=trump, leader=0, trick_no=10)
    s, ev = act(s, *played.split())
    taken = events_of(ev, TrickTaken)[0]
    assert taken.winner == winner
    assert taken.points == sum(POINTS[c] for c in cards(played))


def test_three_player_trick_winner_and_next_leader() -> None:
    s = position(Rules(players=3), {1: "4C 5O", 2: "2E 1B", 0: "3C 6B"}, trump="E", leader=1)
    s, ev = act(s, "4C", "2E", "3C")  # seat 2 void in copas trumps with 2E
    assert events_of(ev, TrickTaken)[0].winner == 2
    assert s.leader == s.turn == 2 and s.trick_no == 13


def test_winner_leads_next_trick_and_declarations_only_from_trick_two() -> None:
    # Trick 1 of a 4p hand: the mano holds 12C 11C but cannot sing before a trick is won.
    rules = Rules(players=4, first_dealer=3)
    hands = dict(FOUR)
    hands[0] = "1O 2O 3O 4O 5O 6O 7O 10O 11C 12C"
    hands[1] = "1C 2C 3C 4C 5C 6C 7C 10C 11O 12O"
    s = new_match(rules, 0, decks=[deck_for(rules, 3, hands)])
    assert s.trick_no == 1 and legal(s, 0) == texts(engine.parse_cards(hands[0]))
    # trump is bastos (the dealer's last card 12B); seat 0 leads 1O, seat 3 must trump.
    assert legal(s._replace(trick=cards("1O"), turn=1)) == {"11O", "12O"}
    s, ev = act(s, "1O", "11O", "1E")
    assert legal(s) == {"1B", "2B", "3B", "4B", "5B", "6B", "7B", "10B", "11B", "12B"}
    s, ev = act(s, "2B")
    assert events_of(ev, TrickTaken)[0].winner == 3 and s.leader == 3 and s.trick_no == 2
    assert "sing B" in legal(s, 3)


def test_next_hand_dealer_rotates_to_the_right_two_player_alternates() -> None:
    rules = Rules(players=2, first_dealer=1, scoring="hands", target_match_points=7)
    s = new_match(rules, 5)
    s, ev = play_out(s)
    dealt = events_of(ev, HandDealt)
    assert len(dealt) == 1 and dealt[0].dealer == 0 and s.dealer == 0 and s.leader == 1
    s, ev = play_out(s)
    assert s.dealer == 1 and s.hand_no == 3 and s.leader == 0
