"""Live events from Redis, fanned out to this replica's subscriptions (docs/redis-store.md,
"Live events"): on a single Redis from Pub/Sub, one connection of the replica subscribed to
the channel of each table it has watchers of (:class:`LiveFeeds`), with the table's stream
read only to catch up; on a Cluster (or with ``pubsub=0``), one reader per table blocked in
``XREAD`` on its stream (:class:`Readers`)."""

from __future__ import annotations

import asyncio
import struct
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, cast

import structlog
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException, ResponseError

from ..base import QueueSubscription, StoredEvent, Subscription
from .connect import UNREACHABLE, Client, Script, unavailable
from .keys import Keys
from .mux import ReplyProtocol
from .options import RedisOptions

log = structlog.get_logger("tute.store.redis")

QUEUE_LIMIT = 10_000
"""Events a watcher may have waiting before it is ended with ``behind`` (as in memory)."""
XREAD_COUNT = 512
"""Stream entries a reader takes per ``XREAD``."""

_XReadReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None


def event_from_entry(entry_id: bytes, fields: dict[bytes, bytes]) -> StoredEvent:
    """A stream entry (id ``<seq>-0``; ``p`` the public event, ``0``..``3`` the private
    variants) as a stored event."""
    seq = int(entry_id.split(b"-", 1)[0])
    private = {int(k): v for k, v in fields.items() if k != b"p"}
    return StoredEvent(seq, fields.get(b"p", b""), private)


def history_changed(
    seq: int, delivered: dict[bytes, bytes] | None, last: int, entry: dict[bytes, bytes] | None
) -> bool:
    """Has the table's history gone back or changed under a reader that delivered up to
    ``seq`` (the stream entry ``delivered``, None when not read yet), now that the table's
    last sequence number is ``last`` and its stream holds ``entry`` at ``seq`` (None: none)?"""
    if seq and entry is None and last >= seq:
        return True  # the entry delivered last is not in the stream any more
    return last < seq or (entry is not None and delivered is not None and entry != delivered)


class _Sources:
    """This replica's readers or feeds, by table."""

    active: Mapping[str, _Source]

    def _start(self, table_id: str, last_seq: int) -> _Source:
        """The reader or feed of a table that had none here (added to ``active``)."""
        raise NotImplementedError

    def subscribe(self, table_id: str, last_seq: int) -> Subscription:
        """A subscription to ``table_id``'s events after ``last_seq`` (the table's last
        sequence number now, read before the caller loads the table), through the table's
        reader or feed (started here when it has none)."""
        source = self.active.get(table_id) or self._start(table_id, last_seq)
        sub = RedisSubscription(source)
        source.subs.add(sub)
        return sub

    def end(self, table_id: str, reason: str) -> None:
        """End every local subscription of ``table_id`` with ``reason``."""
        source = self.active.get(table_id)
        if source is not None:
            source.end_all(reason)

    def recent(self, table_id: str) -> tuple[int, bytes] | None:
        """The table's record (version, bytes) as its last commit published it, while this
        replica follows the table in step (:meth:`LiveFeed.record`); else None."""
        return None


class Readers(_Sources):
    """This replica's stream readers, one per table with local watchers."""

    def __init__(self, client: Client, keys: Keys, options: RedisOptions) -> None:
        self.client = client
        self.keys = keys
        self.options = options
        self.active: dict[str, TableReader] = {}
        """The running readers by table id."""
        self.at = Script(client, "at")

    def _start(self, table_id: str, last_seq: int) -> TableReader:
        reader = self.active[table_id] = TableReader(self, table_id, last_seq)
        reader.start()
        return reader

    def stop_all(self) -> None:
        for reader in list(self.active.values()):
            reader.stop()

    async def close(self) -> None:
        self.stop_all()

    def forget(self, reader: TableReader) -> None:
        if self.active.get(reader.table_id) is reader:
            del self.active[reader.table_id]

    async def xread(self, stream: str, after: bytes | str) -> _XReadReply:
        """One blocking ``XREAD`` of ``stream`` after ``after``, sent as a plain command:
        redis-py's ``xread`` would also work out each reply's streaming lag for its
        observability hooks, which nothing here reads, on every read."""
        client = self.client
        command = ("XREAD", "COUNT", XREAD_COUNT, "BLOCK", self.options.block_ms)
        if isinstance(client, RedisCluster):
            # Straight to the node of the stream's slot: a plain XREAD would first ask a
            # node which key it reads (COMMAND GETKEYS; XREAD's keys are "movable").
            await client.initialize()
            node = client.get_node_from_key(stream)
            reply = await client.execute_command(
                *command, "STREAMS", stream, after, target_nodes=node
            )
        else:
            reply = await client.execute_command(*command, "STREAMS", stream, after)  # type: ignore[no-untyped-call]
        return cast(_XReadReply, reply)

    async def read_at(
        self, table_id: str, seq: int
    ) -> tuple[int, dict[bytes, bytes] | None] | None:
        """(the table's last sequence number, the entry of ``seq`` or None); None: no table."""
        if isinstance(self.client, RedisCluster):
            await self.client.initialize()  # route by the key, as xread does
        reply = await self.at(
            keys=[self.keys.table(table_id), self.keys.stream(table_id)], args=[f"{seq}-0"]
        )
        if reply is None:
            return None
        entries = reply[2]
        fields = None
        if entries:
            flat = entries[0][1]
            fields = dict(zip(flat[::2], flat[1::2], strict=True))
        return int(reply[1]), fields


