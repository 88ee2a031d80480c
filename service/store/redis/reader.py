"""Live events from Redis: one reader per table with local watchers on this replica, which
blocks in ``XREAD`` on the table's stream and fans each event out to that replica's
subscriptions (docs/redis-store.md, "Live events")."""

from __future__ import annotations

import asyncio
import time
from typing import cast

import structlog
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException, ResponseError

from ..base import QueueSubscription, StoredEvent, Subscription
from .connect import UNREACHABLE, Client, Script, unavailable
from .keys import Keys
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


class Readers:
    """This replica's stream readers, one per table with local watchers."""

    def __init__(self, client: Client, keys: Keys, options: RedisOptions) -> None:
        self.client = client
        self.keys = keys
        self.options = options
        self.active: dict[str, TableReader] = {}
        """The running readers by table id."""
        self.at = Script(client, "at")

    def subscribe(self, table_id: str, last_seq: int) -> Subscription:
        """A subscription to ``table_id``'s events after ``last_seq`` (the table's last
        sequence number now, read before the caller loads the table), through the table's
        reader (started here when it has none)."""
        reader = self.active.get(table_id)
        if reader is None:
            reader = self.active[table_id] = TableReader(self, table_id, last_seq)
            reader.start()
        sub = RedisSubscription(reader)
        reader.subs.add(sub)
        return sub

    def end(self, table_id: str, reason: str) -> None:
        """End every local subscription of ``table_id`` with ``reason``."""
        reader = self.active.get(table_id)
        if reader is not None:
            reader.end_all(reason)

    def stop_all(self) -> None:
        for reader in list(self.active.values()):
            reader.stop()

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

    def __init__(self, reader: TableReader) -> None:
        super().__init__(QUEUE_LIMIT)
        self._reader = reader

    def _detach(self) -> None:
        self._reader.discard(self)


class TableReader:
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

    def discard(self, sub: RedisSubscription) -> None:
        self.subs.discard(sub)
        if not self.subs:
            self.stop()

    def stop(self) -> None:
        self.readers.forget(self)
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()

    def end_all(self, reason: str) -> None:
        for sub in list(self.subs):
            sub.end(reason)
        self.stop()

    async def _check(self, *, diverged: bool = False) -> bool:
        """Does the table still continue what this reader delivered (``diverged``: it is
        known not to)? If not, every subscription gets REWOUND and the reader starts again
        from the table's last event. False: the table is gone."""
        found = await self.readers.read_at(self.table_id, self.seq)
        if found is None:
            return False
        last, entry = found
        if self.seq and entry is None and last >= self.seq:
            diverged = True  # the entry delivered last is not in the stream any more
        elif last < self.seq or (
            entry is not None and self.entry is not None and entry != self.entry
        ):
            diverged = True
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
