"""The store interface: small, so that each store (memory, Redis) implements it honestly.

A table is one record (opaque bytes, or a :class:`Deferred` whose bytes are made when a store
needs them) with a version that grows by one per commit, plus an append-only log of events
with gap-free sequence numbers. Every change goes through
:meth:`Store.commit`, a compare-and-set that in one atomic step checks the version and the
idempotency key, writes the record, appends the events, updates the lobby entry and the
table's due-item, and then publishes the events to subscribers of any replica. (The Redis
store updates the lobby and due-item indexes in a second step right after the atomic one,
so that it runs on a Redis Cluster; a crash in between is repaired from the table.)
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping, Sequence

from .queue import TicketQueue


class StoreUnavailable(Exception):
    """The store cannot be reached (the server answers UNAVAILABLE)."""


class Deferred:
    """A record's bytes, encoded only when a store needs them (:func:`record_bytes`).

    A store that keeps records in its own process (the memory store) keeps this object as it
    is, and the replica that committed it, which holds the decoded record it stands for, loads
    that without encoding or decoding anything. A store that sends records elsewhere (Redis)
    takes the bytes at once. Once encoded, the bytes are kept and what they encode is let go.
    """

    __slots__ = ("_data", "_encode")

    def __init__(self, encode: Callable[[], bytes]) -> None:
        self._encode: Callable[[], bytes] | None = encode
        self._data = b""

    def data(self) -> bytes:
        """The bytes (encoded on the first call)."""
        if self._encode is not None:
            self._data, self._encode = self._encode(), None
        return self._data

    def encoded(self) -> bytes | None:
        """The bytes if they have been made (None: not yet, and not made now)."""
        return None if self._encode is not None else self._data


RecordData = bytes | Deferred
"""A table's record as a store holds it: bytes, or bytes yet to be made."""


def record_bytes(data: RecordData) -> bytes:
    """The bytes of a record (a :class:`Deferred` one encoded now)."""
    return data if isinstance(data, bytes) else data.data()


def same_record(kept: RecordData, found: RecordData) -> bool:
    """Whether ``found`` (what a store holds) is the record ``kept`` (what a replica
    committed): the same object (the memory store keeps what it was given), or the same
    bytes (Redis gives back the bytes it was sent, which the kept :class:`Deferred` made for
    the commit). Encodes nothing: a Deferred not encoded yet is equal to itself only."""
    if kept is found:
        return True
    a = kept if isinstance(kept, bytes) else kept.encoded()
    b = found if isinstance(found, bytes) else found.encoded()
    return a is not None and a == b


@dataclasses.dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as stored: serialized ``tute.v1.Event`` per audience.

    ``public`` is what spectators and seats without a private variant receive;
    ``private[seat]`` replaces it for that seat (its own dealt hand, its own drawn card).
    """

    seq: int
    public: bytes
    private: Mapping[int, bytes] = dataclasses.field(default_factory=dict)
    time: float = dataclasses.field(default=0.0, compare=False)
    """When it was committed (Unix time), as its bytes say: the committing replica knows it
    without reading them; 0.0 for an event read back from a store's bytes (they tell)."""
    ended_seat: int = dataclasses.field(default=-1, compare=False)
    """The seat whose occupancy it ends (``service.wire.ended_seat``; -1: none), known with
    ``time``."""

    def for_seat(self, seat: int | None) -> bytes:
        if seat is not None and seat in self.private:
            return self.private[seat]
        return self.public


@dataclasses.dataclass(frozen=True, slots=True)
class LobbyEntry:
    """A public table waiting for players, as the lobby lists it."""

    table_id: str
    preset: str
    players: int
    free_seats: int
    created_at: float


LobbyCursor = tuple[float, str]
"""A position in the lobby's order: (created_at, table_id) of the last table of a page."""


@dataclasses.dataclass(frozen=True, slots=True)
class DueItem:
    """The next thing due at a table (a turn deadline or a bot's turn) at ``due_at``."""

    table_id: str
    due_at: float


