"""Fixtures for the replica tests: a real ``redis-server`` and two ``tute-server`` replicas."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ..store.redisproc import RedisProcess
from .cluster import Replica, start_replicas


@pytest.fixture
def redis_proc(tmp_path: Path) -> Iterator[RedisProcess]:
    proc = RedisProcess(tmp_path / "redis").start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
async def replicas(redis_proc: RedisProcess, tmp_path: Path) -> AsyncIterator[list[Replica]]:
    """Two replicas on one Redis (their logs are in the test's tmp_path)."""
    started = await start_replicas(redis_proc.url, tmp_path)
    try:
        yield started
    finally:
        for r in started:
            await r.stop()