class RedisSubscription(QueueSubscription):
    __slots__ = ("_reader",)

    def __init__(self, reader: _Source) -> None:
        super().__init__(QUEUE_LIMIT)
        self._reader = reader

    def _detach(self) -> None:
        self._reader.discard(self)


class _Source:
    """What this replica's subscriptions of one table read from (a reader or a feed): they
    stop it when the last of them leaves."""

    subs: set[RedisSubscription]
    task: asyncio.Task[None] | None

    def _forget(self) -> None:
        raise NotImplementedError

    def discard(self, sub: RedisSubscription) -> None:
        self.subs.discard(sub)
        if not self.subs:
            self.stop()

    def stop(self) -> None:
        self._forget()
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()

    def end_all(self, reason: str) -> None:
        for sub in list(self.subs):
            sub.end(reason)
        self.stop()


class TableReader(_Source):
    """This replica's one reader of one table's stream, fanning out to local watchers.

    It checks that the table's history still continues what it delivered: after every
    failed call (a Redis restart breaks its connection), when the stream is idle, and when
    an entry does not follow the last one delivered. Its check reads the table's last
    sequence number and the entry it delivered last: a table whose last sequence number is
    below it, or whose entry there is missing or different (a Redis restored from an older
    snapshot, then played on past that point), went back in time. Then every subscription
    gets :data:`~service.store.base.REWOUND` and the reader goes on from the table's current
    position."""

    def __init__(self, readers: Readers, table_id: str, after_seq: int) -> None:
        self.readers = readers
        self.table_id = table_id
        self.subs: set[RedisSubscription] = set()
        self.last_id: bytes | str = f"{after_seq}-0"
        self.seq = after_seq
        """The sequence number delivered last (or the table's when the reader started)."""
        self.entry: dict[bytes, bytes] | None = None
        """The stream entry of ``seq`` as delivered (None: not read yet)."""
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"redis-reader-{self.table_id}")

    def _forget(self) -> None:
        self.readers.forget(self)

    async def _check(self, *, diverged: bool = False) -> bool:
        """Does the table still continue what this reader delivered (``diverged``: it is
        known not to)? If not, every subscription gets REWOUND and the reader starts again
        from the table's last event. False: the table is gone."""
        found = await self.readers.read_at(self.table_id, self.seq)
        if found is None:
            return False
        last, entry = found
        diverged = diverged or history_changed(self.seq, self.entry, last, entry)
        if not diverged:
            if self.entry is None:
                self.entry = entry
            return True
        log.warning(
            "stream_history_changed", table_id=self.table_id, delivered=self.seq, last_seq=last
        )
        found = await self.readers.read_at(self.table_id, last)
        if found is None:
            return False
        self.seq, self.entry = last, found[1]
        self.last_id = f"{last}-0"
        for sub in list(self.subs):
            sub.rewound()
        return True

    async def _run(self) -> None:  # noqa: C901 - the stream reader's loop: each branch is one way a read ends
        stream = self.readers.keys.stream(self.table_id)
        grace_s = self.readers.options.reader_grace_s
        down_since: float | None = None
        delay = 0.05
        check = True  # the first round reads the entry the reader starts after
        diverged = False
        try:
            while self.subs:
                try:
                    if check or down_since is not None:
                        # at the start, idle, back after an outage, or after an entry out of
                        # order: does the table still continue what was delivered?
                        if not await self._check(diverged=diverged):
                            self.end_all("behind")  # expired or lost: a resume says NOT_FOUND
                            return
                        down_since, delay, check, diverged = None, 0.05, False, False
                    reply = await self.readers.xread(stream, self.last_id)
                    if not reply:
                        check = True
                        continue
                except (*UNREACHABLE, ResponseError, RedisClusterException) as exc:
                    if isinstance(exc, ResponseError | RedisClusterException) and (
                        not unavailable(exc)
                    ):
                        raise
                    now = time.monotonic()
                    if down_since is None:
                        down_since = now
                        log.warning(
                            "stream_reader_lost_redis", table_id=self.table_id, error=str(exc)
                        )
                    if now - down_since >= grace_s:
                        self.end_all("unavailable")
                        return
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                got: list[StoredEvent] = []
                for _key, entries in reply:
                    for entry_id, fields in entries:
                        event = event_from_entry(entry_id, fields)
                        if event.seq != self.seq + 1:
                            check = diverged = True  # a gap: not the history delivered
                            break
                        self.last_id, self.seq, self.entry = entry_id, event.seq, fields
                        got.append(event)
                if got:  # what continues the history, to every watcher at once
                    for sub in list(self.subs):
                        sub.push_many(got)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("stream_reader_failed", table_id=self.table_id)
            self.end_all("behind")


