"""Waiting tables expire the same way on Redis and on a Redis Cluster as on memory (the
scenario of tests/service/test_waiting_expiry.py, on a real server over this store)."""

from __future__ import annotations

from service.store.redis import RedisStore
from tests.service.test_waiting_expiry import expiry_scenario


async def test_waiting_tables_without_a_human_expire_on_redis(redis_url: str) -> None:
    await expiry_scenario(RedisStore.from_url(redis_url))


async def test_waiting_tables_without_a_human_expire_on_a_cluster(redis_cluster_url: str) -> None:
    await expiry_scenario(RedisStore.from_url(redis_cluster_url))
