"""``tute play`` driven through its input (keys and clicks, Textual's Pilot) against a real
server: a whole 2-player match against a server bot ending on the final score, a refusal
shown with the server's reason, and a match that goes on after the server restarted.

The servers run as processes of their own: Pilot waits after each key until the test's
process is idle, which a server in the same process (its scheduler, its Redis reader)
never is.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from clients import TuteClient
from clients.cards import same_card
from clients.play import JoinTable, NewTable, PlayApp
from tests.support.redis import RedisProcess, running_redis
from tute.v1 import action_pb2

from ..support.replicas import Replica
from .helpers import Gate, until

SIZE = (100, 46)
SHORT = NewTable(preset="corriente-6", turn_time_s=0, name="Ana", options={"target_points": 1})


def _button(a: action_pb2.Action) -> str:
    kind = a.WhichOneof("kind")
    if kind == "sing":
        return f"#sing-{int(a.sing)}"
    if kind == "declare_tute":
        return f"#tute-{a.declare_tute.rank}"
    return "#exchange"


async def _ready(app: PlayApp, pilot: Pilot[None]) -> None:
    """Until the app may act (or the match is over), and the screen shows it."""

    def ready() -> bool:
        t = app.table
        return t is not None and (t.finished or (bool(t.legal_actions) and not app.submitting))

    await until(app.changed, ready)
    await pilot.pause()


async def play(app: PlayApp, pilot: Pilot[None], rng: random.Random, moves: int = 1000) -> int:
    """Play legal moves through the app's input until the match ends (or ``moves`` were
    made): digits, clicks on cards, the arrows and enter, and the declaration buttons."""
    made = 0
    while made < moves:
        await _ready(app, pilot)
        table = app.table
        assert table is not None
        if table.finished:
            break
        seq = table.last_sequence
        declarations = [a for a in table.legal_actions if not a.HasField("play_card")]
        if declarations and rng.random() < 0.7:
            await pilot.click(_button(declarations[0]))
        else:
            hand = list(table.hand)
            legal = [
                i for i, c in enumerate(hand) if any(same_card(c, x) for x in table.legal_cards)
            ]
            i = rng.choice(legal)
            way = rng.random()
            if way < 0.2 and abs(app.selected - i) <= 2:  # (each key costs a redraw)
                while app.selected != i:
                    await pilot.press("right" if app.selected < i else "left")
                await pilot.press("enter")
            elif way < 0.4 or i >= 10:
                await pilot.click(f"#card-{i}")
            else:
                await pilot.press(str((i + 1) % 10))
        await until(
            app.changed,
            lambda s=seq: (
                app.table is not None  # type: ignore[misc]
                and app.table.last_sequence > s
            ),
        )
        made += 1
    await pilot.pause()
    return made


def _text(app: PlayApp, selector: str) -> str:
    return str(app.query_one(selector, Static).content)


async def _server(
    tmp_path: Path, store: str = "memory", port: int = 0, name: str = "server"
) -> Replica:
    server = Replica(name, store, tmp_path, "--port", str(port))
    await server.wait_ready()
    return server


@pytest.fixture
async def address(tmp_path: Path) -> AsyncIterator[str]:
    server = await _server(tmp_path)
    try:
        yield f"127.0.0.1:{server.port}"
    finally:
        await server.stop()


async def test_a_whole_match_against_a_bot_ends_on_the_final_score(address: str) -> None:
    client = TuteClient(address)
    app = PlayApp(client, SHORT)
    async with app.run_test(size=SIZE) as pilot:
        made = await play(app, pilot, random.Random(4))
        assert made >= 20  # 2 players: 20 tricks
        table = app.table
        assert table is not None and table.finished
        result = app.query_one("#result", Static)
        assert result.display
        text = str(result.content)
        assert text.startswith("Match over: ")
        assert "Ana: " in text and "Bot (random): " in text
        standing = {
            side_line.split(":")[0].strip(): side_line for side_line in text.splitlines()[1:]
        }
        for s in table.view.match_result.scores:
            name = "Ana" if s.side == table.my_seat else "Bot (random)"
            assert f"{s.game_score} points" in standing[name]
        assert "match over" in app.log_lines[-1]
        assert "Match over" in _text(app, "#turn").replace("match over", "Match over")
        await pilot.press("l")  # the last trick, on demand
        box = app.query_one("#trick-box")
        last = table.last_trick
        assert last is not None
        assert box.border_title == f"last trick: 20, won by {table.seat_name(last.winner)}"
        assert app.query_one("#played-1").display  # both of its cards are shown
    await client.close()


async def test_a_refused_action_shows_the_servers_reason(address: str) -> None:
    """The app's player presses a card while the other player (an SDK client) is on turn."""
    other = TuteClient(address)
    created = await other.create_table(
        preset="corriente-6", options={"turn_time_s": 0}, take_seat=True, display_name="Bea"
    )
    client = TuteClient(address)
    app = PlayApp(client, JoinTable(table_id=created.table_id, name="Ana"))
    async with app.run_test(size=SIZE) as pilot:
        await until(
            app.changed,
            lambda: app.table is not None and app.table.playing and app.table.turn_seat is not None,
        )
        if app.table is not None and app.table.my_turn:
            await play(app, pilot, random.Random(1), moves=1)  # now Bea follows
        await until(
            app.changed, lambda: app.table is not None and app.table.turn_seat == created.seat
        )
        before = app.table.last_sequence if app.table else 0
        await pilot.press("1")
        await until(app.changed, lambda: any("refused" in line for line in app.log_lines))
        line = next(line for line in app.log_lines if "refused" in line)
        assert "NOT_YOUR_TURN" in line
        assert "it is not this seat's turn to play" in line
        view = await other.get_table(table_id=created.table_id)
        assert view.last_event_sequence == before and view.turn_seat == created.seat
    await client.close()
    await other.close()


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisProcess]:
    with running_redis(tmp_path / "redis") as proc:
        yield proc


async def test_the_app_goes_on_after_the_server_restarts(
    redis: RedisProcess, tmp_path: Path
) -> None:
    server = await _server(tmp_path, redis.url)
    gate = Gate()
    client = TuteClient(f"127.0.0.1:{server.port}", sleep=gate.sleep)
    app = PlayApp(client, SHORT)
    rng = random.Random(8)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await play(app, pilot, rng, moves=3)
            gate.open.clear()
            await server.stop()  # SIGTERM: the stream ends with UNAVAILABLE
            await until(app.changed, lambda: "connection lost" in _text(app, "#top"))
            server = await _server(tmp_path, redis.url, server.port, "restarted")
            gate.open.set()
            await play(app, pilot, rng)
            assert app.table is not None and app.table.finished
            assert _text(app, "#result").startswith("Match over")
            assert any(line.startswith("connection lost") for line in app.log_lines)
            assert any(line.startswith("connection back") for line in app.log_lines)
            assert "connected" in _text(app, "#top")
    finally:
        await client.close()
        await server.stop()
