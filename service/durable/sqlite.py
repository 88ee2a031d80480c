"""The SQLite history (stdlib ``sqlite3``): a file in the data directory, or in memory.

Every call runs on a worker thread (``asyncio.to_thread``) under one lock, on one connection:
SQLite serialises writers anyway, and one server process is its only user. A file database
runs in WAL mode.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from engine.record import MatchRecord

from .base import History, HistoryConflict, HistoryUnavailable, MatchSummary, decode, encode
from .migrations import MIGRATIONS, SCHEMA_TABLE

BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another connection's lock on the same file (another replica's
migration or write) before it fails: long enough for a loaded machine, bounded all the same."""

T = TypeVar("T")


def _use_wal(db: sqlite3.Connection) -> None:
    """Switch the file to WAL mode. The switch needs the file to itself and, unlike a write,
    does not wait on the busy timeout: a replica opening the file while another one migrates
    it retries here, for at most ``BUSY_TIMEOUT_S``."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


def connect(path: str) -> sqlite3.Connection:
    """A connection to the durable database at ``path`` (``:memory:``: a new one in memory;
    a file's folder is made if missing), in autocommit mode, usable from any thread (callers
    hold a lock), with foreign keys on and, for a file, write-ahead logging."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None
    )
    db.execute("PRAGMA foreign_keys = ON")
    if path != ":memory:":
        _use_wal(db)
    return db


class SqliteHistory(History):
    """The history in a SQLite database at ``path`` (``:memory:``: in memory)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                if self._db is None:
                    raise HistoryUnavailable("the history is not started")
                try:
                    return fn(self._db)
                except sqlite3.Error as exc:
                    self._db.rollback()
                    raise HistoryUnavailable(f"sqlite: {exc}") from exc

        return await asyncio.to_thread(call)

    async def start(self) -> None:
        try:
            self._db = await asyncio.to_thread(connect, self.path)
        except sqlite3.Error as exc:
            raise HistoryUnavailable(f"sqlite: {exc}") from exc
        await self._run(_migrate)

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            with self._lock:
                db.close()

    async def schema_version(self) -> int:
        return await self._run(
            lambda db: int(db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])
        )

    async def put_record(
        self, record: MatchRecord, *, finished_at_ms: int, ranked: bool = False
    ) -> bool:
        text = encode(record)

        def put(db: sqlite3.Connection) -> bool:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(
                    "SELECT record FROM match_records WHERE table_id = ?", (record.table_id,)
                ).fetchone()
                if row is not None:
                    db.execute("ROLLBACK")
                    if row[0] != text:
                        raise HistoryConflict(f"table {record.table_id}: another record")
                    return False
                db.execute(
                    "INSERT INTO match_records (table_id, format, ranked, started_at_ms,"
                    " finished_at_ms, record) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        record.table_id,
                        record.format,
                        ranked,
                        record.started_at_ms,
                        finished_at_ms,
                        text,
                    ),
                )
                db.executemany(
                    "INSERT INTO match_seats (table_id, seat, player_id, finished_at_ms)"
                    " VALUES (?, ?, ?, ?)",
                    [
                        (record.table_id, s.seat, s.player_id, finished_at_ms)
                        for s in record.seats
                        if s.player_id
                    ],
                )
                db.execute("COMMIT")
                return True
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

        return await self._run(put)

    async def get_record(self, table_id: str) -> MatchRecord | None:
        row = await self._run(
            lambda db: db.execute(
                "SELECT record FROM match_records WHERE table_id = ?", (table_id,)
            ).fetchone()
        )
        return None if row is None else decode(row[0])

    async def list_matches(
        self,
        player_id: str,
        *,
        before: tuple[int, str] | None = None,
        limit: int = 50,
        ranked_only: bool = False,
    ) -> list[MatchSummary]:
        sql = (
            "SELECT s.table_id, s.seat, r.ranked, r.started_at_ms, r.finished_at_ms"
            " FROM match_seats s JOIN match_records r ON r.table_id = s.table_id"
            " WHERE s.player_id = ?"
            + (" AND r.ranked" if ranked_only else "")
            + (" AND (s.finished_at_ms, s.table_id) < (?, ?)" if before is not None else "")
            + " ORDER BY s.finished_at_ms DESC, s.table_id DESC LIMIT ?"
        )
        params: tuple[Any, ...] = (player_id, *(before or ()), limit)
        rows = await self._run(lambda db: db.execute(sql, params).fetchall())
        return [MatchSummary(r[0], int(r[1]), bool(r[2]), int(r[3]), int(r[4])) for r in rows]

    async def prune(self, *, ranked: bool, finished_before_ms: int) -> int:
        def prune(db: sqlite3.Connection) -> int:
            db.execute("BEGIN IMMEDIATE")
            cur = db.execute(
                "DELETE FROM match_records WHERE ranked = ? AND finished_at_ms < ?",
                (ranked, finished_before_ms),
            )
            db.execute("COMMIT")
            return cur.rowcount

        return await self._run(prune)


def _migrate(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(SCHEMA_TABLE)
        done = {row[0] for row in db.execute("SELECT version FROM schema_migrations")}
        for m in MIGRATIONS:
            if m.version in done:
                continue
            for statement in m.statements:
                db.execute(statement)
            db.execute(
                "INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)",
                (m.version, m.name, int(time.time() * 1000)),
            )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
