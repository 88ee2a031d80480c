"""Abuse limits over real gRPC: the per-caller token buckets (CreateTable, AddBot, invite codes,
WatchTable opens) and stream cap, the server-wide budget of bot seats, the trusted proxy header,
and the owner and seat tokens AddBot takes. Buckets are small and run on an injected clock:
time moves when a test says so, never by sleeping.

Every refusal is checked for its status, reason and RetryInfo, and for having changed nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from service.server import Server, create_server
from service.store.base import record_bytes
from service.store.memory import MemoryStore
from tests.support.clock import FakeClock
from tests.support.wait import eventually
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc, table_pb2

from .conftest import FAST
from .helpers import FINISHED, Stub, auth, error_info, view_of
from .test_errors import expect, unchanged

Code = grpc.StatusCode


@dataclasses.dataclass
class Limited:
    servers: list[Server]
    stubs: list[Stub]
    clock: FakeClock

    @property
    def server(self) -> Server:
        return self.servers[0]

    @property
    def stub(self) -> Stub:
        return self.stubs[0]


@contextlib.asynccontextmanager
async def limited(replicas: int = 1, **settings: Any) -> AsyncIterator[Limited]:
    """``replicas`` servers on one store, with ``settings`` over FAST and one test clock."""
    conf = dataclasses.replace(FAST, **settings)
    store = MemoryStore()
    clock = FakeClock()
    servers: list[Server] = []
    channels: list[grpc.aio.Channel] = []
    try:
        for _ in range(replicas):
            srv = await create_server(conf, store=store)
            srv.app.clock = clock
            servers.append(srv)
            channels.append(grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}"))
        yield Limited(servers, [service_pb2_grpc.TuteServiceStub(c) for c in channels], clock)
    finally:
        for ch in channels:
            await ch.close()  # type: ignore[call-arg]
        for srv in servers:
            await srv.shutdown()


def retry_delay(err: grpc.aio.AioRpcError) -> float | None:
    """The google.rpc.RetryInfo delay of a failed call, in seconds (None: no RetryInfo)."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return info.retry_delay.ToNanoseconds() / 1e9
    return None


async def rate_limited(call, limit: str, delay: float) -> None:
    """The call fails with RESOURCE_EXHAUSTED / RATE_LIMITED of ``limit``, retry in ``delay``."""
    err = await expect(call, Code.RESOURCE_EXHAUSTED, reason="RATE_LIMITED")
    info = error_info(err)
    assert info is not None and info.metadata["limit"] == limit
    got = retry_delay(err)
    assert got is not None, "no RetryInfo"
    assert abs(got - delay) < 0.002, (got, delay)


def join(**fields: Any) -> service_pb2.JoinTableRequest:
    return service_pb2.JoinTableRequest(display_name="p", **fields)


def create(
    take_seat: bool = False, private: bool = False, preset: str = "parejas"
) -> service_pb2.CreateTableRequest:
    return service_pb2.CreateTableRequest(
        rules=rules_pb2.Rules(preset=preset),
        take_seat=take_seat,
        display_name="p" if take_seat else "",
        visibility=table_pb2.VISIBILITY_PRIVATE if private else table_pb2.VISIBILITY_PUBLIC,
    )


def xff(value: str) -> tuple[tuple[str, str], ...]:
    return (("x-forwarded-for", value),)


# ---------------------------------------------------------------------------------------------
# CreateTable
# ---------------------------------------------------------------------------------------------


async def test_create_table_is_limited_per_caller_and_says_when_to_retry() -> None:
    async with limited(create_rate_per_s=0.5, create_burst=2) as env:
        stub, store = env.stub, env.server.store
        for _ in range(2):
            await stub.CreateTable(create())
        counts = await store.count_tables()
        await rate_limited(stub.CreateTable(create(take_seat=True)), "create_table", 2.0)
        assert await store.count_tables() == counts  # nothing was created
        env.clock.advance(1.5)
        await rate_limited(stub.CreateTable(create()), "create_table", 0.5)
        env.clock.advance(0.5)
        await stub.CreateTable(create())
        await rate_limited(stub.CreateTable(create()), "create_table", 2.0)
        assert (await store.count_tables())["waiting"] == 3


