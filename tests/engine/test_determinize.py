"""The determinizer: every sampled deal is consistent with the view it came from.

Consistency is checked against the engine itself, not against the determinizer's own
reasoning: the sample must put every seen card where it is seen, give each seat its hand
size, and make every play of the hand legal again when replayed from the sampled hands (for
each trick after which nobody drew), and the seat's own legal actions in the rebuilt state
must be the view's. An exhaustive check on tiny endgames shows every consistent deal comes up.
"""

from __future__ import annotations

import itertools
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import PRESETS, Rules, State, apply, legal_actions, new_match, view
from engine.bots import declaration
from engine.cards import BIT, SUIT_MASK, cards_of
from engine.determinize import (
    Sample,
    constraints,
    determinize,
    knowledge,
    sample,
    sample_from,
    stock_before_trick,
    to_state,
)
from engine.game import _follow_cards, pack_for
from engine.rules import FortyBeforeTwenty
from engine.view import View

from .builds import COMPILED, examples
from .test_properties import any_rules

_PAIR_12_11 = {s: BIT[s * 10 + 9] | BIT[s * 10 + 8] for s in range(4)}


def random_position(rules: Rules, rng: random.Random, steps: int) -> State:
    """A random point of a random match: declarations preferred, so cantes and exchanges
    happen."""
    s = new_match(rules, rng)
    for _ in range(steps):
        if s.over:
            break
        acts = legal_actions(s, s.turn)
        decl = [a for a in acts if a >= 40 and a not in (44, 45)]
        a = (
            rng.choice(decl)
            if decl and rng.random() < 0.8
            else rng.choice([a for a in acts if a < 40])
        )
        s, _ = apply(s, s.turn, a)
    return s


