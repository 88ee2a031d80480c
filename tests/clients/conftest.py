"""Fixtures for the client tests: a real server on loopback (port 0) and its address."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from service.server import Server, create_server

from ..service.conftest import FAST


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = await create_server(FAST)
    try:
        yield srv
    finally:
        await srv.shutdown()


@pytest.fixture
def address(server: Server) -> str:
    return f"127.0.0.1:{server.port}"
