"""``tute play``'s menu (against bots, by invite code, from the lobby), the spectator's view
of ``tute watch`` and the turn clock, driven through Pilot against a real server process."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Static

from clients import Table, TuteClient
from clients.cards import SUIT_NAMES
from clients.play import JoinTable, PlayApp, Spectate
from service import wire

from ..support.replicas import Replica
from .helpers import until
from .test_snapshot import DECLARE_RULES, _declare, _position, _record

SIZE = (100, 46)


@pytest.fixture
async def address(tmp_path: Path) -> AsyncIterator[str]:
    server = Replica("server", "memory", tmp_path)
    await server.wait_ready()
    try:
        yield f"127.0.0.1:{server.port}"
    finally:
        await server.stop()


def _text(app: PlayApp, selector: str) -> str:
    return str(app.query_one(selector, Static).content)


def _seated(app: PlayApp, table_id: str) -> Callable[[], bool]:
    def seated() -> bool:
        t = app.table
        return t is not None and t.table_id == table_id and t.my_seat is not None

    return seated


async def test_the_menu_creates_a_table_against_bots(address: str) -> None:
    client = TuteClient(address)
    app = PlayApp(client)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for wid, value in (("#name", "Ana"), ("#preset", "tres"), ("#turn-time", "45")):
            app.screen.query_one(wid, Input).value = value
        await pilot.click("#new")
        await until(app.changed, lambda: app.table is not None and app.table.playing)
        table = app.table
        assert table is not None
        assert table.view.rules.preset == "tres" and table.view.rules.options.turn_time_s == 45
        assert [s.bot_level for s in table.view.seats] == ["", "random", "random"]
        assert table.seat_name(table.my_seat or 0) == "Ana"
        assert len(table.hand) == 13
    await client.close()


async def test_the_menu_joins_by_invite_code_and_from_the_lobby(address: str) -> None:
    host = TuteClient(address)
    private = await host.create_table(
        preset="corriente-6", private=True, take_seat=True, display_name="Bea"
    )
    public = await TuteClient(address).create_table(
        preset="parejas", take_seat=True, display_name="Carlos"
    )
    for target, how in ((private.table_id, "invite"), (public.table_id, "lobby")):
        client = TuteClient(address)
        app = PlayApp(client)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            if how == "invite":
                app.screen.query_one("#invite", Input).value = private.invite_code
                await pilot.click("#join")
            else:
                lobby = app.screen.query_one("#lobby", DataTable)
                assert lobby.row_count == 1  # the private table is not listed
                row = lobby.get_row_index(public.table_id)
                lobby.move_cursor(row=row)
                lobby.focus()
                await pilot.press("enter")
            await until(app.changed, _seated(app, target))
            assert client.seat_tokens[target]
            assert any(f"you sit at seat 1 of table {target}" in line for line in app.log_lines)
        await client.close()
    await host.close()


async def test_a_spectator_sees_the_table_without_a_hand(address: str) -> None:
    players = [TuteClient(address), TuteClient(address)]
    created = await players[0].create_table(
        preset="corriente-6", options={"turn_time_s": 0}, take_seat=True, display_name="Ana"
    )
    await players[1].join_table(table_id=created.table_id, display_name="Bea")
    client = TuteClient(address)
    app = PlayApp(client, Spectate(created.table_id))
    async with app.run_test(size=SIZE) as pilot:
        await until(app.changed, lambda: app.table is not None and app.table.playing)
        view = await players[0].get_table(table_id=created.table_id)
        mover = players[0] if view.turn_seat == view.my_seat else players[1]
        mine = await mover.get_table(table_id=created.table_id)
        await mover.submit(table_id=created.table_id, action=mine.legal_actions[0])
        name = mine.seats[mine.my_seat].display_name
        await until(
            app.changed, lambda: any(line.startswith(f"{name} plays") for line in app.log_lines)
        )
        await pilot.pause()
        assert app.table is not None and app.table.my_seat is None and not app.table.hand
        assert _text(app, "#hand-empty") == "(spectating: no hand)"
        assert "Ana" in _text(app, "#seats") and "Bea" in _text(app, "#seats")
        assert len(app.table.trick) == 1
    await client.close()
    for p in players:
        await p.close()


async def test_the_turn_clock_counts_down(address: str) -> None:
    """On an injected clock: the seconds left follow the deadline the server set."""
    other = TuteClient(address)
    created = await other.create_table(
        preset="corriente-6", options={"turn_time_s": 30}, take_seat=True, display_name="Bea"
    )
    now = [time.time()]
    client = TuteClient(address)
    app = PlayApp(
        client, JoinTable(table_id=created.table_id, name="Ana"), clock=lambda: now[0], tick_s=3600
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(app.changed, lambda: app.table is not None and app.table.deadline is not None)
        assert app.table is not None and app.table.deadline is not None
        now[0] = app.table.deadline - 25.2
        app.tick()
        await pilot.pause()
        assert _text(app, "#turn").endswith("· 26 s left")
        now[0] = app.table.deadline - 4.5
        app.tick()
        await pilot.pause()
        assert _text(app, "#turn").endswith("· 5 s left")
        now[0] = app.table.deadline + 1
        app.tick()
        await pilot.pause()
        assert _text(app, "#turn").endswith("· 0 s left")
    await client.close()
    await other.close()


async def test_the_declaration_buttons_and_keys_send_their_actions(address: str) -> None:
    """A fixed position where the caller may sing and exchange (the snapshot's): each button
    and each key sends its action; the server refuses them (no such table) and the log names
    the action sent."""
    state = _position(DECLARE_RULES, _declare)
    view = wire.view_to_proto(_record(state, bots=True), 0)
    client = TuteClient(address)
    app = PlayApp(client, menu=False)
    async with app.run_test(size=SIZE) as pilot:
        app.table_id = view.table_id
        app.show(Table.from_view(view))
        await pilot.pause()
        sung = next(a.sing for a in view.legal_actions if a.HasField("sing"))
        assert app.query_one(f"#sing-{int(sung)}").display
        assert app.query_one("#exchange").display
        assert not app.query_one("#tute-12").display
        for press in (f"#sing-{int(sung)}", "#exchange", "c", "x", "t"):
            before = len(app.log_lines)
            if press.startswith("#"):
                await pilot.click(press)
            else:
                await pilot.press(press)
            await until(
                app.changed,
                lambda n=before: (
                    len(app.log_lines) > n  # type: ignore[misc]
                    and not app.submitting
                ),
            )
            line = app.log_lines[-1]
            if press == "t":
                assert line == "nothing to declare tute now"
            elif press in ("x", "#exchange"):
                assert line.startswith("✗ exchange the trump card refused: TABLE_NOT_FOUND")
            else:
                assert line.startswith(f"✗ sing in {SUIT_NAMES[sung]} refused: TABLE_NOT_FOUND")
    await client.close()
