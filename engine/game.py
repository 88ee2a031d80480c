"""The rules of Tute as pure functions: deal, legal actions, apply, score.

The flow of a hand (RULES.md §4) reads top to bottom here:

1. :func:`new_match` deals the first hand (:func:`_deal`).
2. On a **lead turn** (empty trick) the leader may first declare (exchange §8, cantes §6,
   tute §7: :func:`_can_exchange`, :func:`_can_sing`, :func:`_can_tute`), then leads any card.
   With ``cante_singers = side`` the leader's partner may also sing in that window.
3. On a **follow turn** the cards allowed are :func:`_follow_cards` (el arrastre, §5).
4. The last card of a trick calls :func:`_finish_trick`: the winner takes it, in 2p both draw.
5. When the hands are empty (or a tute was declared) :func:`_end_hand` scores the hand (§9),
   the match (§10) (:mod:`engine.score`), and deals the next hand or ends the match.

:func:`apply` is :func:`check` (which raises the rule an action breaks) then
:func:`apply_trusted` (which applies an action known to be legal, checking nothing): a loop
that takes its actions from :func:`legal_actions` calls :func:`apply_trusted` and decides
legality once.

Every function takes a :class:`~engine.state.State` and returns a new one; nothing is mutated.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from hashlib import blake2b
from typing import Final

from . import actions as A
from ._fast import (
    ONE_CARD,
    played,
    trick_pairs,
    with_deal,
    with_item,
    with_play,
    with_trick_done,
)
from .cards import (
    ALL_CARDS,
    BIT,
    NUM_CARDS,
    POINTS,
    RANK_OF,
    STRENGTH,
    STRONGER,
    SUIT_MASK,
    SUIT_NAMES,
    SUIT_OF,
    Card,
    Mask,
    card_of,
    cards_of,
    trick_winner,
)
from .errors import IllegalAction, InvalidInput
from .events import (
    CanteSung,
    CardDrawn,
    Event,
    GameEnded,
    HandDealt,
    HandEnded,
    MatchEnded,
    PlayerForfeited,
    Standing,
    TrickTaken,
    TrumpExchanged,
    TurnTimedOut,
    TuteDeclared,
)
from .rules import (
    RANDOM_DEALER,
    CannotOvertrump,
    CanteSingers,
    CantesPerTrick,
    FortyBeforeTwenty,
    Rules,
    StockPhaseRules,
)
from .score import FORTY, TWENTY, hand_result, match_points_awarded, score_hand, standing
from .state import OVER, PLAYING, State, side_of

PACK_4P: Final[tuple[Card, ...]] = ALL_CARDS
PACK_3P: Final[tuple[Card, ...]] = tuple(c for c in ALL_CARDS if c != card_of(0, 2))
"""3p plays without the 2 of oros (RULES.md §2)."""

_KINGS: Final = sum(BIT[card_of(s, 12)] for s in range(4))
_KNIGHTS: Final = sum(BIT[card_of(s, 11)] for s in range(4))
_PAIR: Final = tuple(BIT[card_of(s, 12)] | BIT[card_of(s, 11)] for s in range(4))
_SEVEN: Final = tuple(card_of(s, 7) for s in range(4))
_TWO: Final = tuple(card_of(s, 2) for s in range(4))
_SWAP_SEVEN_FOR: Final = frozenset((1, 3, 12, 11, 10))
_SWAP_TWO_FOR: Final = frozenset((4, 5, 6, 7))

# Cheapest-card order of §11: (points, is trump, strength, suit) as one integer per trump.
_CHEAP_KEY: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(
        POINTS[c] * 1000 + (100 if SUIT_OF[c] == t else 0) + STRENGTH[c] * 10 + SUIT_OF[c]
        for c in ALL_CARDS
    )
    for t in range(4)
)


def pack_for(rules: Rules) -> tuple[Card, ...]:
    """The cards in play for this table, in card-number order."""
    return PACK_3P if rules.players == 3 else PACK_4P


def deck_for_hand(state_seed: int, hand_no: int, rules: Rules) -> tuple[Card, ...]:
    """The shuffled pack of hand ``hand_no`` drawn from the match seed (deterministic).

    A Fisher-Yates shuffle driven by BLAKE2b(``tute/{seed}/{hand_no}``): the 64-byte digest
    is eight 64-bit words, each decoded in mixed radix into five of the 39 swap positions.
    Every permutation is as likely as any other to within 8 * 40**5 / 2**64 < 2**-34 (the
    bias of reducing a 64-bit word), and nobody without the seed can tell one hand's pack
    from the next one's.
    """
    digest = blake2b(b"tute/%d/%d" % (state_seed, hand_no)).digest()
    pack = list(pack_for(rules))
    i = len(pack) - 1
    k = x = left = 0
    while i > 0:
        if not left:
            x = int.from_bytes(digest[k : k + 8], "little")
            k += 8
            left = 5
        r = i + 1
        j = x % r
        x //= r
        left -= 1
        c = pack[i]
        pack[i] = pack[j]
        pack[j] = c
        i -= 1
    return tuple(pack)


def _first_dealer(seed: int, players: int) -> int:
    """The first dealer drawn from the match seed (``first_dealer = random``)."""
    word = int.from_bytes(blake2b(b"tute/%d/dealer" % seed, digest_size=8).digest(), "little")
    return word % players


def _check_deck(rules: Rules, deck: Sequence[int]) -> tuple[Card, ...]:
    pack = pack_for(rules)
    deck_t = tuple(deck)
    if sorted(deck_t) != list(pack) or any(type(c) is not int for c in deck_t):
        raise InvalidInput(
            "bad_deck", f"a deck must hold each of the {len(pack)} cards of the pack once"
        )
    return deck_t


# ---------------------------------------------------------------------------------------------
# Dealing
# ---------------------------------------------------------------------------------------------


def new_match(
    rules: Rules,
    rng: random.Random | int,
    decks: Sequence[Sequence[int]] = (),
) -> State:
    """Start a match and deal its first hand.

    ``rng`` is a :class:`random.Random` (one 64-bit seed is drawn from it) or the seed itself.
    The pack of hand ``h`` is ``decks[h-1]`` when given, otherwise a uniformly random
    permutation drawn from the seed; the first dealer is ``rules.first_dealer`` or drawn from
    the seed. Use :func:`opening_events` for the events of the first deal.
    """
    seed = rng.getrandbits(64) if isinstance(rng, random.Random) else int(rng)
    packs = tuple(_check_deck(rules, d) for d in decks)
    n = rules.players
    if rules.first_dealer == RANDOM_DEALER:
        dealer = _first_dealer(seed, n)
    else:
        dealer = int(rules.first_dealer)
    zeros = (0,) * rules.sides
    base = State(
        rules=rules,
        seed=seed,
        decks=packs,
        status=PLAYING,
        hand_no=0,
        game_no=1,
        dealer=dealer,
        game_scores=zeros,
        match_points=zeros,
        games_won=zeros,
        winners=(),
        end_reason="",
        last_result=None,
        trump=0,
        trump_card=0,
        hands=(0,) * n,
        stock=(),
        leader=0,
        turn=0,
        trick=(),
        trick_no=0,
        history=(),
        won_points=zeros,
        tricks_won=zeros,
        last_trick_of=zeros,
        cantes=(),
        sung_suits=0,
        sang_twenty=0,
        window_used=0,
        exchanged=False,
        held_at_win=(0,) * n,
        public=0,
        turn_id=0,
    )
    return _deal(base, 1, dealer)


def with_deck(state: State, deck: Sequence[int]) -> State:
    """``state`` with ``deck`` as the pack of the first hand that has none yet.

    A server dealing each hand from its own shuffle (:mod:`engine.shuffle`) gives hand
    ``len(state.decks) + 1`` its pack any time before the action that ends the hand before it.
    """
    return state._replace(decks=(*state.decks, _check_deck(state.rules, deck)))


def _deal(state: State, hand_no: int, dealer: int) -> State:
    """``state`` with hand ``hand_no`` freshly dealt by ``dealer`` (§3)."""
    rules = state.rules
    n = rules.players
    if hand_no <= len(state.decks):
        deck = state.decks[hand_no - 1]
    else:
        deck = deck_for_hand(state.seed, hand_no, rules)
    hands = [0] * n
    if n == 2:
        dealt = 2 * rules.hand_size_2p
        trump_card = deck[dealt]
        stock = (*deck[dealt + 1 :], trump_card)
        public = 0
    else:
        dealt = len(deck)
        trump_card = deck[-1]
        stock = ()
        public = BIT[trump_card]
    for p in range(n):
        # One card at a time from the dealer's right: card i goes to seat dealer + 1 + i.
        m = 0
        for i in range(p, dealt, n):
            m |= BIT[deck[i]]
        hands[(dealer + 1 + p) % n] = m
    return with_deal(state, hand_no, dealer, trump_card, stock, tuple(hands), public)


def opening_events(state: State) -> tuple[Event, ...]:
    """The :class:`HandDealt` event of the hand now being played (unredacted)."""
    return (_dealt_event(state),)


def _dealt_event(state: State) -> HandDealt:
    return HandDealt(
        hand_no=state.hand_no,
        game_no=state.game_no,
        dealer=state.dealer,
        trump_suit=state.trump,
        trump_card=state.trump_card,
        hands=tuple(state.hands),
        stock_size=len(state.stock),
    )


# ---------------------------------------------------------------------------------------------
# Legal actions
# ---------------------------------------------------------------------------------------------


def _follow_cards(state: State, seat: int) -> tuple[Mask, str]:  # noqa: C901 - the arrastre obligations in one pass (the hot path; split, it costs calls)
    """The cards ``seat`` may play to a started trick (el arrastre, §5), and the rule."""
    rules = state.rules
    hand = state.hands[seat]
    trick = state.trick
    led = trick[0]
    led_suit = SUIT_OF[led]
    trump = state.trump
    if state.stock and rules.stock_phase_rules is not StockPhaseRules.STRICT:
        if rules.stock_phase_rules is StockPhaseRules.TRUMP_LEAD and led_suit == trump:
            trumps = hand & SUIT_MASK[trump]
            if trumps:
                return trumps, "must_follow_suit"
        return hand, ""
    # W: the winning card so far; B: the strongest card of the led suit so far. The same scan
    # as cards.trick_standing, inline: on this path a call costs the compiled engine ~6%.
    win = led
    best_led = led
    win_pos = 0
    trumped = False
    for pos in range(1, len(trick)):
        c = trick[pos]
        s = SUIT_OF[c]
        if s == led_suit:
            if STRENGTH[c] > STRENGTH[best_led]:
                best_led = c
            if SUIT_OF[win] == led_suit and STRENGTH[c] > STRENGTH[win]:
                win, win_pos = c, pos
        elif s == trump:
            trumped = True
            if SUIT_OF[win] != trump or STRENGTH[c] > STRENGTH[win]:
                win, win_pos = c, pos
    in_led = hand & SUIT_MASK[led_suit]
    n = rules.players
    if rules.partner_relief and n == 4 and (state.leader + win_pos) % 4 == (seat + 2) % 4:
        return (in_led, "must_follow_suit") if in_led else (hand, "")
    if in_led:
        if led_suit == trump or not trumped or rules.head_led_suit_when_trumped:
            beat = in_led & STRONGER[win if led_suit == trump else best_led]
            if beat:
                return beat, "must_beat"
        return in_led, "must_follow_suit"
    trumps = hand & SUIT_MASK[trump]
    if not trumps:
        return hand, ""
    if not trumped:
        return trumps, "must_trump"
    over = trumps & STRONGER[win]
    if over:
        return over, "must_overtrump"
    if rules.cannot_overtrump is CannotOvertrump.MUST_TRUMP:
        return trumps, "must_trump"
    return hand, ""


def _declaring(state: State, seat: int) -> bool:
    """Whether ``seat`` may declare in the current window (§4.2, §6.1): the leader, or the
    leader's partner with ``cante_singers = side``; only from trick 2 on."""
    if state.trick or state.trick_no < 2:
        return False
    if seat == state.leader:
        return True
    rules = state.rules
    return (
        rules.players == 4
        and rules.cante_singers is CanteSingers.SIDE
        and seat == (state.leader + 2) % 4
    )


