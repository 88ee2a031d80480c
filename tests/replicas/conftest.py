"""Fixtures for the replica tests: a real ``redis-server`` (or a real three-node Redis
Cluster) and two ``tute-server`` replicas on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ..support.redis import RedisClusterProcess, RedisProcess, running_cluster, running_redis
from ..support.replicas import Replica, start_replicas


@pytest.fixture
def redis_proc(tmp_path: Path) -> Iterator[RedisProcess]:
    with running_redis(tmp_path / "redis") as proc:
        yield proc


@pytest.fixture
async def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Replica]]:
    """Two replicas on one Redis (their logs are in the test's tmp_path); parametrized
    indirectly with ``"cluster"``, on a three-node Redis Cluster."""
    backend = getattr(request, "param", "redis")
    store: RedisProcess | RedisClusterProcess = request.getfixturevalue(
        "redis_proc" if backend == "redis" else "redis_cluster"
    )
    started = await start_replicas(store.url, tmp_path)
    try:
        yield started
    finally:
        for r in started:
            await r.stop()


@pytest.fixture
def redis_cluster(tmp_path: Path) -> Iterator[RedisClusterProcess]:
    with running_cluster(tmp_path / "cluster") as cluster:
        yield cluster
