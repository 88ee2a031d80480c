"""Fixtures for the matchmaking tests: one real ``redis-server`` per module, flushed per test."""

from tests.support.redis_fixtures import (  # the fixtures this package's tests use
    redis_cluster,
    redis_cluster_url,
    redis_proc,
    redis_url,
)

__all__ = ["redis_cluster", "redis_cluster_url", "redis_proc", "redis_url"]
