"""Fixtures for the client tests: a real server on loopback (port 0) and its address."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from service.server import Server, create_server

from ..service.conftest import FAST

QUICK = dataclasses.replace(FAST, grace_s=0.2)
"""The service tests' settings, with a short shutdown (servers restart in these tests)."""


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = await create_server(QUICK)
    try:
        yield srv
    finally:
        await srv.shutdown()


@pytest.fixture
def address(server: Server) -> str:
    return f"127.0.0.1:{server.port}"
