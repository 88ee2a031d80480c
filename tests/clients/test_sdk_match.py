"""The SDK plays whole matches on a real server: four SDK clients at one table, each
playing from its own stream, with its model equal to the server's view at every turn."""

from __future__ import annotations

import asyncio
import random

import pytest

from clients import TuteClient
from service.server import Server

from .helpers import SHORT_4P, comparable


async def _play(client: TuteClient, table_id: str, rng: random.Random) -> list[int]:
    """Play random legal actions from the stream; check the model at each of our turns."""
    sequences: list[int] = []
    async for update in client.watch(table_id):
        if update.event is not None:
            sequences.append(update.event.sequence)
        table = update.table
        if table.finished:
            break
        if table.legal_actions:
            seen = await client.get_table(table_id=table_id)
            assert comparable(table.view) == comparable(seen)
            action = rng.choice(list(table.legal_actions))
            await client.submit(table_id=table_id, action=action)
    return sequences


@pytest.mark.parametrize(
    ("preset", "options", "seed"),
    [
        ("parejas", SHORT_4P, 7),
        # several hands of 2 players: draws from the stock, the exchange, cantes, games
        ("corriente-6", {"turn_time_s": 0, "target_points": 101}, 3),
        ("tres", {"turn_time_s": 0, "target_points": 1}, 5),
        ("parejas-manos", {"turn_time_s": 0, "target_match_points": 2}, 11),
    ],
)
async def test_sdk_clients_play_a_whole_match(
    server: Server, address: str, preset: str, options: dict[str, int], seed: int
) -> None:
    """Every seat an SDK client (four at ``parejas``), and a spectator."""
    clients = [TuteClient(address)]
    try:
        created = await clients[0].create_table(
            preset=preset, options=options, take_seat=True, display_name="p0"
        )
        table_id = created.table_id
        players = len(created.table.seats)
        clients += [TuteClient(address) for _ in range(players - 1)]
        for i, c in enumerate(clients[1:], 1):
            joined = await c.join_table(table_id=table_id, display_name=f"p{i}")
            assert joined.seat == i and c.seats[table_id] == i
        spectator = TuteClient(address)
        clients.append(spectator)
        rng = random.Random(seed)
        # bounded, and wide: a whole match of five clients on a machine that may be busy
        async with asyncio.timeout(180):
            played = await asyncio.gather(
                *(_play(c, table_id, random.Random(rng.random())) for c in clients[:players]),
                _play(spectator, table_id, rng),
            )
        for client, sequences in zip(clients, played, strict=True):
            assert sequences == list(range(sequences[0], sequences[-1] + 1))
            table = client.tables[table_id]
            assert table.finished
            seen = await client.get_table(table_id=table_id)
            assert comparable(table.view) == comparable(seen)
            assert seen.match_result.winner_sides
        assert spectator.tables[table_id].my_seat is None
        assert not spectator.tables[table_id].hand
    finally:
        for c in clients:
            await c.close()
