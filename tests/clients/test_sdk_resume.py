"""``watch()`` across a server restart (Redis store) and a switch of replica: every event
once, in order, no gap; a seat resumed in a new client from exported tokens and a saved
model."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from clients import Table, TuteClient
from service.server import Server, create_server
from tests.support.redis import RedisProcess, running_redis
from tute.v1 import table_pb2, view_pb2

from ..support.replicas import start_replicas
from .conftest import QUICK
from .helpers import Gate, comparable


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisProcess]:
    with running_redis(tmp_path / "redis") as proc:
        yield proc


class Seq:
    """The highest sequence number any watcher delivered, with a way to wait for one."""

    def __init__(self) -> None:
        self.last = 0
        self.changed = asyncio.Event()

    def saw(self, seq: int) -> None:
        self.last = max(self.last, seq)
        self.changed.set()

    async def reach(self, seq: int) -> None:
        async with asyncio.timeout(30):
            while self.last < seq:
                self.changed.clear()
                await self.changed.wait()


async def _follow(
    client: TuteClient,
    table_id: str,
    rng: random.Random | None,
    seq: Seq,
    hold: asyncio.Event | None = None,
) -> list[int]:
    """Watch (and, with ``rng``, play random legal actions, each once ``hold`` is set) until
    the match ends."""
    delivered: list[int] = []
    async for update in client.watch(table_id, spectator=rng is None):
        if update.event is not None:
            delivered.append(update.event.sequence)
            seq.saw(update.event.sequence)
        table = update.table
        if table.finished:
            return delivered
        if rng is not None and table.legal_actions:
            if hold is not None:
                await hold.wait()
            await client.submit(table_id=table_id, action=rng.choice(list(table.legal_actions)))
    raise AssertionError("the stream ended before the match")


def _gap_free(delivered: list[int]) -> None:
    assert delivered, "no event"
    assert delivered == list(range(delivered[0], delivered[0] + len(delivered)))


@contextlib.asynccontextmanager
async def _clients(
    targets: list[str] | list[list[str]], gate: Gate
) -> AsyncIterator[list[TuteClient]]:
    clients = [TuteClient(t, sleep=gate.sleep, connect_timeout_s=5) for t in targets]
    try:
        yield clients
    finally:
        for c in clients:
            await c.close()


async def _seat_players(clients: list[TuteClient]) -> str:
    created = await clients[0].create_table(
        preset="corriente-6",
        options={"turn_time_s": 0, "target_points": 1},
        take_seat=True,
        display_name="A",
    )
    await clients[1].join_table(table_id=created.table_id, display_name="B")
    return created.table_id


async def test_watch_survives_a_server_restart_on_redis(redis: RedisProcess) -> None:
    conf = dataclasses.replace(QUICK, store=redis.url)
    server: Server = await create_server(conf)
    address = f"127.0.0.1:{server.port}"
    gate = Gate()
    try:
        async with _clients([address] * 3, gate) as clients:
            table_id = await _seat_players(clients)
            seq = Seq()
            rng = random.Random(5)
            tasks = [
                asyncio.create_task(_follow(c, table_id, random.Random(rng.random()), seq))
                for c in clients[:2]
            ] + [asyncio.create_task(_follow(clients[2], table_id, None, seq))]
            await seq.reach(12)
            gate.open.clear()
            await server.shutdown()
            server = await create_server(dataclasses.replace(conf, port=server.port))
            gate.open.set()
            delivered = await asyncio.wait_for(asyncio.gather(*tasks), 30)
            for client, events in zip(clients, delivered, strict=True):
                _gap_free(events)
                assert events[-1] == client.tables[table_id].last_sequence
                seen = await client.get_table(table_id=table_id, spectator=client is clients[2])
                assert comparable(client.tables[table_id].view) == comparable(seen)
                assert seen.last_event_sequence == events[-1]
            assert all(c.reconnects >= 1 for c in clients)
            assert gate.delays  # they backed off
    finally:
        await server.shutdown()


async def test_watch_moves_to_another_replica(redis: RedisProcess, tmp_path: Path) -> None:
    replicas = await start_replicas(redis.url, tmp_path)
    try:
        a, b = (f"127.0.0.1:{r.port}" for r in replicas)
        gate = Gate()
        # the players and one spectator start on replica a, another spectator on b
        async with _clients([[a, b], [a, b], [a, b], [b, a]], gate) as clients:
            table_id = await _seat_players(clients)
            seq = Seq()
            rng = random.Random(9)
            play = asyncio.Event()
            play.set()
            tasks = [
                asyncio.create_task(_follow(c, table_id, random.Random(rng.random()), seq, play))
                for c in clients[:2]
            ] + [asyncio.create_task(_follow(c, table_id, None, seq)) for c in clients[2:]]
            await seq.reach(12)
            # the players wait while replica a stops (else, on a loaded machine, the match
            # could end before its streams do, and nobody would need to move)
            play.clear()
            await replicas[0].stop()  # SIGTERM: its streams end with UNAVAILABLE
            play.set()
            delivered = await asyncio.wait_for(asyncio.gather(*tasks), 30)
            for client, events in zip(clients, delivered, strict=True):
                _gap_free(events)
                assert client.target == b
            # both spectators saw the same events from the point where both were watching
            # (each began with the table as it was when its first stream opened)
            both_from = max(delivered[2][0], delivered[3][0])
            assert [e for e in delivered[2] if e >= both_from] == [
                e for e in delivered[3] if e >= both_from
            ]
            assert all(c.reconnects >= 1 for c in clients[:3])
            assert clients[3].reconnects == 0
    finally:
        for r in replicas:
            await r.stop()


async def test_a_new_client_resumes_a_seat_from_exported_tokens(address: str) -> None:
    """A process saves its tokens and model; a new one takes them, resumes the stream right
    after the saved event and plays the match to its end."""
    first = TuteClient(address)
    created = await first.create_table(
        preset="corriente-6",
        options={"turn_time_s": 0, "target_points": 1},
        take_seat=True,
        display_name="A",
    )
    table_id = created.table_id
    await first.add_bot(table_id=table_id, level="random")
    async for update in first.watch(table_id):
        if update.table.legal_actions:
            await first.submit(table_id=table_id, action=update.table.legal_actions[0])
            break
    saved_tokens = first.export_tokens()
    saved_view = first.tables[table_id].view.SerializeToString()
    assert saved_tokens[table_id]["seat"] == created.seat
    assert saved_tokens[table_id]["seat_token"] == created.seat_token
    await first.close()

    second = TuteClient(address)
    try:
        second.import_tokens(saved_tokens)
        table = Table.from_view(view_pb2.TableView.FromString(saved_view))
        resumed_after = table.last_sequence
        delivered = []
        async for update in second.watch(table_id, table=table):
            assert update.snapshot is None
            assert update.event is not None
            delivered.append(update.event.sequence)
            if update.table.finished:
                break
            if update.table.legal_actions:
                await second.submit(table_id=table_id, action=update.table.legal_actions[0])
        assert delivered[0] == resumed_after + 1
        _gap_free(delivered)
        seen = await second.get_table(table_id=table_id)
        assert comparable(table.view) == comparable(seen)
        assert seen.status == table_pb2.TABLE_STATUS_FINISHED
    finally:
        await second.close()
