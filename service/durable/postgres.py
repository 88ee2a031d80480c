"""The PostgreSQL history (asyncpg, a connection pool): one history for several replicas.

Migrations run at start in one transaction under an advisory lock, so replicas starting
together apply each migration once. Writes are ``INSERT ... ON CONFLICT DO NOTHING``: a
replica retrying a write stores nothing twice.
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from engine.record import MatchRecord

from .base import History, HistoryConflict, HistoryUnavailable, MatchSummary, decode, encode
from .migrations import MIGRATIONS, SCHEMA_TABLE

_MIGRATION_LOCK = 0x7475_7465  # "tute": the advisory lock key of the migrations


class PostgresHistory(History):
    """The history in the PostgreSQL database at ``url`` (``postgresql://user@host:port/db``)."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 4) -> None:
        self.url = url
        self._min = min_size
        self._max = max_size
        self._pool: asyncpg.Pool | None = None

    def _p(self) -> asyncpg.Pool:
        if self._pool is None:
            raise HistoryUnavailable("the history is not started")
        return self._pool

    async def start(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(self.url, min_size=self._min, max_size=self._max)
            async with self._p().acquire() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
                await conn.execute(SCHEMA_TABLE)
                done = {
                    r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")
                }
                for m in MIGRATIONS:
                    if m.version in done:
                        continue
                    for statement in m.statements:
                        await conn.execute(statement)
                    await conn.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at_ms)"
                        " VALUES ($1, $2, $3)",
                        m.version,
                        m.name,
                        int(time.time() * 1000),
                    )
        except (OSError, asyncpg.PostgresError) as exc:
            await self.close()
            raise HistoryUnavailable(f"postgresql: {exc}") from exc

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _fetch(self, sql: str, *args: Any) -> list[Any]:
        try:
            async with self._p().acquire() as conn:
                rows: list[Any] = await conn.fetch(sql, *args)
                return rows
        except (OSError, asyncpg.PostgresError) as exc:
            raise HistoryUnavailable(f"postgresql: {exc}") from exc

    async def schema_version(self) -> int:
        rows = await self._fetch("SELECT MAX(version) AS v FROM schema_migrations")
        return int(rows[0]["v"])

    async def put_record(
        self, record: MatchRecord, *, finished_at_ms: int, ranked: bool = False
    ) -> bool:
        text = encode(record)
        try:
            async with self._p().acquire() as conn, conn.transaction():
                status = await conn.execute(
                    "INSERT INTO match_records (table_id, format, ranked, started_at_ms,"
                    " finished_at_ms, record) VALUES ($1, $2, $3, $4, $5, $6)"
                    " ON CONFLICT (table_id) DO NOTHING",
                    record.table_id,
                    record.format,
                    ranked,
                    record.started_at_ms,
                    finished_at_ms,
                    text,
                )
                if status == "INSERT 0 0":
                    stored = await conn.fetchval(
                        "SELECT record FROM match_records WHERE table_id = $1", record.table_id
                    )
                    if stored != text:
                        raise HistoryConflict(f"table {record.table_id}: another record")
                    return False
                await conn.executemany(
                    "INSERT INTO match_seats (table_id, seat, player_id, finished_at_ms)"
                    " VALUES ($1, $2, $3, $4)",
                    [
                        (record.table_id, s.seat, s.player_id, finished_at_ms)
                        for s in record.seats
                        if s.player_id
                    ],
                )
                return True
        except (OSError, asyncpg.PostgresError) as exc:
            raise HistoryUnavailable(f"postgresql: {exc}") from exc

    async def get_record(self, table_id: str) -> MatchRecord | None:
        rows = await self._fetch("SELECT record FROM match_records WHERE table_id = $1", table_id)
        return decode(rows[0]["record"]) if rows else None

    async def list_matches(
        self,
        player_id: str,
        *,
        before: tuple[int, str] | None = None,
        limit: int = 50,
        ranked_only: bool = False,
    ) -> list[MatchSummary]:
        ranked = " AND r.ranked" if ranked_only else ""
        if before is None:
            rows = await self._fetch(
                "SELECT s.table_id, s.seat, r.ranked, r.started_at_ms, r.finished_at_ms"
                " FROM match_seats s JOIN match_records r ON r.table_id = s.table_id"
                " WHERE s.player_id = $1" + ranked + " ORDER BY s.finished_at_ms DESC,"
                " s.table_id DESC LIMIT $2",
                player_id,
                limit,
            )
        else:
            rows = await self._fetch(
                "SELECT s.table_id, s.seat, r.ranked, r.started_at_ms, r.finished_at_ms"
                " FROM match_seats s JOIN match_records r ON r.table_id = s.table_id"
                " WHERE s.player_id = $1" + ranked + " AND (s.finished_at_ms, s.table_id)"
                " < ($2, $3) ORDER BY s.finished_at_ms DESC, s.table_id DESC LIMIT $4",
                player_id,
                before[0],
                before[1],
                limit,
            )
        return [
            MatchSummary(
                r["table_id"], r["seat"], r["ranked"], r["started_at_ms"], r["finished_at_ms"]
            )
            for r in rows
        ]

    async def prune(self, *, ranked: bool, finished_before_ms: int) -> int:
        try:
            async with self._p().acquire() as conn:
                status = await conn.execute(
                    "DELETE FROM match_records WHERE ranked = $1 AND finished_at_ms < $2",
                    ranked,
                    finished_before_ms,
                )
        except (OSError, asyncpg.PostgresError) as exc:
            raise HistoryUnavailable(f"postgresql: {exc}") from exc
        return int(status.split()[-1])