def _allowance_left(state: State, seat: int) -> bool:
    if state.rules.cantes_per_trick is CantesPerTrick.UNLIMITED:
        return True
    return not state.window_used >> side_of(state.rules.players, seat) & 1


def _forty_pending(state: State, seat: int) -> bool:
    """§6.4: seat holds both trumps' 12 and 11, the 40 is unsung and not barred by strict."""
    rules = state.rules
    t = state.trump
    if state.hands[seat] & _PAIR[t] != _PAIR[t] or state.sung_suits >> t & 1:
        return False
    return not (
        rules.forty_before_twenty is FortyBeforeTwenty.STRICT and state.sang_twenty >> seat & 1
    )


def _can_sing(state: State, seat: int, suit: int) -> bool:
    """Conditions 1-6 of §6 for ``seat`` singing ``suit`` now."""
    if not _declaring(state, seat):
        return False
    rules = state.rules
    pair = _PAIR[suit]
    if state.hands[seat] & pair != pair or state.sung_suits >> suit & 1:
        return False
    if not _allowance_left(state, seat):
        return False
    fbt = rules.forty_before_twenty
    if fbt is not FortyBeforeTwenty.OFF:
        if suit != state.trump:
            if _forty_pending(state, seat):
                return False
        elif fbt is FortyBeforeTwenty.STRICT and state.sang_twenty >> seat & 1:
            return False
    if rules.cante_requires_held_at_win and state.held_at_win[seat] & pair != pair:
        return False
    return not (rules.players == 2 and rules.cantes_only_with_stock and not state.stock)


