"""A remote bot sees what a server-side bot sees: the engine's ``View`` rebuilt from the
wire ``TableView`` of a seat is the engine's own view of that seat, at every step of whole
matches of every table layout (played on the engine, shown through the server's
conversion)."""

from __future__ import annotations

import random

import pytest

import engine
from clients.bot import engine_action, engine_rules, engine_view, wire_action
from service import wire
from service.tables.model import FINISHED, HUMAN, PLAYING, SeatInfo, TableRecord, Visibility


def _record(state: engine.State) -> TableRecord:
    n = state.rules.players
    return TableRecord(
        table_id="t",
        preset="",
        rules=state.rules,
        visibility=Visibility.PUBLIC,
        invite_code="",
        created_at=0.0,
        seats=[SeatInfo(HUMAN, f"p{i}", f"h{i}") for i in range(n)],
        status=FINISHED if state.over else PLAYING,
        state=state,
    )


def _expected(state: engine.State, seat: int | None) -> engine.View:
    # the wire has no turn id, nor the viewer's hand at the last trick's end (-1: not known)
    v = engine.view(state, seat)._replace(turn_id=0, held_at_win=-1)
    res = v.last_result
    if res is not None and res.tute_seat >= 0:
        # the tricks of a hand ended by a tute are not on the wire
        v = v._replace(last_result=res._replace(tricks_won=(0,) * len(res.tricks_won)))
    if state.over:
        # nobody is on turn: the wire has no turn, and the leader only by its last trick
        v = v._replace(turn=v.leader)
    return v


@pytest.mark.parametrize(
    ("rules", "seed"),
    [
        (engine.Rules(players=2, target_points=101), 1),
        (engine.PRESETS["corriente-6"], 2),
        (engine.PRESETS["tres"], 3),
        (engine.Rules(players=4, target_points=101), 4),
        (engine.PRESETS["parejas-manos"], 5),
    ],
)
def test_engine_view_from_the_wire_is_the_engines_view(rules: engine.Rules, seed: int) -> None:
    rng = random.Random(seed)
    state = engine.new_match(rules, rng)
    steps = 0
    while True:
        for seat in [*range(rules.players), None]:
            msg = wire.view_to_proto(_record(state), seat)
            assert engine_view(msg) == _expected(state, seat)
            for a in msg.legal_actions:
                assert wire_action(engine_action(a)) == a
        if state.over:
            break
        seat = state.turn
        legal = engine.legal_actions(state, seat)
        # prefer declarations so that cantes, tutes and exchanges are seen
        decl = [a for a in legal if not engine.is_card(a)]
        action = decl[0] if decl and rng.random() < 0.8 else rng.choice(legal)
        state, _ = engine.apply(state, seat, action)
        steps += 1
    assert steps > 20


@pytest.mark.parametrize(
    "rules",
    [
        *engine.PRESETS.values(),
        engine.Rules(players=2, target_points=51, first_dealer=1),
        engine.Rules(players=4, tute_enabled=False, turn_time_s=20),
    ],
)
def test_engine_rules_from_the_wire_are_the_tables_rules(rules: engine.Rules) -> None:
    """A remote bot thinks with the table's own rules: every preset, and options set."""
    state = engine.new_match(rules, random.Random(7))
    msg = wire.view_to_proto(_record(state), 0)
    assert engine_rules(msg.rules) == rules
