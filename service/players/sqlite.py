"""The player store in SQLite (stdlib ``sqlite3``), in the durable history's database.

It opens its own connection to the same database as :class:`service.durable.SqliteHistory`
(the history's migrations, players included, are applied at start) and runs every call on a
worker thread under one lock. A ranked result is written in one transaction with its
``ranked_results`` row, keyed by table id: a second write of the same table changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..durable.sqlite import _migrate, connect
from .ratings import MODES, MU, SIGMA, RatingChange, display
from .store import LeaderboardEntry, Player, RankedHold, Standing, check_before

T = TypeVar("T")


class SqlitePlayerStore:
    """A :class:`~service.players.store.PlayerStore` in a SQLite file (``:memory:``: in memory)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    async def start(self) -> None:
        def connected() -> sqlite3.Connection:
            db = connect(self.path)
            _migrate(db)
            return db

        self._db = await asyncio.to_thread(connected)

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            with self._lock:
                db.close()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                if self._db is None:
                    raise RuntimeError("the player store is not started")
                return fn(self._db)

        return await asyncio.to_thread(call)

    @staticmethod
    def _tx(db: sqlite3.Connection, fn: Callable[[], T]) -> T:
        db.execute("BEGIN IMMEDIATE")
        try:
            out = fn()
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return out

    async def create_guest(self, name: str, token_hash: str) -> Player:
        pid = "p" + secrets.token_hex(8)

        def put(db: sqlite3.Connection) -> None:
            try:
                db.execute(
                    "INSERT INTO players (player_id, name, token_hash) VALUES (?, ?, ?)",
                    (pid, name, token_hash),
                )
            except sqlite3.IntegrityError:
                raise ValueError("this token hash belongs to a player already") from None

        await self._run(put)
        return Player(pid, name)

    async def get(self, player_id: str) -> Player | None:
        row = await self._run(
            lambda db: db.execute(
                "SELECT player_id, name FROM players WHERE player_id = ?", (player_id,)
            ).fetchone()
        )
        return None if row is None else Player(row[0], row[1])

    async def by_token_hash(self, token_hash: str) -> Player | None:
        row = await self._run(
            lambda db: db.execute(
                "SELECT player_id, name FROM players WHERE token_hash = ?", (token_hash,)
            ).fetchone()
        )
        return None if row is None else Player(row[0], row[1])

    async def by_subject(self, issuer: str, subject: str, name: str) -> Player:
        pid = "p" + secrets.token_hex(8)

        def get_or_create(db: sqlite3.Connection) -> Player:
            def body() -> Player:
                row = db.execute(
                    "SELECT player_id, name FROM players WHERE issuer = ? AND subject = ?",
                    (issuer, subject),
                ).fetchone()
                if row is not None:
                    return Player(row[0], row[1])
                db.execute(
                    "INSERT INTO players (player_id, name, issuer, subject) VALUES (?, ?, ?, ?)",
                    (pid, name, issuer, subject),
                )
                return Player(pid, name)

            return self._tx(db, body)

        return await self._run(get_or_create)

    async def standings(self, player_id: str) -> dict[str, Standing]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT mode, mu, sigma, games, wins FROM player_ratings WHERE player_id = ?",
                (player_id,),
            ).fetchall()
        )
        found = {r[0]: Standing(float(r[1]), float(r[2]), int(r[3]), int(r[4])) for r in rows}
        return {m: found.get(m, Standing()) for m in MODES}

    async def record_ranked(
        self,
        table_id: str,
        changes: Sequence[RatingChange],
        *,
        cooldowns: dict[str, float] | None = None,
    ) -> bool:
        text = json.dumps(
            [[c.player_id, c.mode, c.won, c.mu_after, c.sigma_after] for c in changes],
            separators=(",", ":"),
        )

        def write(db: sqlite3.Connection) -> bool:
            def body() -> bool:
                if db.execute(
                    "SELECT 1 FROM ranked_results WHERE table_id = ?", (table_id,)
                ).fetchone():
                    return False
                db.execute(
                    "INSERT INTO ranked_results (table_id, changes) VALUES (?, ?)",
                    (table_id, text),
                )
                for c in changes:
                    if (
                        db.execute(
                            "SELECT 1 FROM players WHERE player_id = ?", (c.player_id,)
                        ).fetchone()
                        is None
                    ):
                        raise ValueError(f"{c.player_id}: not a player of this store")
                    row = db.execute(
                        "SELECT mu, sigma FROM player_ratings WHERE player_id = ? AND mode = ?",
                        (c.player_id, c.mode),
                    ).fetchone()
                    check_before(c, *((float(row[0]), float(row[1])) if row else (MU, SIGMA)))
                    db.execute(
                        "INSERT INTO player_ratings"
                        " (player_id, mode, mu, sigma, display, games, wins)"
                        " VALUES (?, ?, ?, ?, ?, 1, ?)"
                        " ON CONFLICT (player_id, mode) DO UPDATE SET mu = excluded.mu,"
                        " sigma = excluded.sigma, display = excluded.display,"
                        " games = player_ratings.games + 1,"
                        " wins = player_ratings.wins + excluded.wins",
                        (
                            c.player_id,
                            c.mode,
                            c.mu_after,
                            c.sigma_after,
                            display(c.mu_after, c.sigma_after),
                            int(c.won),
                        ),
                    )
                for pid, until in (cooldowns or {}).items():
                    db.execute(
                        "UPDATE players SET cooldown_until = MAX(cooldown_until, ?)"
                        " WHERE player_id = ?",
                        (until, pid),
                    )
                db.execute(
                    "UPDATE players SET ranked_table = NULL WHERE ranked_table = ?", (table_id,)
                )
                return True

            return self._tx(db, body)

        return await self._run(write)

    async def leaderboard(
        self, mode: str, *, after: tuple[float, str] | None = None, limit: int = 50
    ) -> list[LeaderboardEntry]:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        sql = (
            "SELECT p.player_id, p.name, r.mu, r.sigma, r.games, r.wins"
            " FROM player_ratings r JOIN players p ON p.player_id = r.player_id"
            " WHERE r.mode = ? AND r.games > 0"
            + (
                " AND (r.display < ? OR (r.display = ? AND r.player_id > ?))"
                if after is not None
                else ""
            )
            + " ORDER BY r.display DESC, r.player_id ASC LIMIT ?"
        )
        params: tuple[object, ...] = (
            (mode, after[0], after[0], after[1], limit) if after is not None else (mode, limit)
        )
        rows = await self._run(lambda db: db.execute(sql, params).fetchall())
        return [
            LeaderboardEntry(
                Player(r[0], r[1]), Standing(float(r[2]), float(r[3]), int(r[4]), int(r[5]))
            )
            for r in rows
        ]

    async def cooldown_until(self, player_id: str) -> float:
        row = await self._run(
            lambda db: db.execute(
                "SELECT cooldown_until FROM players WHERE player_id = ?", (player_id,)
            ).fetchone()
        )
        return 0.0 if row is None else float(row[0])

    async def seat_ranked(self, table_id: str, player_ids: Sequence[str]) -> None:
        def write(db: sqlite3.Connection) -> None:
            def body() -> None:
                db.executemany(
                    "UPDATE players SET ranked_table = ? WHERE player_id = ?",
                    [(table_id, pid) for pid in player_ids],
                )

            self._tx(db, body)

        await self._run(write)

    async def ranked_hold(self, player_id: str) -> RankedHold:
        row = await self._run(
            lambda db: db.execute(
                "SELECT cooldown_until, ranked_table FROM players WHERE player_id = ?",
                (player_id,),
            ).fetchone()
        )
        return RankedHold() if row is None else RankedHold(float(row[0]), row[1] or "")
