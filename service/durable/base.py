"""The history's interface, shared by the SQLite and PostgreSQL backends."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass

from engine.record import MatchRecord, record_from_json, record_to_json


class HistoryUnavailable(Exception):
    """The history's database cannot be reached or refused the operation."""


class HistoryConflict(Exception):
    """A record for this table is already stored and differs from the one being written."""


@dataclass(frozen=True, slots=True)
class MatchSummary:
    """One finished match of a player's history (newest first in :meth:`History.list_matches`)."""

    table_id: str
    seat: int
    ranked: bool
    started_at_ms: int
    finished_at_ms: int


def encode(record: MatchRecord) -> str:
    """The stored text of a record: its JSON form, keys sorted, no spaces (one text per record)."""
    return json.dumps(record_to_json(record), sort_keys=True, separators=(",", ":"))


def decode(text: str) -> MatchRecord:
    return record_from_json(json.loads(text))


class History(ABC):
    """Finished match records, written once and read back by table id or player."""

    @abstractmethod
    async def start(self) -> None:
        """Connect and apply every migration not yet applied (safe on several replicas)."""

    @abstractmethod
    async def close(self) -> None:
        """Release the connection(s)."""

    @abstractmethod
    async def schema_version(self) -> int:
        """The highest migration applied."""

    @abstractmethod
    async def put_record(
        self, record: MatchRecord, *, finished_at_ms: int, ranked: bool = False
    ) -> bool:
        """Store a finished match's record: True when written now, False when this very
        record was stored before (nothing is written twice). :class:`HistoryConflict` when
        another record is stored for the table."""

    @abstractmethod
    async def get_record(self, table_id: str) -> MatchRecord | None:
        """The stored record of a table's match, or None."""

    @abstractmethod
    async def list_matches(
        self,
        player_id: str,
        *,
        before: tuple[int, str] | None = None,
        limit: int = 50,
        ranked_only: bool = False,
    ) -> list[MatchSummary]:
        """A player's finished matches, newest first; ``before`` = the (finished_at_ms,
        table_id) of the last summary of the previous page; ``ranked_only``: its ranked
        matches alone."""

    @abstractmethod
    async def prune(self, *, ranked: bool, finished_before_ms: int) -> int:
        """Delete the ranked (or casual) records finished before a time; how many went."""