# -- live events from Pub/Sub (a single Redis) ----------------------------------------------

_COUNT = struct.Struct(">I")
_EVENT = struct.Struct(">IdbB")
"""An event's head in a message: seq, time, ended seat, number of fields."""
_NAME = struct.Struct(">B")
_SIZE = struct.Struct(">I")
CATCH_UP_COUNT = 512
"""Stream entries one catch-up read takes (it reads again while it gets this many)."""
CATCH_UPS_AT_ONCE = 16
"""Catch-up reads a replica runs at once (after an outage every table needs one)."""
HELD_LIMIT = 10_000
"""Messages a table's feed holds while it catches up; past that its watchers are ended with
``behind`` (as a watcher's queue past its limit)."""

Entry = tuple[int, dict[bytes, bytes], float, int]
"""An event as a feed delivers it: seq, its stream entry's fields, time and ended seat (0.0
and -1 when read from the stream: its bytes tell)."""


def database(client: Any) -> int:
    """The database number a single Redis's client uses."""
    return int(client.connection_pool.connection_kwargs.get("db", 0) or 0)


def live_channel(keys: Keys, table_id: str, db: int) -> str:
    """The channel a commit of ``table_id`` publishes its events on (on a single Redis;
    channels are not per database, so the name carries it)."""
    return f"{keys.table(table_id)}:live:{db}"


RECORD_SEQ = 0
"""The sequence number of a message's first entry when it carries the committed record
(fields ``v``: its version, ``r``: its bytes) rather than an event. A reader delivers only
sequence numbers past what it delivered, so a replica that does not know this entry skips
it as an event already delivered."""


def pack_events(events: Sequence[StoredEvent], record: tuple[int, bytes] | None = None) -> bytes:
    """A commit's events as the one message it publishes: for each event its sequence number,
    time and ended seat, and the fields of its stream entry (``p`` and each seat's private
    variant), in order (:func:`unpack_events`). With ``record`` (version, bytes), the record
    the commit stored first, as an entry numbered :data:`RECORD_SEQ`."""
    parts = [_COUNT.pack(len(events) + (record is not None))]
    if record is not None:
        version, data = record
        parts += (_EVENT.pack(RECORD_SEQ, 0.0, -1, 2), _NAME.pack(1), b"v")
        parts += (_SIZE.pack(len(b"%d" % version)), b"%d" % version)
        parts += (_NAME.pack(1), b"r", _SIZE.pack(len(data)), data)
    for ev in events:
        fields = [(b"p", ev.public), *((b"%d" % seat, data) for seat, data in ev.private.items())]
        parts.append(_EVENT.pack(ev.seq, ev.time, ev.ended_seat, len(fields)))
        for name, value in fields:
            parts += (_NAME.pack(len(name)), name, _SIZE.pack(len(value)), value)
    return b"".join(parts)


