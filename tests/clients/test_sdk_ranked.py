"""Players and ranked play from the SDK (``create_player``, ``find_match``, the profile and
list calls) and the terminal client's ``--ranked`` queueing (its guest kept in the player
file), against a real server on loopback."""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
from pathlib import Path

import pytest

from clients import TuteClient
from clients.cli import _find_match, _player_token
from clients.errors import InvalidArgument, Unauthenticated


async def test_four_clients_find_one_ranked_table(address: str) -> None:
    clients = [TuteClient(address) for _ in range(4)]
    try:
        for i, c in enumerate(clients):
            made = await c.create_player(f"Jugador {i}")
            assert c.player_token == made.player_token
        seen: list[int] = []
        async with asyncio.timeout(30):
            matched = await asyncio.gather(
                *(c.find_match("4p", on_progress=lambda w: seen.append(w.window)) for c in clients)
            )
        assert len({m.table_id for m in matched}) == 1
        assert sorted(m.seat for m in matched) == [0, 1, 2, 3]
        assert seen and set(seen) == {100}
        table_id = matched[0].table_id
        for c, m in zip(clients, matched, strict=True):
            view = await c.get_table(table_id=table_id)
            assert view.my_seat == m.seat  # the player token opens the seat
        me = (await clients[0].get_player()).player
        assert me.display_name == "Jugador 0"
        assert me.player_id in [s.player_id for s in view.seats]
        board = await clients[0].list_leaderboard("4p", page_size=10)
        assert list(board.entries) == []  # nobody has finished a ranked match
        history = await clients[0].list_matches(me.player_id)
        assert list(history.matches) == []
    finally:
        for c in clients:
            await c.close()


async def test_find_match_refuses_an_unknown_mode_and_needs_a_player_token(address: str) -> None:
    async with TuteClient(address) as c:
        with pytest.raises(ValueError, match="player token"):
            await c.find_match("4p")
        c.player_token = secrets.token_urlsafe(24)
        with pytest.raises(Unauthenticated):  # no player of this server
            await c.find_match("4p")
        await c.create_player("Ana")
        with pytest.raises(InvalidArgument) as err:
            await c.find_match("5p")
        assert err.value.field == "mode"


async def test_the_terminal_client_queues_for_a_ranked_table(
    address: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cli = TuteClient(address)
    other = TuteClient(address)
    await other.create_player("Rival")
    player_file = tmp_path / "tute" / "player.json"
    try:
        args = argparse.Namespace(
            ranked="2p", player_token="", player_file=str(player_file), name="Terminal"
        )
        async with asyncio.timeout(30):
            table_id, theirs = await asyncio.gather(_find_match(cli, args), other.find_match("2p"))
        assert table_id == theirs.table_id
        assert cli.seat_tokens[table_id] == cli.player_token
        out = capsys.readouterr().out
        assert "queued for 2p" in out and f"matched: table {table_id}" in out
        assert "new guest player" in out
        assert cli.player_token is not None and cli.player_token not in out  # never printed
        kept = json.loads(player_file.read_text())
        assert kept[cli.target]["player_token"] == cli.player_token
        assert player_file.stat().st_mode & 0o077 == 0  # private to its user
        me = (await cli.get_player()).player
        assert (me.display_name, me.player_id) == ("Terminal", kept[cli.target]["player_id"])
        # the next run plays as the same guest
        again = TuteClient(address)
        try:
            token = await _player_token(again, args)
            assert token == cli.player_token
        finally:
            await again.close()
    finally:
        await cli.close()
        await other.close()
