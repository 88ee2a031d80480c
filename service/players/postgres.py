"""The player store in PostgreSQL (asyncpg, a connection pool), in the history's database.

Its start applies the durable history's migrations (players included) under their advisory
lock. A ranked result is written in one transaction that first inserts its
``ranked_results`` row (``ON CONFLICT DO NOTHING``): the replica that loses that race, or
retries, changes nothing.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence

import asyncpg

from ..durable.postgres import PostgresHistory
from .ratings import MODES, MU, SIGMA, RatingChange, display
from .store import LeaderboardEntry, Player, RankedHold, Standing, check_before


class PostgresPlayerStore:
    """A :class:`~service.players.store.PlayerStore` in PostgreSQL at ``url``."""

    def __init__(self, url: str, *, max_size: int = 4) -> None:
        self.url = url
        self._max = max_size
        self._pool: asyncpg.Pool | None = None

    async def start(self) -> None:
        migrate = PostgresHistory(self.url)
        await migrate.start()
        await migrate.close()
        self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=self._max)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _p(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("the player store is not started")
        return self._pool

    async def create_guest(self, name: str, token_hash: str) -> Player:
        pid = "p" + secrets.token_hex(8)
        try:
            await self._p().execute(
                "INSERT INTO players (player_id, name, token_hash) VALUES ($1, $2, $3)",
                pid,
                name,
                token_hash,
            )
        except asyncpg.UniqueViolationError:
            raise ValueError("this token hash belongs to a player already") from None
        return Player(pid, name)

    async def get(self, player_id: str) -> Player | None:
        row = await self._p().fetchrow(
            "SELECT player_id, name FROM players WHERE player_id = $1", player_id
        )
        return None if row is None else Player(row[0], row[1])

    async def by_token_hash(self, token_hash: str) -> Player | None:
        row = await self._p().fetchrow(
            "SELECT player_id, name FROM players WHERE token_hash = $1", token_hash
        )
        return None if row is None else Player(row[0], row[1])

    async def by_subject(self, issuer: str, subject: str, name: str) -> Player:
        pid = "p" + secrets.token_hex(8)
        async with self._p().acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO players (player_id, name, issuer, subject) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (issuer, subject) DO NOTHING",
                pid,
                name,
                issuer,
                subject,
            )
            row = await conn.fetchrow(
                "SELECT player_id, name FROM players WHERE issuer = $1 AND subject = $2",
                issuer,
                subject,
            )
        assert row is not None
        return Player(row[0], row[1])

    async def standings(self, player_id: str) -> dict[str, Standing]:
        rows = await self._p().fetch(
            "SELECT mode, mu, sigma, games, wins FROM player_ratings WHERE player_id = $1",
            player_id,
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
        async with self._p().acquire() as conn, conn.transaction():
            status = await conn.execute(
                "INSERT INTO ranked_results (table_id, changes) VALUES ($1, $2)"
                " ON CONFLICT (table_id) DO NOTHING",
                table_id,
                text,
            )
            if status == "INSERT 0 0":
                return False
            for c in changes:
                if (
                    await conn.fetchval("SELECT 1 FROM players WHERE player_id = $1", c.player_id)
                    is None
                ):
                    raise ValueError(f"{c.player_id}: not a player of this store")
                row = await conn.fetchrow(
                    "SELECT mu, sigma FROM player_ratings WHERE player_id = $1 AND mode = $2"
                    " FOR UPDATE",
                    c.player_id,
                    c.mode,
                )
                check_before(c, *((float(row[0]), float(row[1])) if row else (MU, SIGMA)))
                await conn.execute(
                    "INSERT INTO player_ratings (player_id, mode, mu, sigma, display, games, wins)"
                    " VALUES ($1, $2, $3, $4, $5, 1, $6)"
                    " ON CONFLICT (player_id, mode) DO UPDATE SET mu = excluded.mu,"
                    " sigma = excluded.sigma, display = excluded.display,"
                    " games = player_ratings.games + 1, wins = player_ratings.wins + excluded.wins",
                    c.player_id,
                    c.mode,
                    c.mu_after,
                    c.sigma_after,
                    display(c.mu_after, c.sigma_after),
                    int(c.won),
                )
            for pid, until in (cooldowns or {}).items():
                await conn.execute(
                    "UPDATE players SET cooldown_until = GREATEST(cooldown_until, $1)"
                    " WHERE player_id = $2",
                    until,
                    pid,
                )
            await conn.execute(
                "UPDATE players SET ranked_table = NULL WHERE ranked_table = $1", table_id
            )
        return True

    async def leaderboard(
        self, mode: str, *, after: tuple[float, str] | None = None, limit: int = 50
    ) -> list[LeaderboardEntry]:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        head = (
            "SELECT p.player_id, p.name, r.mu, r.sigma, r.games, r.wins"
            " FROM player_ratings r JOIN players p ON p.player_id = r.player_id"
            " WHERE r.mode = $1 AND r.games > 0"
        )
        order = " ORDER BY r.display DESC, r.player_id ASC"
        if after is None:
            rows = await self._p().fetch(head + order + " LIMIT $2", mode, limit)
        else:
            rows = await self._p().fetch(
                head
                + " AND (r.display < $2 OR (r.display = $2 AND r.player_id > $3))"
                + order
                + " LIMIT $4",
                mode,
                after[0],
                after[1],
                limit,
            )
        return [
            LeaderboardEntry(
                Player(r[0], r[1]), Standing(float(r[2]), float(r[3]), int(r[4]), int(r[5]))
            )
            for r in rows
        ]

    async def cooldown_until(self, player_id: str) -> float:
        value = await self._p().fetchval(
            "SELECT cooldown_until FROM players WHERE player_id = $1", player_id
        )
        return 0.0 if value is None else float(value)

    async def seat_ranked(self, table_id: str, player_ids: Sequence[str]) -> None:
        await self._p().execute(
            "UPDATE players SET ranked_table = $1 WHERE player_id = ANY($2::text[])",
            table_id,
            list(player_ids),
        )

    async def ranked_hold(self, player_id: str) -> RankedHold:
        row = await self._p().fetchrow(
            "SELECT cooldown_until, ranked_table FROM players WHERE player_id = $1", player_id
        )
        return RankedHold() if row is None else RankedHold(float(row[0]), row[1] or "")
