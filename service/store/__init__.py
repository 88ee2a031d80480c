"""Stores: where tables, their events, the lobby and the due-items live (see base.Store)."""

from .base import (
    CommitOutcome,
    DueItem,
    LobbyEntry,
    Store,
    StoredEvent,
    StoreUnavailable,
    Subscription,
    SubscriptionEnded,
)

__all__ = [
    "CommitOutcome",
    "DueItem",
    "LobbyEntry",
    "Store",
    "StoreUnavailable",
    "StoredEvent",
    "Subscription",
    "SubscriptionEnded",
]


def open_store(url: str) -> Store:
    """The store for a ``TUTE_STORE`` URL: ``memory`` (default) or ``redis://host:port/db``."""
    if url in ("", "memory", "memory://"):
        from .memory import MemoryStore

        return MemoryStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis import RedisStore  # type: ignore[import-not-found,unused-ignore]

        store: Store = RedisStore.from_url(url)
        return store
    raise ValueError(f"unknown store URL {url!r}: use 'memory' or 'redis://host:port/db'")