async def test_the_buckets_are_shared_by_every_replica() -> None:
    async with limited(replicas=2, create_rate_per_s=0.1, create_burst=2) as env:
        one, two = env.stubs
        await one.CreateTable(create())
        await two.CreateTable(create())
        await rate_limited(one.CreateTable(create()), "create_table", 10.0)
        await rate_limited(two.CreateTable(create()), "create_table", 10.0)


# ---------------------------------------------------------------------------------------------
# The caller's address: the trusted proxy header
# ---------------------------------------------------------------------------------------------


async def test_a_forwarded_address_is_ignored_unless_the_header_is_configured() -> None:
    async with limited(create_rate_per_s=0.01, create_burst=1) as env:
        await env.stub.CreateTable(create(), metadata=xff("198.51.100.1"))
        # another claimed address changes nothing: the caller is the peer, 127.0.0.1
        await rate_limited(
            env.stub.CreateTable(create(), metadata=xff("198.51.100.2")), "create_table", 100.0
        )


async def test_a_forwarded_address_from_an_untrusted_peer_is_ignored() -> None:
    async with limited(
        create_rate_per_s=0.01,
        create_burst=1,
        trusted_proxy_header="x-forwarded-for",
        trusted_proxies="10.0.0.0/8",
    ) as env:
        await env.stub.CreateTable(create(), metadata=xff("198.51.100.1"))
        await rate_limited(
            env.stub.CreateTable(create(), metadata=xff("198.51.100.2")), "create_table", 100.0
        )


async def test_behind_a_trusted_proxy_the_right_most_untrusted_address_is_the_caller() -> None:
    async with limited(
        create_rate_per_s=0.01, create_burst=1, trusted_proxy_header="X-Forwarded-For"
    ) as env:
        stub = env.stub  # its peer, 127.0.0.1, is a trusted proxy by default
        await stub.CreateTable(create(), metadata=xff("198.51.100.1"))
        await stub.CreateTable(create(), metadata=xff("198.51.100.2"))
        await rate_limited(
            stub.CreateTable(create(), metadata=xff("198.51.100.1")), "create_table", 100.0
        )
        # what a client wrote to the left of the address its proxy saw proves nothing
        await rate_limited(
            stub.CreateTable(create(), metadata=xff("203.0.113.9, 198.51.100.2")),
            "create_table",
            100.0,
        )
        # trusted proxies (a private network) on the right are skipped
        await stub.CreateTable(create(), metadata=xff("203.0.113.7, 10.1.2.3"))
        await rate_limited(
            stub.CreateTable(create(), metadata=xff("203.0.113.7")), "create_table", 100.0
        )
        # an IPv6 caller counts by its /64
        await stub.CreateTable(create(), metadata=xff("2001:db8:1:2::1"))
        await rate_limited(
            stub.CreateTable(create(), metadata=xff("[2001:db8:1:2:ffff::9]:443")),
            "create_table",
            100.0,
        )
        # without the header, the proxy itself is the caller
        await stub.CreateTable(create())
        await rate_limited(stub.CreateTable(create()), "create_table", 100.0)


# ---------------------------------------------------------------------------------------------
# AddBot: the owner token and seat tokens, the bucket, the server-wide budget
# ---------------------------------------------------------------------------------------------


