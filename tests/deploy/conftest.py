"""Fixtures for the deployment tests: a real in-process server on loopback (port 0)."""

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
