"""Health names the Kubernetes probes check: readiness follows drain and the store, liveness
(``tute.liveness``) stays SERVING for as long as the process answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from service.server import LIVENESS_SERVICE, SERVICE_NAME, Server, create_server
from service.store import StoreUnavailable
from service.store.memory import MemoryStore

from ..service.conftest import FAST

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class FlakyStore(MemoryStore):
    """A memory store whose ping fails while ``down`` is set."""

    down = False

    async def ping(self) -> None:
        if self.down:
            raise StoreUnavailable("test: the store is down")


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[Server, FlakyStore]]:
    store = FlakyStore()
    srv = await create_server(FAST, store=store)
    try:
        yield srv, store
    finally:
        await srv.shutdown()


async def check(channel: grpc.aio.Channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    resp = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    status: int = resp.status
    return status


async def until_status(channel: grpc.aio.Channel, service: str, want: int) -> None:
    """Wait (bounded) on a Watch stream until ``service`` reports ``want``."""
    stub = health_pb2_grpc.HealthStub(channel)
    call = stub.Watch(health_pb2.HealthCheckRequest(service=service))
    try:
        async with asyncio.timeout(10):
            async for resp in call:
                if resp.status == want:
                    return
    finally:
        call.cancel()
    raise AssertionError(f"health of {service!r} never became {want}")


async def test_liveness_serving_beside_readiness(server: Server) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        assert await check(ch, LIVENESS_SERVICE) == SERVING
        assert await check(ch, "") == SERVING
        assert await check(ch, SERVICE_NAME) == SERVING


async def test_drain_turns_readiness_off_but_not_liveness(server: Server) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        await server.health.enter_graceful_shutdown()  # the first step of Server.shutdown
        assert await check(ch, "") == NOT_SERVING
        assert await check(ch, SERVICE_NAME) == NOT_SERVING
        assert await check(ch, LIVENESS_SERVICE) == SERVING
        # Drain is for good: the store watcher can no longer turn readiness back on.
        await server.health.set("", SERVING)
        assert await check(ch, "") == NOT_SERVING


async def test_store_outage_turns_readiness_off_but_not_liveness(
    flaky: tuple[Server, FlakyStore],
) -> None:
    srv, store = flaky
    async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
        store.down = True
        await until_status(ch, "", NOT_SERVING)
        assert await check(ch, SERVICE_NAME) == NOT_SERVING
        assert await check(ch, LIVENESS_SERVICE) == SERVING
        store.down = False
        await until_status(ch, "", SERVING)
        assert await check(ch, LIVENESS_SERVICE) == SERVING
