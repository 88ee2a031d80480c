"""Fixtures for the player tests: one real ``redis-server`` per module, flushed per test (the
replica test of ranked ratings)."""

from tests.support.redis_fixtures import redis_proc, redis_url  # the fixtures used here

__all__ = ["redis_proc", "redis_url"]
