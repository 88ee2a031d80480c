"""Versioned schema migrations, applied in order at start; each runs once per database.

A migration is (version, name, SQL statements). The applied ones are rows of
``schema_migrations``. The SQL is the same for SQLite and PostgreSQL (types both accept);
a later migration never edits an earlier one, it adds a new version.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Migration(NamedTuple):
    version: int
    name: str
    statements: tuple[str, ...]


SCHEMA_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " applied_at_ms BIGINT NOT NULL)"
)

MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(
        1,
        "match records",
        (
            "CREATE TABLE match_records ("
            " table_id TEXT PRIMARY KEY,"
            " format TEXT NOT NULL,"
            " ranked BOOLEAN NOT NULL,"
            " started_at_ms BIGINT NOT NULL,"
            " finished_at_ms BIGINT NOT NULL,"
            " record TEXT NOT NULL)",
            "CREATE INDEX match_records_retention ON match_records (ranked, finished_at_ms)",
        ),
    ),
    Migration(
        2,
        "the seats of each match, by player",
        (
            "CREATE TABLE match_seats ("
            " table_id TEXT NOT NULL REFERENCES match_records (table_id) ON DELETE CASCADE,"
            " seat INTEGER NOT NULL,"
            " player_id TEXT NOT NULL,"
            " finished_at_ms BIGINT NOT NULL,"
            " PRIMARY KEY (table_id, seat))",
            "CREATE INDEX match_seats_player ON match_seats (player_id, finished_at_ms, table_id)",
        ),
    ),
    Migration(
        3,
        "players, their ratings per mode and ranked results",
        (
            "CREATE TABLE players ("
            " player_id TEXT PRIMARY KEY,"
            " name TEXT NOT NULL,"
            " token_hash TEXT UNIQUE,"
            " issuer TEXT,"
            " subject TEXT,"
            " cooldown_until DOUBLE PRECISION NOT NULL DEFAULT 0,"
            " UNIQUE (issuer, subject))",
            "CREATE TABLE player_ratings ("
            " player_id TEXT NOT NULL REFERENCES players (player_id),"
            " mode TEXT NOT NULL,"
            " mu DOUBLE PRECISION NOT NULL,"
            " sigma DOUBLE PRECISION NOT NULL,"
            " display DOUBLE PRECISION NOT NULL,"
            " games INTEGER NOT NULL,"
            " wins INTEGER NOT NULL,"
            " PRIMARY KEY (player_id, mode))",
            "CREATE INDEX player_ratings_board ON player_ratings (mode, display, player_id)",
            "CREATE TABLE ranked_results (table_id TEXT PRIMARY KEY, changes TEXT NOT NULL)",
        ),
    ),
    Migration(
        4,
        "each player's current ranked table",
        (
            "ALTER TABLE players ADD COLUMN ranked_table TEXT",
            "CREATE INDEX players_ranked_table ON players (ranked_table)",
        ),
    ),
)

LATEST: Final = MIGRATIONS[-1].version
