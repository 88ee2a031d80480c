"""Pytest fixtures of real Redis servers for the test packages that import them in their
``conftest.py``: one ``redis-server`` per module and one three-primary Redis Cluster per
session (each started when a test asks for it), flushed before each test. No test may stop a
node of the shared cluster (the failover tests start clusters of their own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from .redis import RedisClusterProcess, RedisProcess, running_cluster, running_redis


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


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterProcess]:
    """A real three-primary Redis Cluster, shared by the tests of one worker."""
    with running_cluster(Path(tmp_path_factory.mktemp("cluster"))) as cluster:
        yield cluster


@pytest.fixture
def redis_cluster_url(redis_cluster: RedisClusterProcess) -> str:
    """The store URL of an empty Redis Cluster."""
    redis_cluster.flushall()
    return redis_cluster.url
