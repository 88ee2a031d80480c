"""The durable history: finished matches' records, kept after their tables expire.

One small interface (:class:`History`) with two backends, chosen by URL
(:func:`open_history`): SQLite (the default: a file in the data directory, or in memory) and
PostgreSQL (``postgresql://...``, for several replicas sharing one history). Each applies its
versioned migrations (:mod:`service.durable.migrations`) when it starts. Writes are
idempotent: writing the same finished record twice (a replica retrying) stores it once.
Ranked play will keep its players and ratings in the same database, as further migrations.
"""

from .base import History, HistoryConflict, HistoryUnavailable, MatchSummary

__all__ = [
    "History",
    "HistoryConflict",
    "HistoryUnavailable",
    "MatchSummary",
    "open_history",
    "sqlite_path",
]


def sqlite_path(url: str, what: str = "history") -> str | None:
    """Where a durable database's URL (``TUTE_HISTORY``, ``TUTE_PLAYERS``) points: the SQLite
    file's path (``:memory:`` for one in memory), or None for PostgreSQL.

    - ``""``, ``memory`` or ``sqlite://:memory:``: SQLite in memory (gone with the process);
    - ``sqlite:///path/to/history.db`` or a plain file path: SQLite in that file;
    - ``postgresql://user@host:port/db`` (or ``postgres://``): PostgreSQL.

    ``ValueError`` (naming ``what``) for any other scheme or an ``sqlite://`` without a path.
    """
    if url.startswith(("postgresql://", "postgres://")):
        return None
    if url in ("", "memory", "sqlite://:memory:", ":memory:"):
        return ":memory:"
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path:
            raise ValueError(f"sqlite:// needs a path: sqlite:///var/lib/tute/{what}.db")
        return path
    if "://" in url:
        raise ValueError(f"unknown {what} URL scheme: {url.split('://', 1)[0]}://")
    return url


def open_history(url: str) -> History:
    """The history for a ``TUTE_HISTORY`` URL (:func:`sqlite_path` tells the forms). Call
    ``await history.start()`` before use (it connects and migrates) and ``close()`` after."""
    path = sqlite_path(url)
    if path is None:
        from .postgres import PostgresHistory

        return PostgresHistory(url)
    from .sqlite import SqliteHistory

    return SqliteHistory(path)