async def test_add_bot_takes_the_owner_token_or_a_seat_token_of_that_table() -> None:
    async with limited() as env:
        stub = env.stub
        for private in (False, True):
            mine = await stub.CreateTable(create(take_seat=True, private=private))
            other = await stub.CreateTable(create(take_seat=True))
            tid = mine.table_id
            assert mine.owner_token and mine.owner_token != mine.seat_token
            add = service_pb2.AddBotRequest(table_id=tid)
            async with unchanged(stub, tid, {0: mine.seat_token}):
                await expect(stub.AddBot(add), Code.UNAUTHENTICATED, reason="TOKEN_REQUIRED")
                for foreign in (other.owner_token, other.seat_token, "not-a-token"):
                    await expect(
                        stub.AddBot(add, metadata=auth(foreign)),
                        Code.PERMISSION_DENIED,
                        reason="NOT_SEATED",
                    )
            if private:  # a player who joined by invite code may add bots too
                joined = await stub.JoinTable(join(invite_code=mine.invite_code))
                added = await stub.AddBot(add, metadata=auth(joined.seat_token))
            else:
                added = await stub.AddBot(add, metadata=auth(mine.seat_token))
            assert added.table.seats[added.seat].occupant == table_pb2.OCCUPANT_KIND_BOT
            added = await stub.AddBot(add, metadata=auth(mine.owner_token))
            assert added.table.seats[added.seat].occupant == table_pb2.OCCUPANT_KIND_BOT
            # the owner token opens no seat, and the store keeps only its hash
            await expect(
                stub.GetTable(
                    service_pb2.GetTableRequest(table_id=tid), metadata=auth(mine.owner_token)
                ),
                Code.PERMISSION_DENIED,
                reason="NOT_SEATED",
            )
            found = await env.server.store.load(tid)
            assert found is not None and mine.owner_token.encode() not in record_bytes(found[1])


async def test_add_bot_is_limited_per_caller() -> None:
    async with limited(bot_rate_per_s=0.25, bot_burst=2) as env:
        stub = env.stub
        t = await stub.CreateTable(create())
        add = service_pb2.AddBotRequest(table_id=t.table_id)
        md = auth(t.owner_token)
        for _ in range(2):
            await stub.AddBot(add, metadata=md)
        async with unchanged(stub, t.table_id, {}):
            await rate_limited(stub.AddBot(add, metadata=md), "add_bot", 4.0)
        env.clock.advance(4.0)
        await stub.AddBot(add, metadata=md)
        assert (await view_of(stub, t.table_id, None)).status == table_pb2.TABLE_STATUS_WAITING


async def test_the_bot_seats_of_the_whole_store_are_budgeted() -> None:
    async with limited(replicas=2, max_bot_seats=3) as env:
        one, two = env.stubs
        a = await one.CreateTable(create())
        b = await two.CreateTable(create())
        for _ in range(2):
            await one.AddBot(
                service_pb2.AddBotRequest(table_id=a.table_id), metadata=auth(a.owner_token)
            )
        await two.AddBot(
            service_pb2.AddBotRequest(table_id=b.table_id), metadata=auth(b.owner_token)
        )
        for stub, t in ((one, a), (two, b), (two, a)):
            async with unchanged(stub, t.table_id, {}):
                await expect(
                    stub.AddBot(
                        service_pb2.AddBotRequest(table_id=t.table_id), metadata=auth(t.owner_token)
                    ),
                    Code.RESOURCE_EXHAUSTED,
                    reason="TOO_MANY_BOTS",
                )
        # a's match starts with two humans beside its bots: the bots still count
        humans = [await one.JoinTable(join(table_id=a.table_id)) for _ in range(2)]
        assert (await view_of(one, a.table_id, None)).status == table_pb2.TABLE_STATUS_PLAYING
        await expect(
            two.AddBot(
                service_pb2.AddBotRequest(table_id=b.table_id), metadata=auth(b.owner_token)
            ),
            Code.RESOURCE_EXHAUSTED,
            reason="TOO_MANY_BOTS",
        )
        # a human leaves: a's match is forfeited and over, its bots play no more
        await one.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=a.table_id), metadata=auth(humans[0].seat_token)
        )
        assert (await view_of(one, a.table_id, None)).status == FINISHED
        for _ in range(2):
            await two.AddBot(
                service_pb2.AddBotRequest(table_id=b.table_id), metadata=auth(b.owner_token)
            )
        await expect(
            one.AddBot(
                service_pb2.AddBotRequest(table_id=b.table_id), metadata=auth(b.owner_token)
            ),
            Code.RESOURCE_EXHAUSTED,
            reason="TOO_MANY_BOTS",
        )