def _can_tute(state: State, seat: int, rank: int) -> bool:
    """§7: four 12s or four 11s, declared like a cante."""
    rules = state.rules
    if not rules.tute_enabled or not _declaring(state, seat):
        return False
    four = _KINGS if rank == 12 else _KNIGHTS
    if state.hands[seat] & four != four or not _allowance_left(state, seat):
        return False
    if rules.cante_requires_held_at_win and state.held_at_win[seat] & four != four:
        return False
    if rules.players == 2 and rules.cantes_only_with_stock and not state.stock:
        return False
    return not (rules.tute_requires_no_prior_cante and any(c[0] == seat for c in state.cantes))


def _exchange_card(state: State, seat: int) -> int:
    """§8: the card ``seat`` may give for the turned card now, or -1."""
    rules = state.rules
    if (
        rules.players != 2
        or seat != state.leader
        or state.trick
        or not state.stock
        or state.exchanged
        or (rules.swap_requires_trick_won and state.trick_no < 2)
    ):
        return -1
    rank = RANK_OF[state.stock[-1]]
    t = state.trump
    hand = state.hands[seat]
    if rules.swap_seven and rank in _SWAP_SEVEN_FOR and hand & BIT[_SEVEN[t]]:
        return _SEVEN[t]
    if rules.swap_two_for_low and rank in _SWAP_TWO_FOR and hand & BIT[_TWO[t]]:
        return _TWO[t]
    return -1