def unpack_events(data: bytes) -> list[Entry]:
    """What :func:`pack_events` packed; ValueError for anything else."""
    try:
        (n,) = _COUNT.unpack_from(data, 0)
        pos = _COUNT.size
        out: list[Entry] = []
        for _ in range(n):
            seq, at, ended, nf = _EVENT.unpack_from(data, pos)
            pos += _EVENT.size
            fields: dict[bytes, bytes] = {}
            for _ in range(nf):
                k = data[pos]
                name = data[pos + 1 : pos + 1 + k]
                pos += 1 + k
                (m,) = _SIZE.unpack_from(data, pos)
                pos += _SIZE.size
                fields[name] = data[pos : pos + m]
                pos += m
            out.append((seq, fields, at, ended))
    except (struct.error, IndexError) as exc:
        raise ValueError(f"not a live events message: {exc}") from None
    if pos != len(data):
        raise ValueError("not a live events message: bytes left over")
    return out


def _cancelled() -> None:
    """Raise CancelledError if the running task is being cancelled (an error caught in its
    place must not keep a cancelled loop going)."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def message_record(entries: Sequence[Entry]) -> tuple[int, bytes] | None:
    """The record a message's entries carry (:func:`pack_events`), or None."""
    if not entries or entries[0][0] != RECORD_SEQ:
        return None
    fields = entries[0][1]
    try:
        return int(fields[b"v"]), fields[b"r"]
    except (KeyError, ValueError):
        return None


def stored_event(entry: Entry) -> StoredEvent:
    seq, fields, at, ended = entry
    private = {int(k): v for k, v in fields.items() if k != b"p"}
    return StoredEvent(seq, fields.get(b"p", b""), private, time=at, ended_seat=ended)


def _fields(flat: list[bytes]) -> dict[bytes, bytes]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


