"""Fixtures for service tests: a real server on loopback (port 0) and a client stub.

``stub`` speaks the native gRPC port; in the contract modules (:data:`CONTRACT`: the tests of
the API itself) every test that takes it runs once per transport (``transport``: ``grpc``,
``connect``, ``grpcweb``; tests/web/stub.py), so the browser's path answers exactly as the
native one."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from service.config import Settings
from service.server import Server, create_server
from tests.web.stub import TRANSPORTS, open_stub

FAST = Settings(
    host="127.0.0.1",
    port=0,
    metrics_port=0,
    http_port=-1,
    bot_delay_s=0.0,
    scheduler_poll_s=0.01,
    grace_s=0.02,
    log_format="json",
    log_level="warning",
    create_rate_per_s=0.0,
    watch_rate_per_s=0.0,
    max_streams_per_caller=0,
    bot_rate_per_s=0.0,
    invite_rate_per_s=0.0,
    matchmaking_poll_s=0.05,
)
"""Settings for tests: loopback, port 0, bots play at once, no per-caller limits (every test
client calls from 127.0.0.1; tests/service/test_limits.py sets its own). No HTTP port: a
test of a browser transport takes :func:`settings_for` it."""


def settings_for(transport: str) -> Settings:
    """FAST, with a free HTTP port for the browser transports (``connect``, ``grpcweb``)."""
    return FAST if transport == "grpc" else dataclasses.replace(FAST, http_port=0)


@pytest.fixture
async def server(transport: str) -> AsyncIterator[Server]:
    srv = await create_server(settings_for(transport))
    try:
        yield srv
    finally:
        await srv.shutdown()


@pytest.fixture
async def channel(server: Server) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        yield ch


CONTRACT = frozenset(
    {"test_matches", "test_errors", "test_resume", "test_races", "test_hidden_info"}
)
"""The modules whose ``stub`` tests run on every transport."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    if "transport" in metafunc.fixturenames and module in CONTRACT:
        metafunc.parametrize("transport", TRANSPORTS)


@pytest.fixture
def transport() -> str:
    """The transport ``stub`` speaks (outside the contract modules: native gRPC)."""
    return "grpc"


@pytest.fixture
async def stub(server: Server, transport: str) -> AsyncIterator[Any]:
    async with open_stub(server, transport) as s:
        yield s


ROTATED = frozenset({"test_matches", "test_races", "test_resume"})
"""Modules whose cases beyond the transport (presets, stores, options) are many: in the default
run each case plays on one transport, the three in turn (so every test still meets every
transport, and every case one of them); all of them under ``slow``."""
ONE_BROWSER = {
    "test_no_hidden_card_reaches_any_seat_or_spectator": "connect",
    "test_stale_streams_of_players_who_left_see_nothing_of_the_next_occupants": "grpcweb",
    "test_illegal_cards_name_the_rule": "grpcweb",
}
"""The longest contract tests: native gRPC and one browser transport in the default run, both
browser transports under ``slow`` (the two share everything but their framing, which every
other contract test covers on both)."""
ONE_TRANSPORT = {"test_the_stale_stream_check_catches_a_stream_that_lives_on": "grpc"}
"""Tests of a test's own check (it must catch a planted leak): on one transport by default."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: dict[str, list[str]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "transport" not in callspec.params:
            continue
        name = item.name.partition("[")[0]
        transport = callspec.params["transport"]
        module = item.path.stem
        if name in ONE_TRANSPORT:
            keep = {ONE_TRANSPORT[name]}
        elif name in ONE_BROWSER:
            keep = {"grpc", ONE_BROWSER[name]}
        elif module in ROTATED and len(callspec.params) > 1:
            case = callspec.id.partition("-")[2]  # the case after the transport
            cases = seen.setdefault(name, [])
            if case not in cases:
                cases.append(case)
            keep = {TRANSPORTS[cases.index(case) % len(TRANSPORTS)]}
        else:
            continue
        if transport not in keep:
            item.add_marker(pytest.mark.slow)
