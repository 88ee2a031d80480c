"""The embedded in-memory store: one process, no persistence (the default).

Everything lives in dicts guarded by the event loop (no awaits inside a critical section, so
each method is atomic). Subscribers get events through bounded queues; a watcher that falls
too far behind is cut off and resumes from its last sequence number. Retention and TTLs are
the Redis store's: each table keeps at least its last ``retention`` events (a resume from a
trimmed position gets None from :meth:`MemoryStore.events_after`, so the app sends a
snapshot), a finished table stays ``finished_ttl_s`` after its last commit (a held one,
:attr:`~service.store.base.Commit.hold`, as long as the others), a waiting or playing one
``abandoned_ttl_s``; ``clock`` tells the time for those TTLs.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..clock import SYSTEM_CLOCK, Clock
from .base import (
    BucketOutcome,
    Commit,
    CommitOutcome,
    DueItem,
    ListedTable,
    LobbyCursor,
    LobbyEntry,
    QueueSubscription,
    RecordData,
    Store,
    StoredEvent,
    Subscription,
    refill_and_take,
)
from .queue import MemoryQueue, TicketQueue

QUEUE_LIMIT = 10_000
RETENTION = 10_000
"""Events kept per table by default (as the Redis store's ``retention``)."""


class _Table:
    __slots__ = (
        "events",
        "expires_at",
        "first_seq",
        "idempotency",
        "last_seq",
        "presence",
        "record",
        "status",
        "subscribers",
        "version",
    )

    def __init__(self, record: bytes) -> None:
        self.record: RecordData = record
        self.version = 1
        self.events: list[StoredEvent] = []
        """The kept events: sequence numbers ``first_seq`` .. ``last_seq``, without gaps."""
        self.first_seq = 1
        self.last_seq = 0
        self.idempotency: dict[str, bytes] = {}
        self.subscribers: set[_MemorySubscription] = set()
        self.expires_at = 0.0
        self.status = "waiting"
        self.presence: dict[str, tuple[int, float]] = {}


class _MemorySubscription(QueueSubscription):
    __slots__ = ("_table",)

    def __init__(self, table: _Table) -> None:
        super().__init__(QUEUE_LIMIT)
        self._table = table

    def _detach(self) -> None:
        self._table.subscribers.discard(self)


class MemoryStore(Store):
    """Tables in this process's memory. ``finished_ttl_s``: how long finished tables stay;
    ``abandoned_ttl_s``: how long a waiting or playing table stays without a commit;
    ``retention``: events kept per table (as the Redis store's); ``clock``: the time for the
    TTLs."""

    def __init__(
        self,
        finished_ttl_s: float = 3600.0,
        abandoned_ttl_s: float = 86400.0,
        *,
        retention: int = RETENTION,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if retention < 1:
            raise ValueError("retention must be at least 1")
        self._tables: dict[str, _Table] = {}
        self._invites: dict[str, str] = {}
        self._lobby: dict[str, LobbyEntry] = {}
        self._due: dict[str, float] = {}
        self._finished_ttl_s = finished_ttl_s
        self._abandoned_ttl_s = abandoned_ttl_s
        self._buckets: dict[str, tuple[float, float, float]] = {}
        """Token buckets: key -> (tokens, last refill time, when it is full again)."""
        self._sweep_buckets_at = 4096
        self._bots: dict[str, int] = {}
        """Bot seats of the waiting and playing tables that have any."""
        self.retention = retention
        self._clock = clock
        self._tickets = MemoryQueue()

    def tickets(self) -> TicketQueue:
        return self._tickets

    async def create(
        self,
        table_id: str,
        record: bytes,
        invite_code: str,
        lobby: LobbyEntry | None,
        *,
        due_at: float = 0.0,
    ) -> None:
        if table_id in self._tables:
            raise ValueError("table id already used")
        table = self._tables[table_id] = _Table(record)
        table.expires_at = self._clock() + self._abandoned_ttl_s
        if invite_code:
            self._invites[invite_code] = table_id
        if lobby is not None:
            self._lobby[table_id] = lobby
        if due_at:
            self._due[table_id] = due_at

    def _get(self, table_id: str) -> _Table | None:
        t = self._tables.get(table_id)
        if t is not None and t.expires_at and t.expires_at < self._clock():
            self._drop(table_id)
            return None
        return t

    def _drop(self, table_id: str) -> None:
        t = self._tables.pop(table_id, None)
        self._lobby.pop(table_id, None)
        self._due.pop(table_id, None)
        self._bots.pop(table_id, None)
        for code in [c for c, t in self._invites.items() if t == table_id]:
            del self._invites[code]
        if t is not None:
            for sub in list(t.subscribers):
                sub.end("behind")  # as on Redis: the watchers resume and find no table

    async def delete(self, table_id: str, expected_version: int) -> bool:
        t = self._get(table_id)
        if t is None or t.version != expected_version:
            return False
        self._drop(table_id)
        return True

    async def load(self, table_id: str) -> tuple[int, RecordData] | None:
        t = self._get(table_id)
        return None if t is None else (t.version, t.record)

    async def find_invite(self, invite_code: str) -> str | None:
        table_id = self._invites.get(invite_code)
        return table_id if table_id is not None and self._get(table_id) else None

    async def commit(self, table_id: str, commit: Commit) -> CommitOutcome:  # noqa: C901 - the one atomic commit: every part of it under one lock
        t = self._get(table_id)
        if t is None:
            return CommitOutcome(False, 0)
        key, events, status = commit.idempotency_key, commit.events, commit.status
        if key and key in t.idempotency:
            return CommitOutcome(False, t.version, t.idempotency[key])
        if t.version != commit.expected_version:
            return CommitOutcome(False, t.version)
        t.version += 1
        t.record = commit.record
        if events:
            t.events.extend(events)
            t.last_seq = events[-1].seq
            # Trim in steps of an eighth, so that trimming costs O(1) per event on average;
            # at least ``retention`` events stay (Redis's ``MAXLEN ~`` keeps a few more too).
            excess = len(t.events) - self.retention
            if excess > self.retention // 8:
                del t.events[:excess]
                t.first_seq = t.events[0].seq
        if key:
            t.idempotency[key] = commit.response
        if commit.lobby is None:
            self._lobby.pop(table_id, None)
        else:
            self._lobby[table_id] = commit.lobby
        if commit.due_at:
            self._due[table_id] = commit.due_at
        else:
            self._due.pop(table_id, None)
        if status:
            t.status = status
        if t.status == "finished" and not commit.hold:
            t.expires_at = self._clock() + self._finished_ttl_s
        else:
            t.expires_at = self._clock() + self._abandoned_ttl_s
        if commit.bot_seats and t.status in ("waiting", "playing"):
            self._bots[table_id] = commit.bot_seats
        else:
            self._bots.pop(table_id, None)
        if events:
            for sub in list(t.subscribers):
                sub.push_many(events)
        return CommitOutcome(True, t.version)

    async def idempotent_response(self, table_id: str, idempotency_key: str) -> bytes | None:
        t = self._get(table_id)
        return None if t is None else t.idempotency.get(idempotency_key)

    async def events_after(self, table_id: str, seq: int) -> list[StoredEvent] | None:
        t = self._get(table_id)
        if t is None:
            return None
        seq = max(seq, 0)
        if t.last_seq <= seq:
            return []
        if seq + 1 < t.first_seq:
            return None  # trimmed (retention): the caller sends a snapshot
        # Sequence numbers have no gaps: event n sits at index n - first_seq.
        return t.events[seq + 1 - t.first_seq :]

    async def subscribe(self, table_id: str) -> Subscription:
        t = self._get(table_id)
        if t is None:
            raise KeyError(table_id)
        sub = _MemorySubscription(t)
        t.subscribers.add(sub)
        return sub

    async def lobby(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int
    ) -> list[LobbyEntry]:
        entries = sorted(
            self._lobby.values(), key=lambda e: (e.created_at, e.table_id), reverse=True
        )
        out: list[LobbyEntry] = []
        for e in entries:
            if after is not None and (e.created_at, e.table_id) >= after:
                continue
            if (preset and e.preset != preset) or (players and e.players != players):
                continue
            out.append(e)
            if len(out) >= limit:
                break
        return out

    async def lobby_tables(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int, now: float
    ) -> list[ListedTable]:
        out = []
        for entry in await self.lobby(preset, players, after, limit):
            t = self._get(entry.table_id)
            if t is None:
                out.append(ListedTable(entry, 0, None, {}))
            else:
                watchers = await self.present_watchers(entry.table_id, now)
                out.append(ListedTable(entry, t.version, t.record, watchers))
        return out

    async def claim_due(self, now: float, lease_s: float, limit: int) -> list[DueItem]:
        due = sorted((at, tid) for tid, at in self._due.items() if at <= now)[:limit]
        for _, tid in due:
            self._due[tid] = now + lease_s
        ttl_now = self._clock()
        for tid in [
            tid for tid, t in self._tables.items() if t.expires_at and t.expires_at < ttl_now
        ]:
            self._drop(tid)
        return [DueItem(tid, at) for at, tid in due]

    async def renew_due(self, held: Mapping[str, float], until: float) -> list[str]:
        renewed = [tid for tid, at in held.items() if self._due.get(tid) == at]
        for tid in renewed:
            self._due[tid] = until
        return renewed

    async def next_due(self) -> float | None:
        return min(self._due.values(), default=None)

    async def count_tables(self) -> dict[str, int]:
        counts = {"waiting": 0, "playing": 0, "finished": 0}
        for t in self._tables.values():
            counts[t.status] = counts.get(t.status, 0) + 1
        return counts

    async def count_bot_seats(self) -> int:
        return sum(n for table_id, n in list(self._bots.items()) if self._get(table_id))

    async def set_presence(self, table_id: str, watcher: str, seat: int, expires_at: float) -> None:
        t = self._get(table_id)
        if t is not None:
            t.presence[watcher] = (seat, expires_at)

    async def clear_presence(self, table_id: str, watcher: str) -> None:
        t = self._get(table_id)
        if t is not None:
            t.presence.pop(watcher, None)

    async def present_watchers(self, table_id: str, now: float) -> dict[str, int]:
        t = self._get(table_id)
        if t is None:
            return {}
        return {watcher: seat for watcher, (seat, until) in t.presence.items() if until > now}

    async def take_tokens(
        self, key: str, rate: float, burst: float, cost: float, now: float
    ) -> BucketOutcome:
        held = self._buckets.get(key)
        state, outcome = refill_and_take(
            None if held is None else (held[0], held[1]), rate, burst, cost, now
        )
        tokens, last = state
        self._buckets[key] = (tokens, last, last + (burst - tokens) / rate)
        if len(self._buckets) > self._sweep_buckets_at:
            # A bucket full again is as good as none: forget those (as Redis expires them).
            self._buckets = {k: b for k, b in self._buckets.items() if b[2] > now}
            self._sweep_buckets_at = max(4096, 2 * len(self._buckets))
        return outcome

    async def ping(self) -> None:
        return None
