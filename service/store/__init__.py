"""Stores: where tables, their events, the lobby and the due-items live (see base.Store)."""

from ..clock import SYSTEM_CLOCK, Clock
from .base import (
    Commit,
    CommitOutcome,
    DueItem,
    ListedTable,
    LobbyEntry,
    Store,
    StoredEvent,
    StoreUnavailable,
    Subscription,
    SubscriptionEnded,
)

__all__ = [
    "Commit",
    "CommitOutcome",
    "DueItem",
    "ListedTable",
    "LobbyEntry",
    "Store",
    "StoreUnavailable",
    "StoredEvent",
    "Subscription",
    "SubscriptionEnded",
]


def open_store(
    url: str,
    *,
    finished_ttl_s: float = 3600.0,
    index_shards: int = 1,
    clock: Clock = SYSTEM_CLOCK,
) -> Store:
    """The store for a ``TUTE_STORE`` URL: ``memory`` (default) or ``redis://host:port/db``
    (``redis://host:port?cluster=1``: a Redis Cluster); a finished table is kept
    ``finished_ttl_s``; a Redis store keeps its indexes in ``index_shards`` shards; its
    expiries and presence run on ``clock``."""
    if url in ("", "memory", "memory://"):
        from .memory import MemoryStore

        return MemoryStore(finished_ttl_s, clock=clock)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis import RedisOptions, RedisStore

        options = RedisOptions(finished_ttl_s=finished_ttl_s, index_shards=index_shards)
        return RedisStore.from_url(url, options, clock=clock)
    raise ValueError(f"unknown store URL {url!r}: use 'memory' or 'redis://host:port/db'")
