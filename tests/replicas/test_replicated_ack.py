"""The Redis store's replicated acknowledgement (``wait_replicas``): a commit is reported
applied only once a replica of its node has it; without one in time the caller gets
StoreUnavailable, the commit stands, and sending it again (same idempotency key) is answered
from the first once a replica has caught up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from service.store.base import Commit, StoredEvent, StoreUnavailable
from service.store.redis import RedisStore

from ..support.redis import RedisProcess
from ..support.redis_cluster import ReplicatedCluster


@pytest.fixture
def primary(tmp_path: Path) -> Iterator[RedisProcess]:
    proc = RedisProcess(tmp_path / "primary").start()
    try:
        yield proc
    finally:
        proc.stop()


def follow(replica: RedisProcess, primary: RedisProcess) -> None:
    """Make ``replica`` a replica of ``primary``; return once the primary counts its
    acknowledgements (a write of its own and ``WAIT 1`` answer 1)."""
    with redis.Redis(port=primary.port) as r:
        r.config_set("repl-diskless-sync-delay", 0)  # sync at once (5 s by default)
    with redis.Redis(port=replica.port) as r:
        r.replicaof("127.0.0.1", primary.port)
    ReplicatedCluster.wait_for_event(
        lambda: _acknowledges(primary), 30, f"replica {replica.port} acknowledging"
    )


def _acknowledges(primary: RedisProcess) -> bool:
    with redis.Redis(port=primary.port) as r:
        pipe = r.pipeline(transaction=False)
        pipe.set("probe", b"")
        pipe.execute_command("WAIT", 1, 100)
        return int(pipe.execute()[1]) == 1


def ev(seq: int) -> StoredEvent:
    return StoredEvent(seq, b"public %d" % seq)


async def test_a_commit_is_acknowledged_once_a_replica_has_it(
    primary: RedisProcess, tmp_path: Path
) -> None:
    alone = RedisStore.from_url(primary.url + "?wait_replicas=1&wait_ms=200")
    # a generous wait once the replica is there: this machine may be busy
    store = RedisStore.from_url(primary.url + "?wait_replicas=1&wait_ms=5000")
    replica = RedisProcess(tmp_path / "replica")
    try:
        assert (alone.options.wait_replicas, alone.options.wait_ms) == (1, 200)
        with pytest.raises(StoreUnavailable, match="0 of 1 replicas"):
            await alone.create("t", b"r0", "", None)  # no replica: created, not acknowledged
        with pytest.raises(StoreUnavailable, match="0 of 1 replicas"):
            await alone.commit(
                "t", Commit(1, b"r1", (ev(1),), idempotency_key="k", response=b"first")
            )
        replica.start()
        follow(replica, primary)
        again = await store.commit(
            "t", Commit(1, b"r1", (ev(1),), idempotency_key="k", response=b"other")
        )
        assert (again.applied, again.duplicate_response) == (False, b"first")  # the first, once
        assert (await store.commit("t", Commit(2, b"r2", (ev(2),)))).applied
        with redis.Redis(port=replica.port) as r:  # acknowledged means: on the replica
            assert r.hget("tute:{t}", "r") == b"r2"
            assert r.xlen("tute:{t}:x") == 2
    finally:
        await alone.close()
        await store.close()
        replica.stop()


async def test_without_wait_replicas_nothing_waits(primary: RedisProcess) -> None:
    store = RedisStore.from_url(primary.url)
    try:
        assert store.options.wait_replicas == 0
        await store.create("t", b"r0", "", None)
        assert (await store.commit("t", Commit(1, b"r1", (ev(1),)))).applied
    finally:
        await store.close()
