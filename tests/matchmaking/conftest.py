"""Fixtures for the matchmaking tests: one real ``redis-server`` per module, flushed per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.redis import RedisProcess, running_redis


@pytest.fixture(scope="module")
def redis_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    with running_redis(Path(tmp_path_factory.mktemp("redis"))) as proc:
        yield proc


@pytest.fixture
def redis_url(redis_proc: RedisProcess) -> str:
    """The URL of an empty Redis database."""
    with redis.Redis.from_url(redis_proc.url) as client:
        client.flushall()
    return redis_proc.url