def replay_consistent(rules: Rules, v: View, smp: Sample) -> str:  # noqa: C901 - the independent consistency oracle, one check per revealed fact
    """Why the sample contradicts the view ('' when it does not), judged by the engine."""
    n = v.players
    me = v.seat
    assert me is not None
    hands = smp.hands
    if len(hands) != n:
        return "wrong number of hands"
    if hands[me] != v.hand:
        return "my hand changed"
    for p in range(n):
        if hands[p].bit_count() != v.hand_sizes[p]:
            return f"seat {p} has the wrong hand size"
        if v.public_cards[p] & ~hands[p]:
            return f"seat {p} lost a card it was seen to hold"
    played = 0
    for _, cards, _ in v.history:
        for c in cards:
            played |= BIT[c]
    for _, c in v.trick:
        played |= BIT[c]
    everything = played
    for p in range(n):
        if everything & hands[p]:
            return "a card is in two places"
        everything |= hands[p]
    if len(smp.stock) != v.stock_size:
        return "wrong stock size"
    if smp.stock and smp.stock[-1] != v.turned_card:
        return "the turned card moved"
    for c in smp.stock:
        if everything & BIT[c]:
            return "a stock card is elsewhere too"
        everything |= BIT[c]
    pack = sum(BIT[c] for c in pack_for(rules))
    if everything != pack:
        return "cards not conserved"
    # Replay the obligations: a seat's hand at a trick is its hand now plus what it played
    # from that trick on (valid while nobody drew after the trick).
    state = to_state(rules, v, smp)
    tricks = [(i + 1, leader, cards) for i, (leader, cards, _) in enumerate(v.history)]
    if v.trick:
        tricks.append((v.trick_no, v.leader, tuple(c for _, c in v.trick)))
    tricks_cards = [(leader, cards) for _, leader, cards in tricks]
    later = [0] * n
    for trick_no, leader, cards in reversed(tricks):
        for pos, c in enumerate(cards):
            later[(leader + pos) % n] |= BIT[c]
        stock = stock_before_trick(rules, trick_no)
        if stock and trick_no != v.trick_no:
            continue
        past_hands = [hands[p] | later[p] for p in range(n)]
        stock_t: tuple[int, ...] = smp.stock if trick_no == v.trick_no else ()
        if stock and not stock_t:
            stock_t = (0,) * stock  # only its being non-empty matters to the obligations
        for pos in range(1, len(cards)):
            seat = (leader + pos) % n
            mine = hands[seat]
            for q in range(pos, len(cards)):
                if (leader + q) % n == seat:
                    mine |= BIT[cards[q]]
            past = state._replace(
                hands=(*past_hands[:seat], mine, *past_hands[seat + 1 :]),
                trick=cards[:pos],
                leader=leader,
                stock=stock_t,
                turn=seat,
            )
            allowed, _ = _follow_cards(past, seat)
            if not allowed & BIT[cards[pos]]:
                return f"trick {trick_no}: seat {seat} could not have played that card"
    if rules.forty_before_twenty is not FortyBeforeTwenty.OFF:
        # A 20 the engine let through while the seat held the trump pair is impossible.
        pair = _PAIR_12_11[v.trump]
        sang_twenty = [False] * n
        forty_sung = False
        for seat, suit, _, t in v.cantes:
            if suit == v.trump:
                forty_sung = True
                continue
            strict = rules.forty_before_twenty is FortyBeforeTwenty.STRICT
            barred = not forty_sung and not (strict and sang_twenty[seat])
            sang_twenty[seat] = True
            if not barred or stock_before_trick(rules, t) > 0:
                continue
            held = hands[seat]
            for i, (leader, cards) in enumerate(tricks_cards):
                if i + 1 >= t:
                    for pos, c in enumerate(cards):
                        if (leader + pos) % n == seat:
                            held |= BIT[c]
            if held & pair == pair:
                return f"seat {seat} sang a 20 holding the 40"
    if legal_actions(state, me) != v.legal:
        return "my legal actions differ in the rebuilt state"
    return ""


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(rules=any_rules(), seed=st.integers(0, 2**32), steps=st.integers(0, 70))
def test_samples_are_consistent_with_the_view(rules: Rules, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    s = random_position(rules, rng, steps)
    if s.over:
        return
    for seat in range(rules.players):
        v = view(s, seat)
        # The real deal is one of the consistent ones.
        truth = Sample(s.hands, s.stock)
        assert replay_consistent(rules, v, truth) == ""
        k = knowledge(rules, v)
        for p in range(rules.players):
            assert k.forbidden[p] & s.hands[p] & ~k.known[p] == 0, "a constraint is wrong"
        for _ in range(3):
            smp = sample(rules, v, rng)
            assert replay_consistent(rules, v, smp) == ""
        # the exact assignment: at once, and after the quick search gave up on its first try
        for nodes in (0, 1):
            smp = sample_from(k, rng, dfs_nodes=nodes)
            assert replay_consistent(rules, v, smp) == ""
        st_ = determinize(rules, v, rng)
        assert view(st_, seat).hand == v.hand


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(preset=st.sampled_from(sorted(PRESETS)), seed=st.integers(0, 2**32))
def test_voids_and_caps_of_a_whole_hand_are_kept(preset: str, seed: int) -> None:
    """Every seat's view at every step of a hand: no sampled card breaks a revealed void or
    cap (the positions of the property test above, densely along one hand)."""
    rules = PRESETS[preset]
    rng = random.Random(seed)
    s = new_match(rules, rng)
    hand = s.hand_no
    while not s.over and s.hand_no == hand:
        for seat in range(rules.players):
            v = view(s, seat)
            smp = sample(rules, v, rng)
            assert replay_consistent(rules, v, smp) == ""
            forb = constraints(rules, v)
            for p in range(rules.players):
                if p != seat:
                    assert smp.hands[p] & forb[p] & ~v.public_cards[p] == 0
        acts = [a for a in legal_actions(s, s.turn) if a < 40]
        s, _ = apply(s, s.turn, rng.choice(acts))


def all_consistent(rules: Rules, v: View) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every deal consistent with ``v``, by brute force over the hidden cards."""
    k = knowledge(rules, v)
    hidden = list(cards_of(k.hidden))
    n = v.players
    places = [p for p in range(n + 1) for _ in range(k.slots[p])]
    out = set()
    for perm in itertools.permutations(range(len(hidden))):
        got = [0] * (n + 1)
        stock_top: list[int] = []
        for i, where in zip(perm, places, strict=True):
            got[where] |= BIT[hidden[i]]
            if where == n:
                stock_top.append(hidden[i])
        hands = tuple(got[p] | k.known[p] for p in range(n))
        stock = (*stock_top, v.turned_card) if v.turned_card >= 0 else ()
        smp = Sample(hands, tuple(stock))
        if replay_consistent(rules, v, smp) == "":
            out.add((smp.hands, smp.stock))
    return out


def endgame_view(rules: Rules, seed: int, left: int) -> View | None:
    """The view of the seat on turn when ``left`` cards at most are hidden from it."""
    rng = random.Random(seed)
    s = new_match(rules, rng)
    while not s.over:
        v = view(s, s.turn)
        if knowledge(rules, v).hidden.bit_count() <= left and v.trick:
            return v
        acts = [a for a in legal_actions(s, s.turn) if a < 40]
        s, _ = apply(s, s.turn, rng.choice(acts))
    return None


SEEDS = 6 if COMPILED else 3
"""Deals a preset for the exhaustive check (:mod:`.builds`: all of them on the compiled engine)."""


def test_samples_cover_every_consistent_deal_of_tiny_endgames() -> None:
    checked = 0
    for preset, left in (
        ("parejas", 6),
        ("tres", 6),
        ("corriente-8", 5),
        ("parejas-mejor-de-3", 6),
    ):
        for seed in range(SEEDS):
            v = endgame_view(PRESETS[preset], seed, left)
            if v is None:
                continue
            rules = PRESETS[preset]
            want = all_consistent(rules, v)
            assert want, "the real deal is consistent"
            rng = random.Random(seed)
            got = set()
            for _ in range(60 * len(want) + 50):
                smp = sample(rules, v, rng)
                got.add((smp.hands, smp.stock))
            assert got == want, (preset, seed)
            checked += 1
    assert checked >= 2 * SEEDS


def test_a_void_shown_by_not_following_is_kept() -> None:
    """4p: seat 1 discards on an oros lead: no sample gives it an oro."""
    rules = Rules.preset("parejas")
    rng = random.Random(5)
    for seed in range(200):
        s = new_match(rules, random.Random(seed))
        lead = [c for c in cards_of(s.hands[s.turn]) if c < 10]
        nxt = (s.turn + 1) % 4
        if not lead or s.hands[nxt] & SUIT_MASK[0] or not s.hands[nxt] & ~SUIT_MASK[s.trump]:
            continue
        s, _ = apply(s, s.turn, lead[0])
        off = [c for c in legal_actions(s, nxt) if c < 40 and c // 10 != s.trump]
        if not off:
            continue
        s, _ = apply(s, nxt, off[0])
        me = (nxt + 1) % 4
        v = view(s, me)
        for _ in range(50):
            assert sample(rules, v, rng).hands[nxt] & SUIT_MASK[0] == 0
        return
    raise AssertionError("no deal with a void to show")


def singing_position(rules: Rules, rng: random.Random, steps: int) -> State:
    """A random point of a match in which the seat on turn always makes the declaration every
    bot level makes (a tute, the exchange, the best cante) and otherwise plays a random card:
    play under which :func:`knowledge`'s ``sings`` assumption holds."""
    s = new_match(rules, rng)
    for _ in range(steps):
        if s.over:
            break
        v = view(s, s.turn)
        a = declaration(v)
        if a < 0:
            a = rng.choice([x for x in v.legal if x < 40] or list(v.legal))
        s, _ = apply(s, s.turn, a)
    return s


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(rules=any_rules(), seed=st.integers(0, 2**32), steps=st.integers(0, 70))
def test_silent_windows_exclude_only_pairs_a_singing_seat_lacks(
    rules: Rules, seed: int, steps: int
) -> None:
    """With every seat singing at once, what ``sings`` adds never excludes the real hands,
    and its samples keep to it and to the view."""
    rng = random.Random(seed)
    s = singing_position(rules, rng, steps)
    if s.over:
        return
    for seat in range(rules.players):
        v = view(s, seat)
        k = knowledge(rules, v, sings=True)
        for p in range(rules.players):
            for need in k.not_all[p]:
                assert s.hands[p] & need != need, "an inferred pair is held"
        for _ in range(2):
            smp = sample_from(k, rng)
            assert replay_consistent(rules, v, smp) == ""
            for p in range(rules.players):
                assert not any(smp.hands[p] & need == need for need in k.not_all[p])


def test_a_window_closed_without_a_cante_tells_its_leader_held_no_pair() -> None:
    """4p: the winner of a trick who leads the next one without singing held no unsung pair;
    a seat's samples never give it one (while the rules' knowledge alone does)."""
    rules = PRESETS["parejas"]
    found = 0
    for seed in range(40):
        rng = random.Random(seed)
        s = singing_position(rules, rng, 5)  # trick 2 led: window 2 has closed
        if s.over or s.trick_no != 2 or not s.trick or s.cantes:
            continue
        leader = s.history[0][2]
        for seat in range(4):
            if seat == leader:
                continue
            v = view(s, seat)
            plain = knowledge(rules, v)
            k = knowledge(rules, v, sings=True)
            for suit in range(4):
                pair = _PAIR_12_11[suit]
                if pair & ~plain.hidden:
                    continue  # a card of the pair is seen: nothing to infer
                assert pair in k.not_all[leader], (seed, seat, suit)
                assert pair not in plain.not_all[leader]
                found += 1
                for _ in range(20):
                    assert sample_from(k, rng).hands[leader] & pair != pair
    assert found > 20, "no position tested the inference"
