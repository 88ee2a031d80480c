"""The pyspiel adapter of the engine used by the IS-MCTS baseline."""

from __future__ import annotations

import random

from benchmarks.openspiel_tute import TuteHandGame, TuteHandState, info_key, ismcts_bot
from engine import PRESETS, apply, legal_actions, new_match, view
from engine.bots import easy_bot


def test_resampled_worlds_share_the_information_state() -> None:
    rules = PRESETS["parejas"]
    rng = random.Random(4)
    s = new_match(rules, 4)
    for _ in range(7):
        s, _ = apply(s, s.turn, rng.choice([a for a in legal_actions(s, s.turn) if a < 40]))
    game = TuteHandGame({"players": 4})
    root = TuteHandState(game, rules, s, rng)
    seat = s.turn
    worlds = [root.resample_from_infostate(seat, None) for _ in range(20)]
    assert {w.information_state_string(seat) for w in worlds} == {info_key(view(s, seat))}
    assert len({w.s.hands for w in worlds}) > 1
    assert root.legal_actions() == list(legal_actions(s, seat))


def test_ismcts_plays_a_legal_hand() -> None:
    rules = PRESETS["corriente-8"]
    rng = random.Random(2)
    s = new_match(rules, 2)
    bot = ismcts_bot(0.01)
    hand = s.hand_no
    while not s.over and s.hand_no == hand:
        v = view(s, s.turn)
        a = bot(rules, v, rng) if s.turn == 0 else easy_bot(rules, v, rng)
        assert a in v.legal
        s, _ = apply(s, s.turn, a)
    assert s.hand_no != hand or s.over