def _declarations(state: State, seat: int) -> list[int]:
    out: list[int] = []
    if _exchange_card(state, seat) >= 0:
        out.append(A.EXCHANGE)
    for suit in range(4):
        if _can_sing(state, seat, suit):
            out.append(A.SING + suit)  # noqa: PERF401 - appends compile to less than extend()
    if _can_tute(state, seat, 12):
        out.append(A.TUTE_12)
    if _can_tute(state, seat, 11):
        out.append(A.TUTE_11)
    out.sort()
    return out


def legal_cards(state: State, seat: int) -> Mask:
    """The cards ``seat`` may play now, as a mask (0 when it is not its turn)."""
    if state.status != PLAYING or seat != state.turn:
        return 0
    if not state.trick:
        return state.hands[seat]
    return _follow_cards(state, seat)[0]


def legal_actions(state: State, seat: int) -> tuple[int, ...]:
    """Every action ``seat`` may choose now, sorted: cards (0..39), then declarations.

    Empty for a seat that may not act (not its turn, the match is over). In a declaration
    window with ``cante_singers = side`` the leader's partner gets its cantes and tute.
    The server's ``timeout`` and ``forfeit`` are never listed.
    """
    if state.status != PLAYING:
        return ()
    if seat != state.turn:
        if _declaring(state, seat):
            return tuple(_declarations(state, seat))
        return ()
    if state.trick:
        return cards_of(_follow_cards(state, seat)[0])
    hand = state.hands[seat]
    cards = cards_of(hand)
    # Without the 12 and 11 of one suit, or four 12s or 11s, there is nothing to declare
    # (the exchange exists only in 2p).
    if state.rules.players != 2 and (
        state.trick_no < 2
        or not (
            hand >> 9 & hand >> 8 & _SUIT_BASE
            or hand & _KINGS == _KINGS
            or hand & _KNIGHTS == _KNIGHTS
        )
    ):
        return cards
    return cards + tuple(_declarations(state, seat))


