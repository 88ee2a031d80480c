"""Players of ranked play: who they are (:mod:`.store`) and how they are rated (:mod:`.ratings`)."""

from ..durable import sqlite_path
from .ratings import MODES, Rated, RatingChange, bot_rated, display, provisional, rate_match
from .store import (
    LeaderboardEntry,
    MemoryPlayerStore,
    Player,
    PlayerStore,
    RankedHold,
    StaleRating,
    Standing,
)


def open_players(url: str) -> PlayerStore:
    """The player store for a ``TUTE_PLAYERS`` URL (the history's forms:
    :func:`service.durable.sqlite_path`): SQLite in memory, in a file, or PostgreSQL. Call
    ``await players.start()`` before use (it connects and migrates) and ``close()`` after."""
    path = sqlite_path(url, "players")
    if path is None:
        from .postgres import PostgresPlayerStore

        return PostgresPlayerStore(url)
    from .sqlite import SqlitePlayerStore

    return SqlitePlayerStore(path)


__all__ = [
    "MODES",
    "LeaderboardEntry",
    "MemoryPlayerStore",
    "Player",
    "PlayerStore",
    "RankedHold",
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
