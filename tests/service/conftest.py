"""Fixtures for service tests: a real server on loopback (port 0) and a client stub."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from service.config import Settings
from service.server import Server, create_server
from tute.v1 import service_pb2_grpc

FAST = Settings(
    host="127.0.0.1",
    port=0,
    metrics_port=0,
    http_port=0,
    bot_delay_s=0.0,
    scheduler_poll_s=0.01,
    grace_s=0.2,
    log_format="json",
    log_level="warning",
    create_rate_per_s=0.0,
    watch_rate_per_s=0.0,
    max_streams_per_caller=0,
    bot_rate_per_s=0.0,
    invite_rate_per_s=0.0,
)
"""Settings for tests: loopback, port 0, bots play at once, no per-caller limits (every test
client calls from 127.0.0.1; tests/service/test_limits.py sets its own)."""


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = await create_server(FAST)
    try:
        yield srv
    finally:
        await srv.shutdown()


@pytest.fixture
async def channel(server: Server) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        yield ch


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> service_pb2_grpc.TuteServiceStub:
    return service_pb2_grpc.TuteServiceStub(channel)
