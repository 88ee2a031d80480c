"""Ranked play from the SDK (``find_match``) and the terminal client's ``--ranked`` queueing,
against a real server on loopback."""

from __future__ import annotations

import argparse
import asyncio
import secrets

import pytest

from clients import TuteClient
from clients.cli import _find_match
from clients.errors import InvalidArgument


async def test_four_clients_find_one_ranked_table(address: str) -> None:
    clients = [TuteClient(address) for _ in range(4)]
    try:
        for c in clients:
            c.player_token = secrets.token_urlsafe(24)
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
    finally:
        for c in clients:
            await c.close()


async def test_find_match_refuses_an_unknown_mode_and_needs_a_player_token(address: str) -> None:
    async with TuteClient(address) as c:
        with pytest.raises(ValueError, match="player token"):
            await c.find_match("4p")
        c.player_token = secrets.token_urlsafe(24)
        with pytest.raises(InvalidArgument) as err:
            await c.find_match("5p")
        assert err.value.field == "mode"


async def test_the_terminal_client_queues_for_a_ranked_table(
    address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = TuteClient(address)
    other = TuteClient(address)
    other.player_token = secrets.token_urlsafe(24)
    try:
        args = argparse.Namespace(ranked="2p", player_token="")
        async with asyncio.timeout(30):
            table_id, theirs = await asyncio.gather(_find_match(cli, args), other.find_match("2p"))
        assert table_id == theirs.table_id
        assert cli.seat_tokens[table_id] == cli.player_token
        out = capsys.readouterr().out
        assert "queued for 2p" in out and f"matched: table {table_id}" in out
        assert cli.player_token not in out  # the token is a secret: never printed
    finally:
        await cli.close()
        await other.close()
