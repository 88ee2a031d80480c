"""The history backends under test: SQLite in memory, SQLite in a file, and a real PostgreSQL
started for the session (a fresh database per test)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from service.durable import History, open_history

from .pgproc import PostgresProcess

_DATABASES = itertools.count(1)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresProcess]:
    pg = PostgresProcess()
    try:
        pg.start()
        yield pg
    finally:
        pg.stop()


async def fresh_postgres_url(pg: PostgresProcess) -> str:
    name = f"history_{next(_DATABASES)}"
    conn = await asyncpg.connect(pg.url)
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return pg.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite-memory", "sqlite-file", "postgresql"])
async def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty history of each backend."""
    if request.param == "sqlite-memory":
        return "memory"
    return await _url_of(request, tmp_path)


@pytest.fixture(params=["sqlite-file", "postgresql"])
async def shared_history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty history that outlives its process and can be opened twice (an
    in-memory database belongs to one connection)."""
    return await _url_of(request, tmp_path)


async def _url_of(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite-file":
        return f"sqlite://{tmp_path / 'data' / 'history.db'}"
    return await fresh_postgres_url(request.getfixturevalue("postgres"))


@pytest.fixture
async def history(history_url: str) -> AsyncIterator[History]:
    h = open_history(history_url)
    await h.start()
    try:
        yield h
    finally:
        await h.close()
