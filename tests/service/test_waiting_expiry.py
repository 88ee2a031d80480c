"""Waiting tables where no human sits expire after ``waiting_ttl_s`` and free their place in
``max_tables``; a table where a human sits waits. Driven by the app's clock, moved forward by
the test (the scheduler deletes a table once its expiry is due by that clock).

:func:`expiry_scenario` runs on any store: here on memory; tests/store runs it on Redis and
on a Redis Cluster.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import grpc

from service.server import create_server
from service.store.base import Store
from service.store.memory import MemoryStore
from tests.support.clock import FakeClock
from tests.support.wait import eventually
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

from .conftest import FAST
from .helpers import auth, error_info, view_of
from .matchplay import Watcher

Code = grpc.StatusCode
TTL = 600.0


async def gone(stub: service_pb2_grpc.TuteServiceStub, table_id: str) -> bool:
    try:
        await view_of(stub, table_id, None)
    except grpc.aio.AioRpcError as exc:
        assert exc.code() == Code.NOT_FOUND, exc.details()
        return True
    return False


async def until_gone(stub: service_pb2_grpc.TuteServiceStub, *table_ids: str) -> None:
    for tid in table_ids:

        async def expired(t: str = tid) -> bool:
            return await gone(stub, t)

        await eventually(expired, what=f"table {tid} expired")


async def expiry_scenario(store: Store) -> None:
    conf = dataclasses.replace(FAST, waiting_ttl_s=TTL, max_tables=5)
    srv = await create_server(conf, store=store)
    clock = FakeClock()
    srv.app.clock = clock
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            stub = service_pb2_grpc.TuteServiceStub(ch)
            tres = rules_pb2.Rules(preset="tres", options=rules_pb2.RuleOptions(turn_time_s=0))

            async def create(**kw: Any) -> service_pb2.CreateTableResponse:
                return await stub.CreateTable(service_pb2.CreateTableRequest(rules=tres, **kw))

            empty = (await create()).table_id  # nobody sat down
            human = await create(take_seat=True, display_name="ana")  # a human waits
            only_bots = await create()  # only bots sat down
            bots = only_bots.table_id
            for _ in range(2):
                await stub.AddBot(
                    service_pb2.AddBotRequest(table_id=bots), metadata=auth(only_bots.owner_token)
                )
            left = await create(take_seat=True, display_name="bob")  # its human leaves later
            playing = await create(take_seat=True, display_name="eve")  # the match starts
            for _ in range(2):
                await stub.AddBot(
                    service_pb2.AddBotRequest(table_id=playing.table_id),
                    metadata=auth(playing.owner_token),
                )
            with_error = None
            try:
                await create()
            except grpc.aio.AioRpcError as exc:
                with_error = exc
            assert with_error is not None and with_error.code() == Code.RESOURCE_EXHAUSTED
            assert error_info(with_error).reason == "TOO_MANY_TABLES"  # type: ignore[union-attr]
            spectator = Watcher(stub, empty)
            await spectator.wait_until(lambda w: bool(w.snapshots))

            clock.advance_to(TTL / 2)
            await stub.LeaveTable(
                service_pb2.LeaveTableRequest(table_id=left.table_id),
                metadata=auth(left.seat_token),
            )  # expires at 1.5 TTL

            clock.advance_to(TTL + 1)
            await until_gone(stub, empty, bots)
            for t in (human, left, playing):
                assert not await gone(stub, t.table_id)
            # the watcher of a deleted table is told to resume, and its resume finds nothing
            await asyncio.wait_for(asyncio.shield(spectator.task), 10)
            assert spectator.error is not None
            assert spectator.error.code() == Code.UNAVAILABLE, spectator.error.details()
            resumed = Watcher(stub, empty, resume_after=spectator.last_seq)
            await asyncio.wait_for(asyncio.shield(resumed.task), 10)
            assert resumed.error is not None and resumed.error.code() == Code.NOT_FOUND
            listed = {
                t.table_id for t in (await stub.ListTables(service_pb2.ListTablesRequest())).tables
            }
            assert listed == {human.table_id, left.table_id}
            # their places are free again
            again = await create()
            assert (await view_of(stub, again.table_id, None)).status == 1  # waiting

            clock.advance_to(1.5 * TTL + 1)
            await until_gone(stub, left.table_id)
            for t in (human, playing, again):  # (``again`` expires a TTL after its creation)
                assert not await gone(stub, t.table_id)
            with_error = None
            try:
                await stub.JoinTable(
                    service_pb2.JoinTableRequest(table_id=left.table_id, display_name="late")
                )
            except grpc.aio.AioRpcError as exc:
                with_error = exc
            assert with_error is not None and with_error.code() == Code.NOT_FOUND
    finally:
        await srv.shutdown()


async def test_waiting_tables_without_a_human_expire_on_memory() -> None:
    await expiry_scenario(MemoryStore())


async def test_a_ttl_of_zero_keeps_waiting_tables() -> None:
    conf = dataclasses.replace(FAST, waiting_ttl_s=0.0)
    srv = await create_server(conf, store=MemoryStore())
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            stub = service_pb2_grpc.TuteServiceStub(ch)
            made = await stub.CreateTable(service_pb2.CreateTableRequest())
            empty = made.table_id
            await stub.AddBot(
                service_pb2.AddBotRequest(table_id=empty), metadata=auth(made.owner_token)
            )
            assert (await srv.app.load(empty)).expires_at == 0.0
            assert await srv.app.store.next_due() is None  # nothing will ever come due
    finally:
        await srv.shutdown()