class LiveFeeds(_Sources):
    """This replica's live events on a single Redis, from Pub/Sub.

    Every commit publishes its events on its table's channel (``commit.lua``). One connection
    of this replica subscribes to the channel of each table it has watchers of, and a
    :class:`LiveFeed` per table hands each message's events to the table's subscriptions as
    it arrives: no call per event, and one connection to Redis whatever the tables.

    A message can be missed (the connection broke, or a commit came before the subscription
    took effect), so a feed reads its table's stream to catch up: once its subscription is
    confirmed, after every outage, when a message does not continue what it delivered, and
    when the table has been quiet for ``block_ms``. Each catch-up also checks that the table's
    history still continues what the feed delivered, as a stream reader does (see
    :class:`TableReader`): if not, the subscriptions get REWOUND. The connection is pinged
    every ``block_ms``, so a dead one times out; after ``reader_grace_s`` without Redis every
    feed ends its watchers with ``unavailable``."""

    def __init__(self, client: Any, keys: Keys, options: RedisOptions) -> None:
        self.client = client
        """The readers' client: its pool's settings make the subscriber's connection, and
        the catch-up reads go through it."""
        self.keys = keys
        self.options = options
        self._db = database(client)
        self.active: dict[str, LiveFeed] = {}
        """The feeds by table id."""
        self._by_channel: dict[bytes, LiveFeed] = {}
        """The active feeds by channel."""
        self._conn: Any = None
        """The subscriber connection, once connected and subscribed (None: not now)."""
        self._gone: asyncio.Future[Exception] | None = None
        """Why the subscriber connection ended, once it has (its protocol sets it)."""
        self._ops: list[tuple[str, bytes]] = []
        """SUBSCRIBE and UNSUBSCRIBE of one channel each, to send in this order."""
        self._unconfirmed: Counter[bytes] = Counter()
        """Channel -> SUBSCRIBE sent on the connection and not yet confirmed."""
        self._send_wake = asyncio.Event()
        self._wanted = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._catch = Script(client, "catchup")
        self._at_once = asyncio.Semaphore(CATCH_UPS_AT_ONCE)
        self.down_since: float | None = None

    @property
    def connected(self) -> bool:
        """Is the subscriber connection up (and subscribed to every channel wanted)?"""
        return self._conn is not None

    def channel(self, table_id: str) -> str:
        """The channel a commit of ``table_id`` publishes its events on."""
        return live_channel(self.keys, table_id, self._db)

    def recent(self, table_id: str) -> tuple[int, bytes] | None:
        feed = self.active.get(table_id)
        return None if feed is None or feed.held is not None else feed.record

    def _start(self, table_id: str, last_seq: int) -> LiveFeed:
        feed = self.active[table_id] = LiveFeed(self, table_id, last_seq)
        channel = self.channel(table_id).encode()
        self._by_channel[channel] = feed
        self._queue("SUBSCRIBE", channel)
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._listen(), name="redis-live-listen"),
                asyncio.create_task(self._send(), name="redis-live-send"),
                asyncio.create_task(self._sweep(), name="redis-live-sweep"),
            ]
        self._wanted.set()
        return feed

    def forget(self, feed: LiveFeed) -> None:
        if self.active.get(feed.table_id) is feed:
            del self.active[feed.table_id]
            channel = self.channel(feed.table_id).encode()
            del self._by_channel[channel]
            self._queue("UNSUBSCRIBE", channel)

    def stop_all(self) -> None:
        for feed in list(self.active.values()):
            feed.stop()
        for task in self._tasks:
            task.cancel()

    async def close(self) -> None:
        """Stop every feed and the subscriber connection."""
        self.stop_all()
        tasks, self._tasks = self._tasks, []
        await asyncio.gather(*tasks, return_exceptions=True)
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.disconnect(nowait=True)

    def _queue(self, command: str, channel: bytes) -> None:
        self._ops.append((command, channel))
        self._send_wake.set()

    async def _send(self) -> None:
        """Send the queued SUBSCRIBE and UNSUBSCRIBE, in order, on the connection (a fresh
        connection subscribes to every channel wanted then: the queue is cleared)."""
        while True:
            # Python 3.11's wait_for (redis-py sends through it) can swallow a cancel that
            # comes as the send completes: the loop checks for one itself
            _cancelled()
            await self._send_wake.wait()
            self._send_wake.clear()
            conn = self._conn
            while self._ops and conn is not None and conn is self._conn and conn.is_connected:
                ops, self._ops = self._ops, []
                try:
                    for command, channel in ops:
                        if command == "SUBSCRIBE":
                            self._unconfirmed[channel] += 1
                        await conn.send_command(command, channel)
                except UNREACHABLE:
                    _cancelled()  # redis-py may turn a cancel mid-send into a lost connection
                    break  # the listener sees the connection broken and subscribes afresh

    async def _connect(self) -> None:
        """A new subscriber connection, subscribed to every channel wanted now; each feed
        catches up once its channel's subscription is confirmed."""
        pool = self.client.connection_pool
        conn = pool.connection_class(**pool.connection_kwargs)
        gone: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()

        def lost(error: Exception) -> None:
            if not gone.done():
                gone.set_result(error)

        try:
            await conn.connect()
            # its replies are parsed and dispatched as they arrive (a ReplyProtocol, no read
            # per message); no byte between two checks a socket timeout apart (pings go
            # every block_ms, under it) ends it; redis-py only sends on it
            protocol = ReplyProtocol(
                lambda replies: self._replies(replies, protocol), lost, conn.socket_timeout
            )
            protocol.take_over(conn)
            channels = list(self._by_channel)
            self._ops.clear()
            self._unconfirmed = Counter(channels)
            for feed in self.active.values():
                feed.hold()
            if channels:
                await conn.send_command("SUBSCRIBE", *channels)
        except BaseException:
            await conn.disconnect(nowait=True)
            raise
        self._gone = gone
        self._conn = conn
        self._send_wake.set()

    async def _listen(self) -> None:
        delay = 0.05
        while True:
            _cancelled()  # (as in _send)
            try:
                if self._conn is None:
                    if not self.active:
                        self._wanted.clear()
                        await self._wanted.wait()
                    await self._connect()
                    if self.down_since is not None:
                        log.info("live_events_back", tables=len(self.active))
                    self.down_since, delay = None, 0.05
                # the messages are dispatched as they come (_replies), until it ends
                assert self._gone is not None
                raise await self._gone
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _cancelled()
                await self._lost(exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _replies(self, replies: list[Any], protocol: ReplyProtocol) -> None:
        """The replies one read of the subscriber connection completed (an error reply ends
        the connection: it is made again, and the feeds catch up)."""
        error = next((r for r in replies if isinstance(r, Exception)), None)
        if error is not None:
            protocol.fail(error)
            return
        for reply in replies:
            try:
                self._dispatch(reply)
            except Exception:
                log.exception("live_message_failed")  # a bug: the feeds catch up when idle

    async def _lost(self, exc: Exception) -> None:
        """The connection failed: drop it; the feeds hold their messages until it is back
        (and catch up then), or end their watchers once Redis has been away for
        ``reader_grace_s``."""
        if not isinstance(exc, UNREACHABLE) and not (
            isinstance(exc, ResponseError) and unavailable(exc)
        ):
            log.exception("live_events_failed")  # a bug: connect afresh, go on
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.disconnect(nowait=True)
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = now
            log.warning("live_events_lost_redis", error=str(exc), tables=len(self.active))
        for feed in list(self.active.values()):
            if now - self.down_since >= self.options.reader_grace_s:
                feed.end_all("unavailable")
            else:
                feed.hold()

    def _dispatch(self, reply: Any) -> None:
        """One message read from the subscriber connection (a ping's answer is a list in
        subscribed mode, else its bytes)."""
        if not isinstance(reply, list) or len(reply) < 3:
            return
        kind = reply[0]
        if kind == b"message":
            feed = self._by_channel.get(reply[1])
            if feed is not None:
                feed.message(reply[2])
        elif kind == b"subscribe":
            channel = reply[1]
            left = self._unconfirmed[channel] - 1
            if left > 0:
                self._unconfirmed[channel] = left
                return
            self._unconfirmed.pop(channel, None)
            feed = self._by_channel.get(channel)
            if feed is not None:
                feed.catch_up(check=True)  # subscribed: what came before is in the stream

    async def _sweep(self) -> None:
        """Every ``block_ms``: ping the connection (a dead one times out), and catch up the
        feeds that were quiet that long or whose last catch-up failed."""
        period = self.options.block_ms / 1000
        while True:
            await asyncio.sleep(period)
            conn = self._conn
            if conn is not None and conn.is_connected:
                self._ops.append(("PING", b""))
                self._send_wake.set()
            now = time.monotonic()
            for feed in list(self.active.values()):
                if feed.idle(now, period):
                    feed.catch_up(check=True)

    async def read(
        self, table_id: str, seq: int
    ) -> tuple[int, dict[bytes, bytes] | None, list[tuple[bytes, list[bytes]]]] | None:
        """(the table's last sequence number, the entry of ``seq`` or None, up to
        :data:`CATCH_UP_COUNT` entries after it); None: no table."""
        async with self._at_once:
            reply = await self._catch(
                keys=[self.keys.table(table_id), self.keys.stream(table_id)],
                args=[f"{seq}-0", f"{seq + 1}-0", CATCH_UP_COUNT],
            )
        if reply is None:
            return None
        last, at, after = reply
        return int(last), (_fields(at[0][1]) if at else None), after


class LiveFeed(_Source):
    """One table's live events on this replica, from its channel (:class:`LiveFeeds`).

    Messages are delivered as they come while the feed is in step; while it catches up
    (reads its table's stream) they are held, and delivered after, past what the read
    delivered."""

    def __init__(self, feeds: LiveFeeds, table_id: str, after_seq: int) -> None:
        self.feeds = feeds
        self.table_id = table_id
        self.subs: set[RedisSubscription] = set()
        self.seq = after_seq
        """The sequence number delivered last (or the table's when the feed started)."""
        self.entry: dict[bytes, bytes] | None = None
        """The stream entry of ``seq`` as delivered (None: not read yet)."""
        self.seen = time.monotonic()
        """When a message came or a catch-up ended last."""
        self.held: list[bytes] | None = []
        """Messages that came while the feed was not in step (None: in step)."""
        self.task: asyncio.Task[None] | None = None
        self._again = False
        """A catch-up asked for while one runs: it reads again when done."""
        self._check = False
        """The next read checks the table's history first."""
        self._failed = False
        """The last catch-up could not reach Redis: the next sweep tries again."""
        self.record: tuple[int, bytes] | None = None
        """The table's record (version, bytes) that the message delivered last carried,
        when that message's events are the last delivered (None: not known). A commit
        published since, not yet delivered, makes it stale: who uses it (a load that saves
        its round trip) commits only if the table is still at its version."""

    def _forget(self) -> None:
        self.feeds.forget(self)

    def hold(self) -> None:
        """Hold messages until the next catch-up (the subscription is being made again)."""
        self.record = None
        if self.held is None:
            self.held = []

    def idle(self, now: float, period: float) -> bool:
        """Should the sweep catch this feed up (quiet for ``period``, or its last catch-up
        failed), with nothing else under way?"""
        busy = self.task is not None and not self.task.done()
        subscribed = self.feeds.connected  # else the new subscription will
        return not busy and subscribed and (self._failed or now - self.seen >= period)

    def message(self, data: bytes) -> None:
        self.seen = time.monotonic()
        held = self.held
        if held is not None:
            if len(held) >= HELD_LIMIT:
                self.end_all("behind")
            else:
                held.append(data)
            return
        try:
            entries = unpack_events(data)
        except ValueError:
            log.exception("live_message_unreadable", table_id=self.table_id)
            self.catch_up(check=False)  # the stream has what it held
            return
        if not self._take(entries):
            self.catch_up(check=False)  # it does not continue what was delivered: read
            if self.held is not None:
                self.held.append(data)  # after the read: its record, if still the last

    def _take(self, entries: Sequence[Entry]) -> bool:
        """Deliver a message's events (:meth:`_deliver`) and keep the record it carries if
        its events are the last delivered."""
        ok = self._deliver(entries)
        record = message_record(entries) if ok else None
        self.record = record if record is not None and entries[-1][0] == self.seq else None
        return ok

    def _deliver(self, entries: Sequence[Entry]) -> bool:
        """Deliver the events that continue what was delivered (those already delivered are
        skipped); False at the first that does not continue it (a gap)."""
        got: list[StoredEvent] = []
        ok = True
        for entry in entries:
            seq = entry[0]
            if seq <= self.seq:
                continue
            if seq != self.seq + 1:
                ok = False
                break
            self.seq, self.entry = seq, entry[1]
            got.append(stored_event(entry))
        if got:
            for sub in list(self.subs):
                sub.push_many(got)
        return ok

    def catch_up(self, *, check: bool) -> None:
        """Hold messages and read the table's stream after what was delivered (``check``:
        first check that its history still continues it); then deliver what was held."""
        self.hold()
        self._check = self._check or check
        if self.task is not None and not self.task.done():
            self._again = True
            return
        self.task = asyncio.create_task(self._catch_up(), name=f"redis-live-{self.table_id}")

    async def _catch_up(self) -> None:
        try:
            while True:
                self._again = False
                check, self._check = self._check, False
                if not await self._read(check):
                    return
                held, self.held = self.held or [], None
                in_step = all(self._take(unpack_events(data)) for data in held)
                self.seen = time.monotonic()
                if in_step and not self._again:
                    return
                self.hold()
        except asyncio.CancelledError:
            raise
        except (*UNREACHABLE, ResponseError, ValueError) as exc:
            if isinstance(exc, ResponseError) and not unavailable(exc):
                log.exception("live_feed_failed", table_id=self.table_id)
                self.end_all("behind")
                return
            if isinstance(exc, ValueError):
                log.exception("live_message_unreadable", table_id=self.table_id)
            self.hold()
            self._failed = True  # held on; the next sweep (or the reconnection) tries again
        except Exception:
            log.exception("live_feed_failed", table_id=self.table_id)
            self.end_all("behind")
        else:
            self._failed = False

    async def _read(self, check: bool) -> bool:
        """Deliver what the stream has after what was delivered, as a stream reader would
        (:meth:`TableReader._check` with ``check``); False: the table is gone (the watchers
        were ended)."""
        rewind = False
        while True:
            found = await self.feeds.read(self.table_id, self.seq)
            if found is None:
                self.end_all("behind")  # expired or lost: a resume says NOT_FOUND
                return False
            last, entry, after = found
            if check or rewind:
                check = False
                rewind = rewind or history_changed(self.seq, self.entry, last, entry)
                if rewind:
                    log.warning(
                        "stream_history_changed",
                        table_id=self.table_id,
                        delivered=self.seq,
                        last_seq=last,
                    )
                    again = await self.feeds.read(self.table_id, last)
                    if again is None:
                        self.end_all("behind")
                        return False
                    self.seq, self.entry = last, again[1]
                    for sub in list(self.subs):
                        sub.rewound()
                    rewind = False
                    continue  # from the table's last event on
                if self.entry is None:
                    self.entry = entry
            entries = [
                (int(entry_id.split(b"-", 1)[0]), _fields(flat), 0.0, -1)
                for entry_id, flat in after
            ]
            if not self._deliver(entries):
                rewind = True  # a gap in the stream: not the history delivered
                continue
            if len(after) < CATCH_UP_COUNT:
                return True
