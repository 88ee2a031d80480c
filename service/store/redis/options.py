"""The Redis store's tuning, in one frozen value (docs/redis-store.md says what each does)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ...config import boolean

URL_OPTIONS = (
    "finished_ttl_s",
    "abandoned_ttl_s",
    "retention",
    "prefix",
    "timeout_s",
    "wait_replicas",
    "wait_ms",
    "index_shards",
    "inline_index",
    "pubsub",
)
"""The options a store URL may carry in its query string (``cluster`` besides)."""


@dataclasses.dataclass(frozen=True, slots=True)
class RedisOptions:
    """How a :class:`~service.store.redis.RedisStore` keeps and indexes its tables."""

    prefix: str = "tute"
    """The first part of every key."""
    finished_ttl_s: float = 3600.0
    """How long a finished table stays after its last commit."""
    abandoned_ttl_s: float = 86_400.0
    """How long a waiting or playing table stays after its last commit."""
    retention: int = 10_000
    """Events kept per table at least (``MAXLEN ~``: Redis may keep a few more)."""
    timeout_s: float = 1.0
    """Connect and read timeout of a call, and the longest wait for a free connection."""
    block_ms: int = 2_000
    """How long a table's live events may be quiet before its reader checks the table (a
    stream reader blocks this long in ``XREAD``)."""
    reader_grace_s: float = 2.0
    """How long the live events' reader retries an unreachable Redis before it ends its
    watchers."""
    fence_s: float = 5.0
    """A commit that changes the index applies only this soon after its marker."""
    repair_after_s: float = 10.0
    """Repair takes markers older than this (above ``fence_s`` plus the clock skew)."""
    maintain_every_s: float = 1.0
    """How often :meth:`~service.store.redis.RedisStore.claim_due` runs a repair pass."""
    scrub_batch: int = 100
    """Tables of the status sets checked against their hash on each repair pass."""
    repair_limit: int = 200
    """Old markers, and tables past their expiry (per status), taken per repair pass."""
    rebuild_lease_s: float = 60.0
    """How long the replica rebuilding lost indexes holds the job before another may."""
    index_shards: int = 1
    """Shards of the indexes across tables (lobby, due set, status sets...), each in a slot
    of its own: a table's entries are in the shard of its id's hash. 1: the global slot
    alone; on a Cluster, about as many as masters spreads the index traffic over them."""
    wait_replicas: int = 0
    """A create or commit is acknowledged once this many replicas of its node have it
    (``WAIT``; 0: once its node has it)."""
    wait_ms: int = 100
    """How long that acknowledgement waits for the replicas before the call fails with
    StoreUnavailable (the write stands; sending it again is answered once they have it)."""
    inline_index: bool = True
    """On a single Redis (not a Cluster), a commit runs its index step in the same script
    (``commit_indexed.lua``): one round trip and no write-ahead marker. False: the two steps
    a Cluster takes (the tests of that path use it on a single Redis too)."""
    pubsub: bool = True
    """On a single Redis, a replica takes live events from Pub/Sub: every commit publishes
    its events on the table's channel, and one connection of the replica subscribes to the
    channels of the tables it has watchers of (:class:`~.reader.LiveFeeds`). False, and always
    on a Cluster: one reader per table blocked in ``XREAD`` on its stream. Commits on a single
    Redis publish either way, so replicas of both kinds may share it."""
    known_tables: int = 50_000
    """Tables whose index state a replica remembers (to skip the marker of a commit that
    keeps it); past that it forgets them all and starts again."""

    def __post_init__(self) -> None:
        if self.retention < 1:
            raise ValueError("retention must be at least 1")
        if self.index_shards < 1:
            raise ValueError("index_shards must be at least 1")
        if self.repair_after_s <= self.fence_s:
            raise ValueError("repair_after_s must be above fence_s")

    def with_url_options(self, given: Mapping[str, str]) -> RedisOptions:
        """These options with the ones a store URL gives (names of :data:`URL_OPTIONS`)."""
        return dataclasses.replace(
            self,
            prefix=given.get("prefix", self.prefix),
            finished_ttl_s=float(given.get("finished_ttl_s", self.finished_ttl_s)),
            abandoned_ttl_s=float(given.get("abandoned_ttl_s", self.abandoned_ttl_s)),
            retention=int(given.get("retention", self.retention)),
            timeout_s=float(given.get("timeout_s", self.timeout_s)),
            wait_replicas=int(given.get("wait_replicas", self.wait_replicas)),
            wait_ms=int(given.get("wait_ms", self.wait_ms)),
            index_shards=int(given.get("index_shards", self.index_shards)),
            inline_index=_flag("inline_index", given["inline_index"])
            if "inline_index" in given
            else self.inline_index,
            pubsub=_flag("pubsub", given["pubsub"]) if "pubsub" in given else self.pubsub,
        )


def _flag(name: str, value: str) -> bool:
    """A store URL's yes/no option ``name`` (what :func:`service.config.boolean` takes)."""
    try:
        return boolean(value)
    except ValueError:
        raise ValueError(f"{name} must be 1 or 0, not {value!r}") from None


def ms(seconds: float) -> int:
    """A duration in whole milliseconds, at least 1 (as Redis's ``PX``/``PEXPIRE`` take it)."""
    return max(1, round(seconds * 1000))
