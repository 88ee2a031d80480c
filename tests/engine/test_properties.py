"""Property tests over random matches of every preset and of random option combinations.

Each example plays a whole match with a random player (who prefers declarations, so cantes,
tutes and exchanges happen) and sometimes lets the clock run out (timeouts) or forfeits, and
checks at every step the invariants of issue 2: cards conserved, 130 points per played hand,
who has legal actions, every other action rejected with the state untouched, replay, codec
round-trip, and that no view or redacted event shows a card its viewer may not see.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import (
    NUM_PLAYER_ACTIONS,
    PRESETS,
    ActionKind,
    IllegalAction,
    InvalidInput,
    Rules,
    State,
    apply,
    decode_state,
    encode_state,
    is_card,
    kind_of,
    legal_actions,
    new_match,
    opening_events,
    redact,
    view,
    visible_cards,
)
from engine.events import CardPlayed, HandEnded, MatchEnded, TuteDeclared
from engine.game import pack_for
from engine.rules import CanteSingers
from engine.view import visible_to

from .builds import examples
from .positions import random_action

PLAYER_ACTIONS = range(NUM_PLAYER_ACTIONS)

OPTION_VALUES: dict[str, list[Any]] = {
    "hand_size_2p": [6, 8],
    "stock_phase_rules": ["free", "trump_lead", "strict"],
    "head_led_suit_when_trumped": [True, False],
    "cannot_overtrump": ["free", "must_trump"],
    "partner_relief": [True, False],
    "cante_singers": ["winner", "side"],
    "cantes_per_trick": ["one", "unlimited"],
    "forty_before_twenty": ["off", "hold", "strict"],
    "cante_requires_held_at_win": [True, False],
    "cantes_only_with_stock": [True, False],
    "tute_enabled": [True, False],
    "tute_effect": ["wins_unit", "wins_match"],
    "tute_unit_value": [1, 2, 3],
    "tute_requires_no_prior_cante": [True, False],
    "swap_seven": [True, False],
    "swap_two_for_low": [True, False],
    "swap_requires_trick_won": [True, False],
    "scoring": ["points", "hands"],
    "target_points": [1, 60, 101],
    "games_to_win": [1, 2],
    "target_match_points": [1, 2, 3],
    "capote_value": [1, 2],
    "tie_rule": ["last_trick", "none"],
}


@st.composite
def any_rules(draw: st.DrawFn) -> Rules:
    """A preset, or random values for every option."""
    if draw(st.booleans()):
        return PRESETS[draw(st.sampled_from(sorted(PRESETS)))]
    opts = {name: draw(st.sampled_from(values)) for name, values in OPTION_VALUES.items()}
    opts["players"] = draw(st.sampled_from([2, 3, 4]))
    opts["first_dealer"] = draw(st.sampled_from(["random", 0, 1]))
    return Rules.from_options(opts)


def played_cards(s: State) -> int:
    m = 0
    for _, cards, _ in s.history:
        for c in cards:
            m |= 1 << c
    for c in s.trick:
        m |= 1 << c
    return m


def may_see(s: State, seat: int | None) -> int:
    """Cards ``seat`` may see in state ``s`` (RULES.md §3 and §14.21)."""
    m = played_cards(s) | s.public | 1 << s.trump_card
    if s.stock:
        m |= 1 << s.stock[-1]
    if seat is not None:
        m |= s.hands[seat]
    return m


def check_state(s: State) -> None:
    pack = 0
    for c in pack_for(s.rules):
        pack |= 1 << c
    parts = [*s.hands, played_cards(s)]
    for c in s.stock:
        parts.append(1 << c)
    total = 0
    for p in parts:
        assert total & p == 0, "a card is in two places"
        total |= p
    if s.status == "playing":
        assert total == pack, "cards not conserved"
    assert s.public & ~total == 0
    assert decode_state(encode_state(s)) == s
    n = s.rules.players
    for seat in range(n):
        acts = legal_actions(s, seat)
        if s.status != "playing":
            assert acts == ()
        elif seat == s.turn:
            assert any(is_card(a) for a in acts)
        elif acts:
            # only the leader's partner in a cante window with cante_singers = side
            assert s.rules.cante_singers is CanteSingers.SIDE and n == 4
            assert not s.trick and seat == (s.leader + 2) % 4
            assert all(kind_of(a) in (ActionKind.SING, ActionKind.TUTE) for a in acts)
        v = view(s, seat)
        assert v.legal == acts
        others = 0
        for q in range(n):
            if q != seat:
                others |= s.hands[q]
        assert visible_to(v) & others & ~s.public == 0, "a view shows a hidden card"
        assert visible_to(v) & ~may_see(s, seat) == 0
    spectator = visible_to(view(s, None))
    assert spectator & ~may_see(s, None) == 0


def check_rejections(s: State, seat: int, legal: tuple[int, ...]) -> None:
    before = encode_state(s)
    for a in PLAYER_ACTIONS:
        if a in legal:
            continue
        try:
            apply(s, seat, a)
        except (IllegalAction, InvalidInput) as err:
            assert err.reason
        else:
            raise AssertionError(f"illegal action {a} was applied")
    assert encode_state(s) == before


def play_match(rules: Rules, seed: int, *, check: bool) -> tuple[list[Any], State]:
    rng = random.Random(seed)
    s = new_match(rules, rng.getrandbits(32))
    log: list[Any] = list(opening_events(s))
    steps = 0
    while s.status == "playing" and steps < 2000:
        steps += 1
        n = s.rules.players
        # a partner's declaration, sometimes
        if not s.trick and n == 4 and rng.random() < 0.5:
            partner = (s.leader + 2) % 4
            pacts = legal_actions(s, partner)
            if pacts:
                old = s
                s, events = apply(s, partner, rng.choice(pacts))
                if check:
                    check_events(old, s, events, None)
                log.extend(events)
                continue
        seat = s.turn
        acts = legal_actions(s, seat)
        if check:
            check_state(s)
            check_rejections(s, seat, acts)
        seat, action = random_action(rng, s, acts, 0.002)
        old = s
        s, events = apply(s, seat, action)
        if check:
            check_events(old, s, events, action)
        log.extend(events)
    assert s.status == "over"
    if check:
        check_state(s)
    return log, s


def check_events(old: State, new: State, events: tuple[Any, ...], action: int | None) -> None:
    assert events
    n = old.rules.players
    for e in events:
        if type(e) is HandEnded and e.result.tute_seat < 0:
            assert sum(e.result.card_points) + 10 == 130
            assert sum(e.result.totals) == 130 + sum(e.result.cante_points)
        if type(e) is CardPlayed:
            assert old.hands[e.seat] >> e.card & 1
        for seat in [*range(n), None]:
            allowed = may_see(old, seat) | may_see(new, seat)
            if action is not None and action < 40:
                allowed |= 1 << action
            for ev in events:
                if type(ev) is CardPlayed:
                    allowed |= 1 << ev.card
                if type(ev) is TuteDeclared:  # a tute shows the declarer's four cards (§3)
                    assert old.hands[ev.seat] & ev.cards == ev.cards
                    allowed |= ev.cards
            shown = visible_cards(redact(e, seat))
            assert shown & ~allowed == 0, f"{type(e).__name__} shows a hidden card to {seat}"
    if type(events[-1]) is MatchEnded:
        assert new.status == "over" and new.winners == events[-1].winners


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=any_rules(), seed=st.integers(0, 2**32 - 1))
def test_random_matches_keep_every_invariant(rules: Rules, seed: int) -> None:
    play_match(rules, seed, check=True)


@settings(max_examples=40, deadline=None)
@given(rules=any_rules(), seed=st.integers(0, 2**32 - 1))
def test_matches_replay_to_the_same_events(rules: Rules, seed: int) -> None:
    log1, end1 = play_match(rules, seed, check=False)
    log2, end2 = play_match(rules, seed, check=False)
    assert log1 == log2
    assert end1 == end2


def test_every_preset_plays_to_the_end() -> None:
    for name, rules in PRESETS.items():
        for seed in range(3):
            _, end = play_match(dataclasses.replace(rules), seed, check=True)
            assert end.winners, name
