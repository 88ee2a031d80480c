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
)

LATEST: Final = MIGRATIONS[-1].version