@dataclasses.dataclass(frozen=True, slots=True)
class Commit:
    """One change of a table, as :meth:`Store.commit` writes it in one atomic step.

    ``record`` is written at ``expected_version + 1`` and ``events`` (sequence numbers right
    after the table's last) are appended. ``status`` is ``waiting``, ``playing`` or
    ``finished`` ('': unchanged; a finished table gets its retention TTL). ``lobby`` is the
    table's lobby entry (None: not listed), ``due_at`` when the scheduler must look at it (0:
    nothing due), ``bot_seats`` its bot seats (:meth:`Store.count_bot_seats`), ``hold``: a
    finished table that still has work due (its ratings) is kept as long as an active one,
    not only for the finished tables' retention. Under a
    non-empty ``idempotency_key`` the store remembers ``response``, the first answer, which a
    repeat of the key gets instead of a change; a response without a key is refused (nothing
    would ever read it).
    """

    expected_version: int
    record: RecordData
    events: Sequence[StoredEvent] = ()
    status: str = ""
    lobby: LobbyEntry | None = None
    due_at: float = 0.0
    idempotency_key: str = ""
    response: bytes = b""
    bot_seats: int = 0
    hold: bool = False

    def __post_init__(self) -> None:
        if self.response and not self.idempotency_key:
            raise ValueError("a commit stores a response only under an idempotency key")


@dataclasses.dataclass(frozen=True, slots=True)
class ListedTable:
    """One table of a lobby page as :meth:`Store.lobby_tables` reads it: its lobby entry,
    its version and record (0 and None: the table is gone since it was listed), and its
    watchers present (watcher -> seat)."""

    entry: LobbyEntry
    version: int
    record: RecordData | None
    watchers: Mapping[str, int]


@dataclasses.dataclass(frozen=True, slots=True)
class CommitOutcome:
    """What a commit did: ``applied``; else ``conflict`` (version moved on) or a ``duplicate``
    idempotency key, whose first response is ``response``."""

    applied: bool
    version: int
    duplicate_response: bytes | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class BucketOutcome:
    """What :meth:`Store.take_tokens` decided: ``allowed`` (the cost was taken), else nothing
    was taken and the bucket holds enough again in ``retry_after_s`` seconds."""

    allowed: bool
    retry_after_s: float = 0.0


def refill_and_take(
    held: tuple[float, float] | None, rate: float, burst: float, cost: float, now: float
) -> tuple[tuple[float, float], BucketOutcome]:
    """The token-bucket step of :meth:`Store.take_tokens` on a bucket's ``(tokens, last
    refill time)`` (None: a new bucket, full): the bucket's new state and the outcome. The
    Redis store runs the same steps in Lua."""
    if held is None:
        tokens, last = burst, now
    else:
        tokens, last = held
        if now > last:
            tokens = min(burst, tokens + (now - last) * rate)
            last = now
    if cost <= tokens:
        return (min(burst, tokens - cost), last), BucketOutcome(True)
    return (tokens, last), BucketOutcome(False, (cost - tokens) / rate)


REWOUND = StoredEvent(0, b"")
"""Not an event: a subscription yields this (the very object) when the store found the
table's history gone back or different from what it delivered (a Redis restored from an
older snapshot). The events it yielded before may not be the table's any more; it goes on
with the table's events from its current position, so a watcher loads the table afresh."""


class Subscription(abc.ABC):
    """Live events of one table for one watcher, in sequence order, from subscription on;
    :data:`REWOUND` when the table's history went back or changed under it."""

    __slots__ = ()

    @abc.abstractmethod
    def __aiter__(self) -> AsyncIterator[StoredEvent]: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    def interrupt(self) -> None:
        """Make the iteration stop with :class:`SubscriptionEnded` (server shutting down)."""

    def ready(self, limit: int) -> list[StoredEvent]:
        """Up to ``limit`` of the next events (or :data:`REWOUND`) that are here already,
        taken without waiting, in order (what the iteration would yield next); an ending
        that follows them is kept for the iteration to raise."""
        return []

    async def take(self, limit: int) -> list[StoredEvent]:
        """The next event and up to ``limit - 1`` more that are here already: what iterating
        gives next, waiting for the first (:class:`SubscriptionEnded` as the iteration
        raises it). A stream's loop calls this rather than iterating: a plain coroutine
        costs less per event than an async generator's step."""
        first = await anext(aiter(self))
        return [first, *self.ready(limit - 1)]