# ---------------------------------------------------------------------------------------------
# Invite codes
# ---------------------------------------------------------------------------------------------


async def test_unknown_invite_codes_use_the_bucket_up_and_known_ones_do_not() -> None:
    async with limited(invite_rate_per_s=0.1, invite_burst=3) as env:
        stub = env.stub
        t = await stub.CreateTable(create(take_seat=True, private=True))
        wrong = "".join(reversed(t.invite_code))
        assert wrong != t.invite_code
        for _ in range(3):
            await expect(
                stub.JoinTable(join(invite_code=wrong)), Code.NOT_FOUND, reason="INVITE_NOT_FOUND"
            )
        async with unchanged(stub, t.table_id, {0: t.seat_token}):
            await rate_limited(stub.JoinTable(join(invite_code=wrong)), "invite", 10.0)
            # while the bucket is empty even the right code waits: guessing stays slow
            await rate_limited(stub.JoinTable(join(invite_code=t.invite_code)), "invite", 10.0)
        env.clock.advance(10.0)
        # one token back: the right code joins and gives it back, so it can join again
        for _ in range(2):
            await stub.JoinTable(join(invite_code=t.invite_code))
        await expect(
            stub.JoinTable(join(invite_code=wrong)), Code.NOT_FOUND, reason="INVITE_NOT_FOUND"
        )
        await rate_limited(stub.JoinTable(join(invite_code=wrong)), "invite", 10.0)


# ---------------------------------------------------------------------------------------------
# WatchTable
# ---------------------------------------------------------------------------------------------


async def opened(call) -> None:
    msg = await asyncio.wait_for(call.read(), 10)
    assert msg.HasField("snapshot")


async def test_stream_opens_are_limited_per_caller_and_a_seat_keeps_its_own_room() -> None:
    async with limited(watch_rate_per_s=0.5, watch_burst=3, max_streams_per_caller=2) as env:
        stub, limits = env.stub, env.server.app.limits
        t = await stub.CreateTable(create(take_seat=True))
        watch = service_pb2.WatchTableRequest(table_id=t.table_id)
        spectators = [stub.WatchTable(watch) for _ in range(2)]
        for call in spectators:
            await opened(call)
        await expect(
            stub.WatchTable(watch).read(), Code.RESOURCE_EXHAUSTED, reason="TOO_MANY_STREAMS"
        )
        # the seated player, from the same address, still opens its streams
        seat = stub.WatchTable(watch, metadata=auth(t.seat_token))
        await opened(seat)
        assert (await view_of(stub, t.table_id, None)).seats[0].connected
        # a closed stream makes room; the bucket (3 opens, one per 2 s) then says no
        spectators.pop().cancel()
        await eventually(lambda: sum(limits.streams.values()) == 2)
        spectators.append(stub.WatchTable(watch))
        await opened(spectators[-1])
        spectators.pop().cancel()
        await eventually(lambda: sum(limits.streams.values()) == 2)
        err = await expect(
            stub.WatchTable(watch).read(), Code.RESOURCE_EXHAUSTED, reason="RATE_LIMITED"
        )
        assert retry_delay(err) == 2.0
        env.clock.advance(2.0)
        spectators.append(stub.WatchTable(watch))
        await opened(spectators[-1])
        for call in [*spectators, seat]:
            call.cancel()
        await eventually(lambda: not limits.streams)
