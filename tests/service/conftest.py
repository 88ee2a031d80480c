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
    grace_s=0.2,
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


SPLIT_ACROSS_BROWSERS = frozenset(
    {
        "test_a_match_of_every_preset_replays_on_the_engine",
        "test_matches_with_declarations_replay_on_the_engine",
    }
)
"""Tests run once per preset: in the default run each preset plays on one browser transport
(alternating connect and grpcweb), on both under ``slow``; native gRPC plays every one."""
ONE_BROWSER = {
    "test_no_hidden_card_reaches_any_seat_or_spectator": "connect",
    "test_stale_streams_of_players_who_left_see_nothing_of_the_next_occupants": "grpcweb",
    "test_illegal_cards_name_the_rule": "grpcweb",
}
"""The longest contract tests: on one browser transport in the default run, both under ``slow``
(the two browser transports share everything but their framing, which every other contract
test covers on both)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: dict[str, list[str]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("transport", "grpc") == "grpc":
            continue
        name = item.name.partition("[")[0]
        transport = callspec.params["transport"]
        if name in ONE_BROWSER and ONE_BROWSER[name] != transport:
            item.add_marker(pytest.mark.slow)
        elif name in SPLIT_ACROSS_BROWSERS:
            case = callspec.id.partition("-")[2]  # the preset case after the transport
            cases = seen.setdefault(name, [])
            if case not in cases:
                cases.append(case)
            keep = "connect" if cases.index(case) % 2 == 0 else "grpcweb"
            if transport != keep:
                item.add_marker(pytest.mark.slow)
