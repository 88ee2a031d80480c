"""The one mutation path: load, change, number, compare-and-set commit, retry.

Every change to a table goes through :meth:`Committer.mutate` (or :meth:`Committer.mutate_once`
for a request with an idempotency key): load the record and its version from the store, run
the change (:mod:`.changes`) on it, give the new events their sequence numbers, then commit
with compare-and-set on the version: the record, the events, the idempotency key and its
response, the lobby entry and the table's next due time in one atomic store call; the store
publishes the events. A lost race is retried for callers without ``expect`` (an expected
version), and reported as ABORTED to one that gave it.

Idempotency is this module's alone: a repeated key is answered with the first call's response,
whether the store finds the key at commit or the change fails because the first call already
changed the table (then the stored response is looked up).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import structlog

from .. import wire
from ..clock import Clock
from ..config import Settings
from ..durable import History
from ..errors import Aborted, NotFound, ServiceError
from ..metrics import Metrics
from ..players import PlayerStore
from ..reasons import Reason
from ..store.base import (
    Commit,
    Deferred,
    LobbyEntry,
    RecordData,
    Store,
    StoredEvent,
    record_bytes,
    same_record,
)
from ..wire import EventVariants
from . import records
from .access import check_table_id
from .changes import Changed
from .model import (
    BOT,
    FINISHED,
    HUMAN,
    PLAYING,
    PUBLIC,
    WAITING,
    TableRecord,
    TableStatus,
    connected,
    copy_record,
    decode_record,
    encode_record,
)

log = structlog.get_logger("tute.tables")

MAX_RETRIES = 16
DECODED_MAX = 4096
"""The most tables whose last committed record this replica keeps decoded (:class:`Committer`)."""
T = TypeVar("T")


class Response(Protocol):
    """A response message (what an idempotency key's first answer is stored as)."""

    def SerializeToString(self) -> bytes: ...


R = TypeVar("R", bound=Response)

Change = Callable[[TableRecord], Changed[T]]
Respond = Callable[[TableRecord, list[EventVariants]], R]


@dataclasses.dataclass
class Context:
    """What every part of a replica's table service shares: the store, the settings, the
    metrics and the clock (one object: a test may swap the clock of a running server)."""

    store: Store
    settings: Settings
    metrics: Metrics
    clock: Clock
    history: History
    """Where finished matches' records are kept (:mod:`.records`)."""
    players: PlayerStore
    """Players, their ratings and ranked results (:mod:`service.players`)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Committed(Generic[T, R]):
    """A change that ran: the record as committed (as loaded, when the change had nothing
    to do: ``committed`` is False), the change's result, the stored events and the response
    built for the commit (with :meth:`Committer.mutate_once`)."""

    record: TableRecord
    result: T
    stored: list[StoredEvent]
    response: R | None = None
    committed: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class Repeated:
    """A repeated idempotency key: the first call's response bytes; nothing was changed."""

    response: bytes


class Committer:
    """Reads tables and commits their changes, through one store."""

    def __init__(self, ctx: Context, *, due: Callable[[float], None]) -> None:
        self.ctx = ctx
        self._due = due
        """Tells the scheduler a committed table falls due at a time (it looks then at the
        latest)."""
        self._decoded: dict[str, tuple[RecordData, TableRecord]] = {}
        """By table: the record data this replica committed last and the record they
        encode. A load that finds that very data in the store (the table has not changed
        since, on any replica) takes a copy instead of decoding it again; in the memory store
        the data is a :class:`~service.store.base.Deferred` that is never encoded at all."""

    async def load(self, table_id: str, *, presence: bool = True) -> TableRecord:
        """The table's record; with ``presence``, also which seats are connected (on any
        replica) for the views built from it."""
        check_table_id(table_id)
        found = await self.ctx.store.load(table_id)
        if found is None:
            raise NotFound("no such table", reason=Reason.TABLE_NOT_FOUND)
        return await self._present(self._record(table_id, *found), presence)

    async def load_recent(
        self, table_id: str, *, presence: bool = True
    ) -> tuple[TableRecord, bool]:
        """The table's record as this replica last saw it committed, without reading the
        store when it can (:meth:`Store.recent`), for a change: (record, False). The table may
        have moved on since; :meth:`mutate_once` given it with ``fresh=False`` commits only
        if it has not, and checks on a fresh load whatever the change finds wrong with it.
        (record, True): read from the store (:meth:`load`)."""
        check_table_id(table_id)
        found = self.ctx.store.recent(table_id)
        if found is None:
            return await self.load(table_id, presence=presence), True
        return await self._present(self._record(table_id, *found), presence), False

    async def _present(self, rec: TableRecord, presence: bool) -> TableRecord:
        """``rec``, with which seats are connected (on any replica) when ``presence``."""
        if presence:
            watchers = await self.ctx.store.present_watchers(rec.table_id, self.ctx.clock())
            rec.connected = connected(rec, watchers)
        return rec

    def _record(self, table_id: str, version: int, data: RecordData) -> TableRecord:
        """The record of ``data``: a copy of the one kept decoded when it is that one."""
        kept = self._decoded.get(table_id)
        if kept is not None and same_record(kept[0], data):
            rec = copy_record(kept[1])
        else:
            rec = decode_record(record_bytes(data))
        rec.version = version
        return rec

    async def lobby_page(
        self, preset: str, players: int, after: tuple[float, str] | None, size: int
    ) -> tuple[list[TableRecord], LobbyEntry | None]:
        """A page of the lobby (one batched store read): its tables with their presence (one
        gone since it was listed is left out) and, when more follow, the page's last entry
        (where the next page starts)."""
        listed = await self.ctx.store.lobby_tables(
            preset, players, after, size + 1, self.ctx.clock()
        )
        page = []
        for table in listed[:size]:
            if table.record is None:
                continue  # gone since it was listed
            rec = decode_record(record_bytes(table.record))
            rec.version = table.version
            rec.connected = connected(rec, table.watchers)
            page.append(rec)
        return page, listed[size - 1].entry if len(listed) > size else None

    async def create(self, rec: TableRecord) -> None:
        """Store a new table's record (its first version)."""
        self.set_expiry(rec, rec.created_at)
        await self.ctx.store.create(
            rec.table_id,
            encode_record(rec),
            rec.invite_code,
            self.lobby_entry(rec),
            due_at=self.due_at(rec, rec.created_at),
        )

    async def mutate(
        self,
        table_id: str,
        change: Change[T],
        *,
        expect: int | None = None,
        loaded: TableRecord | None = None,
    ) -> Committed[T, Response]:
        """Run ``change`` on the table and commit it; retry lost races (unless ``expect``,
        the version the caller expects the table at: ABORTED STALE_VERSION when it is not).

        ``loaded``: the record the caller just loaded, used for the first attempt (saves a
        store round trip; a lost race loads afresh)."""
        done: Committed[T, Response] | Repeated = await self._run(
            table_id, change, expect=expect, loaded=loaded, key="", respond=None
        )
        assert isinstance(done, Committed)
        return done

    async def mutate_once(
        self,
        table_id: str,
        key: str,
        change: Change[T],
        respond: Respond[R],
        *,
        expect: int | None = None,
        loaded: TableRecord | None = None,
        fresh: bool = True,
    ) -> Committed[T, R] | Repeated:
        """:meth:`mutate` for a request with an idempotency ``key`` ('' for none): the
        response ``respond`` builds from the committed record and events is stored with the
        commit, and a repeat of the key gets it back (:class:`Repeated`) without a change.

        ``fresh`` False: ``loaded`` came from :meth:`load_recent` and may be stale; an error
        or a change with nothing to do found on it is checked again on a fresh load."""
        return await self._run(
            table_id, change, expect=expect, loaded=loaded, key=key, respond=respond, fresh=fresh
        )

    async def _run(
        self,
        table_id: str,
        change: Change[T],
        *,
        expect: int | None,
        loaded: TableRecord | None,
        key: str,
        respond: Respond[R] | None,
        fresh: bool = True,
    ) -> Committed[T, R] | Repeated:
        store = self.ctx.store
        for _ in range(MAX_RETRIES):
            if loaded is None:
                rec, fresh = await self.load(table_id), True
            else:
                rec, loaded = loaded, None
            status_before = rec.status
            try:
                if expect is not None and rec.version != expect:
                    raise Aborted(
                        f"the table is at version {rec.version}, not {expect}",
                        reason=Reason.STALE_VERSION,
                        metadata={"current_version": str(rec.version)},
                    )
                changed = change(rec)
            except ServiceError:
                if not fresh:
                    continue  # found on a record that may be stale: again on a fresh load
                # A repeat whose first call committed since: the first answer.
                first = await store.idempotent_response(table_id, key) if key else None
                if first is not None:
                    return Repeated(first)
                raise
            if not changed.commit:
                if not fresh:
                    continue
                return Committed(rec, changed.result, [], committed=False)
            done, version = await self._commit(table_id, rec, status_before, changed, key, respond)
            if done is not None:
                return done
            if expect is not None:
                raise Aborted(
                    "the table changed during this request",
                    reason=Reason.STALE_VERSION,
                    metadata={"current_version": str(version)},
                )
        raise Aborted("the table is too busy; try again", reason=Reason.CONTENTION)

    async def _commit(
        self,
        table_id: str,
        rec: TableRecord,
        status_before: TableStatus,
        changed: Changed[T],
        key: str,
        respond: Respond[R] | None,
    ) -> tuple[Committed[T, R] | Repeated | None, int]:
        """Number the change's events and commit it: what to answer (None: the race was lost)
        and the version the store has."""
        now = self.ctx.clock()
        self.set_expiry(rec, now)
        stored = self.number(rec, changed.events, now)
        response = respond(rec, changed.events) if respond is not None else None
        due = self.due_at(rec, now)
        # A playing table's record is kept decoded for its next load: a copy, made before
        # the commit's await, that nothing changes. Its bytes are that copy's, made only
        # when the store needs them (Redis: at once; the memory store: when it is evicted
        # from the decoded ones, or never).
        kept = copy_record(rec) if rec.status == PLAYING else None
        data: RecordData = (
            encode_record(rec) if kept is None else Deferred(functools.partial(encode_record, kept))
        )
        outcome = await self.ctx.store.commit(
            table_id,
            Commit(
                rec.version - 1,
                data,
                stored,
                status=rec.status,
                lobby=self.lobby_entry(rec),
                due_at=due,
                idempotency_key=key,
                response=response.SerializeToString() if key and response is not None else b"",
                bot_seats=rec.bot_seats(),
                hold=rating_due(rec),
            ),
        )
        if outcome.duplicate_response is not None:
            return Repeated(outcome.duplicate_response), outcome.version
        if not outcome.applied:
            return None, outcome.version
        self._keep_decoded(table_id, data, kept)
        if rec.status != WAITING and due:
            self._due(due)
        if rec.status != status_before:
            _log_match(rec, status_before)
            if rec.status == FINISHED:
                await records.keep(self.ctx.history, rec)
        return Committed(rec, changed.result, stored, response), rec.version

    def _keep_decoded(self, table_id: str, data: RecordData, rec: TableRecord | None) -> None:
        """Keep a playing table's committed record decoded (the newest :data:`DECODED_MAX`
        of them): the tables whose next load is near. ``rec`` None: not playing, none kept."""
        decoded = self._decoded
        decoded.pop(table_id, None)  # the newest last: the oldest go first
        if rec is None:
            return
        if len(decoded) >= DECODED_MAX:
            oldest = next(iter(decoded))
            # its bytes made now: the store keeps those rather than the decoded record
            record_bytes(decoded.pop(oldest)[0])
        decoded[table_id] = (data, rec)

    @staticmethod
    def number(rec: TableRecord, events: list[EventVariants], now: float) -> list[StoredEvent]:
        """Give the new events their sequence numbers, the new version and the time."""
        rec.version += 1
        stored = []
        for v in events:
            rec.last_seq += 1
            stored.append(wire.stamp(v, rec.last_seq, rec.version, now))
        return stored

    @staticmethod
    def lobby_entry(rec: TableRecord) -> LobbyEntry | None:
        """A public waiting table with a free seat is listed in the lobby."""
        free = len(rec.free_seats())
        if rec.visibility != PUBLIC or rec.status != WAITING or not free:
            return None
        return LobbyEntry(rec.table_id, rec.preset, rec.rules.players, free, rec.created_at)

    def set_expiry(self, rec: TableRecord, now: float) -> None:
        """A waiting table where no human sits expires ``waiting_ttl_s`` after it came to be
        so (created, or left by its last human); any other table does not."""
        ttl = self.ctx.settings.waiting_ttl_s
        if ttl > 0 and rec.status == WAITING and all(s.occupant != HUMAN for s in rec.seats):
            if not rec.expires_at:
                rec.expires_at = now + ttl
        else:
            rec.expires_at = 0.0

    def due_at(self, rec: TableRecord, now: float) -> float:
        """When the scheduler must look at this table next (0: nothing due). A finished
        ranked match is due until its rating is written (:mod:`.ratings`)."""
        if rec.status == WAITING:
            return rec.expires_at
        if rating_due(rec):
            return now
        if rec.status != PLAYING or rec.state is None:
            return 0.0
        settings = self.ctx.settings
        if rec.seats[rec.state.turn].occupant == BOT:
            due = now + settings.bot_delay_s
        else:
            due = rec.deadline
        grace = settings.disconnect_forfeit_s
        if grace > 0 and rec.away:
            away_due = min(rec.away.values()) + grace
            due = min(due, away_due) if due else away_due
        return due


def rating_due(rec: TableRecord) -> bool:
    """Whether the table is a finished ranked match whose rating is not written yet (see
    :mod:`.ratings`)."""
    return rec.ranked and rec.status == FINISHED and not rec.rated and rec.state is not None


def _log_match(rec: TableRecord, status_before: TableStatus) -> None:
    """The committed change started or ended the table's match: one line about it."""
    if rec.status == PLAYING:
        log.info(
            "match_started", table_id=rec.table_id, preset=rec.preset, players=rec.rules.players
        )
    elif rec.status == FINISHED and status_before == PLAYING and rec.state is not None:
        log.info(
            "match_ended",
            table_id=rec.table_id,
            winners=list(rec.state.winners),
            end_reason=rec.state.end_reason,
            games=len(rec.games),
            forfeited_seat=rec.forfeited_seat,
        )
