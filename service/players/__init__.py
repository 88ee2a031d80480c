"""Players of ranked play: who they are (:mod:`.store`) and how they are rated (:mod:`.ratings`)."""

from .ratings import MODES, Rated, RatingChange, bot_rated, display, provisional, rate_match
from .store import (
    LeaderboardEntry,
    MemoryPlayerStore,
    Player,
    PlayerStore,
    StaleRating,
    Standing,
)


def open_players(url: str) -> PlayerStore:
    """The player store for a ``TUTE_PLAYERS`` URL (the same forms as the history's,
    :func:`service.durable.open_history`): SQLite in memory, in a file, or PostgreSQL. Call
    ``await players.start()`` before use (it connects and migrates) and ``close()`` after."""
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresPlayerStore

        return PostgresPlayerStore(url)
    from .sqlite import SqlitePlayerStore

    if url in ("", "memory", "sqlite://:memory:", ":memory:"):
        return SqlitePlayerStore(":memory:")
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path:
            raise ValueError("sqlite:// needs a path: sqlite:///var/lib/tute/players.db")
        return SqlitePlayerStore(path)
    if "://" in url:
        raise ValueError(f"unknown players URL scheme: {url.split('://', 1)[0]}://")
    return SqlitePlayerStore(url)


__all__ = [
    "MODES",
    "LeaderboardEntry",
    "MemoryPlayerStore",
    "Player",
    "PlayerStore",
    "Rated",
    "RatingChange",
    "StaleRating",
    "Standing",
    "bot_rated",
    "display",
    "open_players",
    "provisional",
    "rate_match",
]