_SUIT_BASE: Final = sum(1 << (10 * s) for s in range(4))
"""Bit 10*s: ``hand >> 9 & hand >> 8 & _SUIT_BASE`` has bit 10*s when 12s and 11s are held."""


def cheapest_card(state: State, seat: int) -> Card:
    """The cheapest legal card of the seat on turn (§11)."""
    keys = _CHEAP_KEY[state.trump]
    return min(cards_of(legal_cards(state, seat)), key=keys.__getitem__)


# ---------------------------------------------------------------------------------------------
# Applying actions
# ---------------------------------------------------------------------------------------------


def check(state: State, seat: int, action: int) -> None:  # noqa: C901 - every rule an action can break, in the order RULES.md gives them
    """Whether ``seat`` may apply ``action`` now: returns, or raises what :func:`apply` would.

    :class:`InvalidInput` for a seat the table lacks or a number that is no action;
    :class:`IllegalAction` with the rule's reason code for an action the rules forbid now.
    """
    if type(seat) is not int or not 0 <= seat < state.rules.players:
        raise InvalidInput("bad_seat", "no such seat at this table")
    if state.status != PLAYING:
        raise IllegalAction("match_over", "the match is over")
    if 0 <= action < NUM_CARDS:
        if seat != state.turn:
            raise IllegalAction("not_your_turn", "it is not this seat's turn to play")
        _check_card(state, seat, action)
    elif action == A.TIMEOUT:
        if seat != state.turn:
            raise IllegalAction("not_your_turn", "a timeout applies to the seat on turn")
    elif action == A.FORFEIT:
        return
    elif A.SING <= action < A.SING + 4:
        suit = action - A.SING
        if not _can_sing(state, seat, suit):
            raise IllegalAction(
                "cante_not_allowed",
                f"cannot sing {SUIT_NAMES[suit]} now ({_why_no_cante(state, seat)})",
            )
    elif action in (A.TUTE_12, A.TUTE_11):
        rank = 12 if action == A.TUTE_12 else 11
        if not _can_tute(state, seat, rank):
            raise IllegalAction("tute_not_allowed", f"cannot declare a tute of {rank}s now")
    elif action == A.EXCHANGE:
        if _exchange_card(state, seat) < 0:
            raise IllegalAction(
                "exchange_not_allowed",
                "only the leader before leading, holding the 7 (or 2) of trumps the options "
                "allow for the turned card, while the stock lasts",
            )
    else:
        raise InvalidInput("unknown_action", "not an action number")


def _check_card(state: State, seat: int, card: int) -> None:
    """``card`` is held, and on a follow turn el arrastre allows it (§5)."""
    hand = state.hands[seat]
    if not hand & BIT[card]:
        raise IllegalAction("card_not_held", "that card is not in this seat's hand")
    if not state.trick:
        return
    allowed, rule = _follow_cards(state, seat)
    if allowed & BIT[card]:
        return
    led_suit = SUIT_OF[state.trick[0]]
    if rule != "must_follow_suit" and SUIT_OF[card] != led_suit and hand & SUIT_MASK[led_suit]:
        rule = "must_follow_suit"
    raise IllegalAction(
        rule, _RULE_TEXT[rule].format(led=SUIT_NAMES[led_suit], trump=SUIT_NAMES[state.trump])
    )


def is_legal(state: State, seat: int, action: int) -> bool:
    """Whether :func:`check` passes: ``seat`` may apply ``action`` now (the server's
    ``timeout`` and ``forfeit`` included)."""
    try:
        check(state, seat, action)
    except (IllegalAction, InvalidInput):
        return False
    return True


