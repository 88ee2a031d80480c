"""Fixtures for the matchmaking tests: one real ``redis-server`` per module, flushed per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.redis import RedisClusterProcess, RedisProcess, running_cluster, running_redis


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


@pytest.fixture(scope="module")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterProcess]:
    """A real three-primary Redis Cluster."""
    with running_cluster(Path(tmp_path_factory.mktemp("cluster"))) as cluster:
        yield cluster


@pytest.fixture
def redis_cluster_url(redis_cluster: RedisClusterProcess) -> str:
    """The store URL of an empty Redis Cluster."""
    redis_cluster.flushall()
    return redis_cluster.url