class SubscriptionEnded(Exception):
    """A subscription stopped: the watcher fell behind, the server is shutting down, or
    (shared stores) the store cannot be reached. ``reason`` is ``behind``, ``shutdown`` or
    ``unavailable``; in every case the client resumes with its last sequence number."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class QueueSubscription(Subscription):
    """A watcher's bounded queue of events, shared by the stores: the store pushes, the
    watcher iterates; a watcher ``limit`` events behind, or interrupted, is ended with the
    reason (its queue holds the reason last, after the events it did receive).

    The queue is a list and one future the waiting watcher sleeps on (an ``asyncio.Queue``
    costs several kB per open stream)."""

    __slots__ = ("_ended", "_items", "_limit", "_waiter")

    def __init__(self, limit: int) -> None:
        self._items: list[StoredEvent | str] = []
        """The events not yet taken, then (once ended) the reason."""
        self._waiter: asyncio.Future[None] | None = None
        """What the watcher waits on while its queue is empty."""
        self._limit = limit
        self._ended = False

    @abc.abstractmethod
    def _detach(self) -> None:
        """Stop delivering to this subscription (the store's side)."""

    def _put(self, item: StoredEvent | str) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def push_many(self, events: Sequence[StoredEvent]) -> None:
        """Queue consecutive events (one commit's, one read's), waking the watcher once; the
        events past the queue's limit end it with ``behind`` (nothing after it ended)."""
        if self._ended:
            return
        items = self._items
        room = self._limit - len(items)
        if len(events) > room:
            items.extend(events[: max(0, room)])
            self.end("behind")
            return
        items.extend(events)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def rewound(self) -> None:
        """The table's history changed under this subscription: queue :data:`REWOUND` (a
        watcher that cannot take it any more is ended with ``behind``)."""
        if self._ended:
            return
        if len(self._items) >= self._limit:
            self.end("behind")
        else:
            self._put(REWOUND)

    def end(self, reason: str) -> None:
        """Detach, and make the iteration stop with SubscriptionEnded(reason)."""
        if not self._ended:
            self._ended = True
            self._detach()
            self._put(reason)

    def interrupt(self) -> None:
        self.end("shutdown")

    def ready(self, limit: int) -> list[StoredEvent]:
        items = self._items
        out: list[StoredEvent] = []
        while len(out) < limit and items:
            item = items[0]
            if isinstance(item, str):
                break  # the reason stays: the iteration raises it next
            out.append(item)
            del items[0]
        return out

    async def __aiter__(self) -> AsyncIterator[StoredEvent]:
        while True:
            got = await self.take(1)
            yield got[0]

    async def take(self, limit: int) -> list[StoredEvent]:
        items = self._items
        while not items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        event = items[0]
        if isinstance(event, str):
            raise SubscriptionEnded(event)  # the reason stays: an ended subscription stays ended
        del items[0]
        return [event, *self.ready(limit - 1)] if limit > 1 and items else [event]

    async def close(self) -> None:
        self._ended = True
        self._detach()


class Store(abc.ABC):
    """Tables, events, lobby and due-items. Every method may raise :class:`StoreUnavailable`."""

    @abc.abstractmethod
    async def create(
        self,
        table_id: str,
        record: bytes,
        invite_code: str,
        lobby: LobbyEntry | None,
        *,
        due_at: float = 0.0,
    ) -> None:
        """Store a new table at version 1 (``record`` must encode version 1), status waiting,
        with its due time (0: nothing due)."""

    @abc.abstractmethod
    async def load(self, table_id: str) -> tuple[int, RecordData] | None:
        """(version, record) of a table, or None if unknown (the record as committed: a
        :class:`Deferred` one may come back as that very object)."""

    def recent(self, table_id: str) -> tuple[int, RecordData] | None:
        """(version, record) of a table as this replica last saw it committed, without a
        round trip; None when it knows of none (the default). The table may have moved on
        since: a commit made from it succeeds only if it has not (its expected version), and
        what a change finds wrong with it must be checked again on a :meth:`load`."""
        return None

    @abc.abstractmethod
    async def find_invite(self, invite_code: str) -> str | None:
        """The table id of a private table's invite code."""

    @abc.abstractmethod
    async def commit(self, table_id: str, commit: Commit) -> CommitOutcome:
        """Atomically: if ``commit.idempotency_key`` was used, return its first response; if
        the version is not ``commit.expected_version``, a conflict; else write the record at
        ``expected_version + 1``, append the events, remember the response under the key, set
        the lobby entry, the due time, the status and the bot seats (see :class:`Commit`),
        and publish the events."""

    @abc.abstractmethod
    async def delete(self, table_id: str, expected_version: int) -> bool:
        """If the table is at ``expected_version``, remove it with everything about it (events,
        idempotency keys, presence, lobby entry, due-item, invite code) and end its live
        subscriptions with ``behind`` (a resume then finds no table); True when removed."""

    @abc.abstractmethod
    async def idempotent_response(self, table_id: str, idempotency_key: str) -> bytes | None:
        """The first response stored under an idempotency key, if any."""

    @abc.abstractmethod
    async def events_after(self, table_id: str, seq: int) -> list[StoredEvent] | None:
        """Stored events with sequence > ``seq``; None if some of them are no longer kept."""

    @abc.abstractmethod
    async def subscribe(self, table_id: str) -> Subscription:
        """Live events of a table from now on."""

    @abc.abstractmethod
    async def lobby(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int
    ) -> list[LobbyEntry]:
        """Open public tables, newest first (as ListTables promises): ordered by
        ``(created_at, table_id)`` descending, filtered ('' / 0: any), and when ``after`` is
        given only those that come after that position (which need not be listed any more:
        a page keeps its place when the table it ended with leaves the lobby)."""

    @abc.abstractmethod
    async def lobby_tables(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int, now: float
    ) -> list[ListedTable]:
        """A page of :meth:`lobby` with each table's version, record and watchers present at
        ``now``, read in one batch (a table gone since it was listed has no record)."""

    @abc.abstractmethod
    async def claim_due(self, now: float, lease_s: float, limit: int) -> list[DueItem]:
        """Due-items with ``due_at <= now``, each pushed ``lease_s`` into the future so that
        one replica works on it at a time (a crashed replica's claim falls due again)."""

    @abc.abstractmethod
    async def renew_due(self, held: Mapping[str, float], until: float) -> list[str]:
        """Extend claims this replica still holds: each table of ``held`` whose due-item is
        still at the lease end its claim (or last renewal) gave it, ``held[table]`` (no commit
        moved it, no other replica claimed it since), is pushed to ``until``. The tables
        renewed; the others are no longer this replica's to work on."""

    @abc.abstractmethod
    async def next_due(self) -> float | None:
        """The earliest due time, for the scheduler's sleep."""

    @abc.abstractmethod
    async def count_tables(self) -> dict[str, int]:
        """How many tables are stored, by status (for limits and metrics)."""

    @abc.abstractmethod
    async def count_bot_seats(self) -> int:
        """The bot seats of every waiting or playing table, as their last commits recorded
        them (the server-wide budget of bots). Tables that finished or are gone count none;
        a table that expired may count until the store notices (the scheduler's pass)."""

    @abc.abstractmethod
    async def set_presence(self, table_id: str, watcher: str, seat: int, expires_at: float) -> None:
        """``watcher`` (one open WatchTable stream of a seated player, on any replica) watches
        as ``seat`` until ``expires_at``; the replica refreshes it while the stream is open, so
        a crashed replica's watchers fade out by themselves."""

    @abc.abstractmethod
    async def clear_presence(self, table_id: str, watcher: str) -> None:
        """The watcher's stream ended."""

    @abc.abstractmethod
    async def present_watchers(self, table_id: str, now: float) -> dict[str, int]:
        """The watchers whose presence has not expired at ``now``, with their seats."""

    async def present_seats(self, table_id: str, now: float) -> frozenset[int]:
        """Seats with at least one watcher whose presence has not expired at ``now``."""
        return frozenset((await self.present_watchers(table_id, now)).values())

    @abc.abstractmethod
    async def take_tokens(
        self, key: str, rate: float, burst: float, cost: float, now: float
    ) -> BucketOutcome:
        """One atomic step of the token bucket ``key``, shared by every replica: the bucket
        holds at most ``burst`` tokens and gains ``rate`` (> 0) per second; a bucket never
        used (or left alone until full, then forgotten) is full. Refill it up to ``now``,
        then take ``cost`` (<= ``burst``) when it holds that many (allowed), else take nothing
        and say in how many seconds it will. A negative ``cost`` gives tokens back (up to
        ``burst``). A ``now`` before the bucket's last one (clocks of replicas a little
        apart) refills nothing. ``now`` is the caller's clock, so a test can drive it."""

    @abc.abstractmethod
    async def ping(self) -> None:
        """Raise StoreUnavailable when the store cannot be reached."""

    def tickets(self) -> TicketQueue:
        """The matchmaking queue kept beside the tables (:mod:`.queue`), shared by every
        replica of this store."""
        raise NotImplementedError(f"{type(self).__name__} keeps no matchmaking queue")

    async def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release connections."""