def apply(state: State, seat: int, action: int) -> tuple[State, tuple[Event, ...]]:
    """Apply ``seat``'s ``action``; return the new state and the events (unredacted).

    Raises :class:`IllegalAction` (with the rule's reason code) or :class:`InvalidInput`,
    and then the given state is untouched (it is immutable anyway). The same as
    :func:`check` then :func:`apply_trusted`.
    """
    check(state, seat, action)
    return apply_trusted(state, seat, action)


def apply_trusted(state: State, seat: int, action: int) -> tuple[State, tuple[Event, ...]]:
    """:func:`apply` without :func:`check`, for an action known to be legal: one taken from
    :func:`legal_actions` (or ``timeout``/``forfeit`` as :func:`check` allows them) for this
    very state. Nothing is checked; an illegal action gives a state no match can reach.
    """
    if 0 <= action < NUM_CARDS:
        return _play(state, seat, action, False, ())
    if action == A.TIMEOUT:
        card = cheapest_card(state, seat)
        return _play(state, seat, card, True, (TurnTimedOut(seat, state.trick_no),))
    if action == A.FORFEIT:
        return _forfeit(state, seat)
    if A.SING <= action < A.SING + 4:
        return _sing(state, seat, action - A.SING)
    if action in (A.TUTE_12, A.TUTE_11):
        return _declare_tute(state, seat, 12 if action == A.TUTE_12 else 11)
    if action == A.EXCHANGE:
        return _exchange(state, seat)
    raise InvalidInput("unknown_action", "not an action number")


def _play(
    state: State, seat: int, card: int, auto: bool, pre: tuple[Event, ...]
) -> tuple[State, tuple[Event, ...]]:
    bit = BIT[card]
    hands = with_item(state.hands, seat, state.hands[seat] & ~bit)
    trick = state.trick + ONE_CARD[card]
    events: tuple[Event, ...] = played(state.trick_no, seat, card, auto)
    if pre:
        events = pre + events
    n = state.rules.players
    if len(trick) < n:
        return with_play(state, hands, trick, (seat + 1) % n, state.public & ~bit), events
    return _finish_trick(state, hands, trick, state.public & ~bit, events)


_RULE_TEXT: Final = {
    "must_follow_suit": "must follow suit ({led} led)",
    "must_beat": "must play a stronger card of the suit led ({led}) when holding one",
    "must_trump": "must trump ({trump}) when void in the suit led ({led})",
    "must_overtrump": "must play a trump ({trump}) stronger than the trick's best trump",
}


def _finish_trick(
    state: State,
    hands_t: tuple[Mask, ...],
    trick: tuple[Card, ...],
    public: Mask,
    events: tuple[Event, ...],
) -> tuple[State, tuple[Event, ...]]:
    rules = state.rules
    n = rules.players
    leader = state.leader
    winner = (leader + trick_winner(trick, state.trump)) % n
    side = side_of(n, winner)
    points = 0
    for c in trick:
        points += POINTS[c]
    won = with_item(state.won_points, side, state.won_points[side] + points)
    tricks = with_item(state.tricks_won, side, state.tricks_won[side] + 1)
    last_of = with_item(state.last_trick_of, side, state.trick_no)
    played = trick_pairs(n, leader, trick)
    events = events + (TrickTaken(state.trick_no, winner, played, points),)
    held_at_win = hands_t
    stock = state.stock
    if stock:
        hands = list(hands_t)
        loser = 1 - winner
        hands[winner] |= BIT[stock[0]]
        hands[loser] |= BIT[stock[1]]
        stock = stock[2:]
        if not stock:
            public |= BIT[state.stock[1]]
        events = (
            *events,
            CardDrawn(winner, state.stock[0], False, len(stock) + 1),
            CardDrawn(loser, state.stock[1], not stock, len(stock)),
        )
        hands_t = tuple(hands)
    new = with_trick_done(
        state, stock, winner, trick, won, tricks, last_of, held_at_win, hands_t, public
    )
    if any(hands_t):
        return new, events
    return _end_hand(new, events, winner)


