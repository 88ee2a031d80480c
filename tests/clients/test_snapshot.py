"""The look of the table, reviewed as SVG screenshots (Textual's ``export_screenshot``) of
fixed positions: the committed files in ``snapshots/`` are the reference. After a change
of the look, regenerate them with ``TUTE_UPDATE_SNAPSHOTS=1`` and review the pictures.

- ``follow.svg``: 4 players, the caller follows a trick of two cards: the cards it may play
  bright, the others dimmed; the trump card held by the dealer.
- ``declare.svg``: 2 players, the caller leads after winning a trick and may sing and
  exchange the trump card: the buttons; the turned card and the stock.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

import engine
from clients import Table, TuteClient
from clients.play import PlayApp
from service import wire
from service.tables.model import BOT, HUMAN, PLAYING, SeatInfo, TableRecord, Visibility

SNAPSHOTS = Path(__file__).parent / "snapshots"
DECLARE_RULES = engine.Rules(players=2, hand_size_2p=6, turn_time_s=0)
NAMES = ("Ana", "Bea", "Carlos", "Dani")


def _position(rules: engine.Rules, want: Callable[[engine.State], bool]) -> engine.State:
    """The first state of seeded matches (cheapest card each turn) where ``want`` holds."""
    for seed in range(1000):
        state = engine.new_match(rules, seed)
        while not state.over:
            if want(state):
                return state
            legal = engine.legal_actions(state, state.turn)
            state, _ = engine.apply(state, state.turn, random.Random(seed).choice(legal))
    raise AssertionError("no such position")


def _follow(state: engine.State) -> bool:
    legal = engine.legal_actions(state, 0)
    return (
        state.turn == 0
        and len(state.trick) == 2
        and 0 < len(legal) < 5
        and state.hands[0].bit_count() >= 6
        and state.trick_no >= 2
    )


def _declare(state: engine.State) -> bool:
    legal = engine.legal_actions(state, 0)
    return (
        state.turn == 0
        and not state.trick
        and engine.EXCHANGE in legal
        and any(engine.SING <= a < engine.SING + 4 for a in legal)
    )


def _record(state: engine.State, bots: bool) -> TableRecord:
    n = state.rules.players
    seats = [SeatInfo(HUMAN, NAMES[0], "h0")] + [
        SeatInfo(BOT, "Bot (random)", "", "random") if bots else SeatInfo(HUMAN, NAMES[i], f"h{i}")
        for i in range(1, n)
    ]
    return TableRecord(
        table_id="0123456789abcdef",
        preset="parejas" if n == 4 else "corriente-6",
        rules=state.rules,
        visibility=Visibility.PUBLIC,
        invite_code="",
        created_at=0.0,
        seats=seats,
        status=PLAYING,
        state=state,
        last_seq=42,
        version=17,
    )


@pytest.mark.parametrize(
    ("name", "rules", "want", "bots"),
    [
        ("follow", engine.Rules(players=4, turn_time_s=0), _follow, False),
        ("declare", DECLARE_RULES, _declare, True),
    ],
)
async def test_the_table_looks_as_reviewed(
    name: str,
    rules: engine.Rules,
    want: Callable[[engine.State], bool],
    bots: bool,
    tmp_path: Path,
) -> None:
    state = _position(rules, want)
    record = _record(state, bots)
    record.connected = frozenset(range(rules.players))
    view = wire.view_to_proto(record, 0)
    app = PlayApp(TuteClient("127.0.0.1:1"), menu=False)
    async with app.run_test(size=(100, 40)) as pilot:
        app.connection = "connected"
        app.say("table 0123456789abcdef created; you sit at seat 0")
        app.say(
            "✗ play Sota de copas refused: MUST_FOLLOW_SUIT: must follow suit (oros led)",
            style="bold red",
        )
        app.show(Table.from_view(view))
        # the screen once it has settled: two pictures in a row alike (a busy machine may
        # need more than one pause to lay it out), bounded
        svg = ""
        for _ in range(50):
            await pilot.pause()
            await pilot.wait_for_scheduled_animations()
            shot = app.export_screenshot(title=f"tute: {name}")
            if shot == svg:
                break
            svg = shot
    reference = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("TUTE_UPDATE_SNAPSHOTS"):
        reference.write_text(svg)
    assert reference.exists(), f"no reference {reference}: run with TUTE_UPDATE_SNAPSHOTS=1"
    if svg != reference.read_text():
        (tmp_path / f"{name}.svg").write_text(svg)
        raise AssertionError(
            f"the screen differs from {reference} (new one: {tmp_path / name}.svg); if the "
            "change is wanted, run with TUTE_UPDATE_SNAPSHOTS=1 and review the picture"
        )
