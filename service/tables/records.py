"""Finished matches' records: built from the table's record, kept in the durable history.

The commit that ends a match writes its record to the history (:func:`keep`); GetMatchRecord
reads it from there (:func:`match_record`), or, when that write did not happen (the history
was unreachable, the replica stopped just after the commit), builds it from the finished
table still in the store and writes it then. Writes are idempotent: every replica builds the
same record of a table, and the history stores it once.
"""

from __future__ import annotations

import importlib.metadata

import structlog

from engine.record import MatchRecord, SeatRecord, bot_seat, player_seat

from ..durable import History, HistoryConflict, HistoryUnavailable
from ..errors import FailedPrecondition, NotFound, Unavailable
from ..reasons import Reason
from .fair import match_record as build
from .model import BOT, FINISHED, TableRecord

log = structlog.get_logger("tute.records")


def _version() -> str:
    try:
        return importlib.metadata.version("tute")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


ENGINE_VERSION = _version()
"""The version of the tute package this server runs: every record it writes names it."""


def record_of(rec: TableRecord) -> MatchRecord | None:
    """The record of the table's finished match (None: not finished, or played before this
    server kept records)."""
    if rec.status != FINISHED or rec.fair is None or rec.state is None:
        return None
    seats: list[SeatRecord] = [
        bot_seat(i, s.bot_level, s.name)
        if s.occupant == BOT
        else player_seat(i, s.name, s.player_id)
        for i, s in enumerate(rec.seats)
    ]
    return build(
        rec.fair,
        table_id=rec.table_id,
        rules=rec.rules,
        seats=seats,
        state=rec.state,
        engine_version=ENGINE_VERSION,
    )


def finished_at_ms(record: MatchRecord) -> int:
    """When the match ended: its start plus the last action's offset."""
    last = record.actions[-1].offset_ms if record.actions else 0
    return record.started_at_ms + last


async def keep(history: History, rec: TableRecord) -> None:
    """Write the finished match's record to the history (best effort: a failure is logged,
    and GetMatchRecord writes it later from the table)."""
    record = record_of(rec)
    if record is None:
        return
    try:
        await history.put_record(record, finished_at_ms=finished_at_ms(record), ranked=rec.ranked)
    except (HistoryUnavailable, HistoryConflict) as exc:
        log.warning("match_record_not_kept", table_id=rec.table_id, error=str(exc))


async def match_record(history: History, table_id: str, rec: TableRecord | None) -> MatchRecord:
    """The record of a table's finished match: from the history, else from ``rec`` (the
    table's record if the store still has it). NOT_FOUND TABLE_NOT_FOUND with neither,
    FAILED_PRECONDITION MATCH_NOT_OVER before the match ends."""
    try:
        found = await history.get_record(table_id)
    except HistoryUnavailable as exc:
        log.warning("history_unavailable", error=str(exc))
        found = None
        if rec is None:
            raise Unavailable(
                "the match history cannot be reached; retry later", reason=Reason.STORE_UNAVAILABLE
            ) from None
    if found is not None:
        return found
    if rec is None:
        raise NotFound("no such table", reason=Reason.TABLE_NOT_FOUND)
    record = record_of(rec)
    if record is None:
        if rec.status == FINISHED:
            raise NotFound(
                "this table's match was played without a record", reason=Reason.TABLE_NOT_FOUND
            )
        raise FailedPrecondition("the match is not over yet", reason=Reason.MATCH_NOT_OVER)
    await keep(history, rec)
    return record