def _sing(state: State, seat: int, suit: int) -> tuple[State, tuple[Event, ...]]:
    points = FORTY if suit == state.trump else TWENTY
    sang_twenty = state.sang_twenty | (1 << seat) if points == TWENTY else state.sang_twenty
    new = state._replace(
        cantes=(*state.cantes, (seat, suit, points, state.trick_no)),
        sung_suits=state.sung_suits | 1 << suit,
        sang_twenty=sang_twenty,
        window_used=state.window_used | 1 << side_of(state.rules.players, seat),
        public=state.public | _PAIR[suit],
    )
    return new, (CanteSung(seat, suit, points, state.trick_no),)


def _why_no_cante(state: State, seat: int) -> str:
    if not _declaring(state, seat):
        return "only the trick winner (or its partner with cante_singers=side) before leading"
    if not _allowance_left(state, seat):
        return "one cante or tute per trick won"
    return "the pair is not held, the suit was sung, or the cante options forbid it"


def _declare_tute(state: State, seat: int, rank: int) -> tuple[State, tuple[Event, ...]]:
    cards = _KINGS if rank == 12 else _KNIGHTS
    events: tuple[Event, ...] = (TuteDeclared(seat, rank, cards, state.trick_no),)
    new = state._replace(public=state.public | cards)
    return _end_hand(new, events, -1, tute=(seat, rank, cards))


def _exchange(state: State, seat: int) -> tuple[State, tuple[Event, ...]]:
    give = _exchange_card(state, seat)
    taken = state.stock[-1]
    hands = list(state.hands)
    hands[seat] = hands[seat] & ~BIT[give] | BIT[taken]
    new = state._replace(
        hands=tuple(hands),
        stock=(*state.stock[:-1], give),
        exchanged=True,
        public=(state.public & ~BIT[give]) | BIT[taken],
    )
    return new, (TrumpExchanged(seat, give, taken),)


def _forfeit(state: State, seat: int) -> tuple[State, tuple[Event, ...]]:
    loser = side_of(state.rules.players, seat)
    winners = tuple(s for s in range(state.rules.sides) if s != loser)
    new = state._replace(
        status=OVER, winners=winners, end_reason="forfeit", turn_id=state.turn_id + 1
    )
    return new, (PlayerForfeited(seat), MatchEnded(winners, "forfeit", standing(state), seat))


# ---------------------------------------------------------------------------------------------
# Scoring: end of a hand (§9) and of games and matches (§10)
# ---------------------------------------------------------------------------------------------


def _end_hand(
    state: State,
    events: tuple[Event, ...],
    last_winner: int,
    tute: tuple[int, int, Mask] | None = None,
) -> tuple[State, tuple[Event, ...]]:
    """Score the hand ``state`` ends (§9, §10); deal the next one, or end the match."""
    rules = state.rules
    result = hand_result(state, last_winner, tute)
    scored = score_hand(state, result)
    ended = Standing(
        game_scores=scored.game_scores,
        games_won=scored.games_won,
        match_points=scored.match_points,
        card_points=state.won_points,
        cante_points=result.cante_points,
        tricks_won=state.tricks_won,
    )
    events = (*events, HandEnded(result, ended, match_points_awarded(rules, result)))
    game_won = scored.game_winner >= 0
    if game_won:
        events = (
            *events,
            GameEnded(state.game_no, scored.game_winner, scored.game_scores, tute is not None),
        )
    winner = scored.match_winner
    if winner >= 0:
        reason = "score" if tute is None else "tute"
        over = state._replace(
            last_result=result,
            game_scores=scored.game_scores,
            games_won=scored.games_won,
            match_points=scored.match_points,
            status=OVER,
            winners=(winner,),
            end_reason=reason,
            turn_id=state.turn_id + 1,
        )
        return over, (*events, MatchEnded((winner,), reason, ended, -1))
    mid = state._replace(
        last_result=result,
        game_scores=(0,) * rules.sides if game_won else scored.game_scores,
        games_won=scored.games_won,
        match_points=scored.match_points,
        game_no=state.game_no + 1 if game_won else state.game_no,
    )
    dealt = _deal(mid, state.hand_no + 1, (state.dealer + 1) % rules.players)
    return dealt, (*events, _dealt_event(dealt))
