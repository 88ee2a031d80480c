"""The Redis store: many stateless replicas share every table through one Redis.

Choose it with ``TUTE_STORE=redis://host:port/db`` (or ``--store``; ``rediss://`` and
``unix://`` work too). Store options may ride on the URL's query string and are removed
before redis-py sees it: ``finished_ttl_s`` (else ``TUTE_FINISHED_TTL_S``), ``abandoned_ttl_s``,
``retention``, ``prefix``, ``timeout_s`` (for example ``redis://redis:6379/0?retention=20000``).
Other query parameters are redis-py's own (``socket_keepalive``, ``client_name``...).

Keys (``tute`` is the prefix). The keys of one table share the hash tag ``{<table id>}``::

    tute:{T}        hash: v (version), r (record bytes), s (status), q (last event seq),
                    c (nonce of the last commit)
    tute:{T}:x      stream: one entry per event, id ``<seq>-0``; field ``p`` holds the public
                    ``tute.v1.Event``, fields ``0``..``3`` the private variant of that seat
    tute:{T}:i      hash: idempotency key -> first response

The indexes across tables are global keys that share the hash tag ``{tute:g}`` (one slot)::

    {tute:g}:lobby      sorted set: open public tables by creation time (listed newest first)
    {tute:g}:lobby:e    hash: table id -> lobby entry (JSON)
    {tute:g}:due        sorted set: table id -> when the scheduler must look at it
    {tute:g}:st:<s>     sorted sets (waiting, playing, finished): table id -> expiry (ms)
    {tute:g}:inv        hash: invite code -> table id
    {tute:g}:invof      hash: table id -> invite code (to drop the code with the table)

Atomicity. :meth:`RedisStore.commit` is one Lua script: idempotency check (a repeated key
returns the first response), version check (conflict), record written at version + 1, events
appended with ``XADD`` (ids ``<seq>-0``, so a stream can never hold a sequence number twice),
the idempotency response stored, the lobby entry and the due-item set or removed, the status
index and the TTLs refreshed. :meth:`RedisStore.create` and :meth:`RedisStore.claim_due`
are scripts too. A script runs alone in Redis, so two replicas never interleave inside one.

Redis Cluster. Table keys hash together and the global indexes hash together, but the commit
script touches both slots, so it runs on a single Redis (primary with replicas and Sentinel
for failover), not on a sharded Cluster. Moving to Cluster means splitting the commit in two
(table slot, then index slot) with a repair of the index; that is not done.

Retention and TTLs:

- Events: each table's stream keeps at least the last ``retention`` events (10 000 by
  default; ``MAXLEN ~``, so Redis may keep a few more). A whole match is far below that
  (a four-player hand is about 100 events). Resuming from a trimmed position gets a snapshot.
- A finished table (record, events, idempotency keys) is kept ``finished_ttl_s`` (1 h) after
  its last commit, then expires. A waiting or playing table expires ``abandoned_ttl_s``
  (24 h) after its last commit: every commit refreshes it. Expired tables leave the lobby, the
  due set and the invite index at the next scheduler pass (:meth:`claim_due` sweeps them).

Live events. Each replica runs at most one reader task per table with local watchers: it
blocks in ``XREAD`` on the table's stream from the last id it delivered and fans each event
out to that replica's subscriptions (bounded queues; a watcher too far behind is ended with
``SubscriptionEnded('behind')``). The reader holds one connection of a separate pool while
it blocks; watchers of the same table share it; it stops when its last local watcher leaves.
A new reader starts from the table's last sequence number read in :meth:`subscribe`, before
the caller loads the table, so no event falls between the load and the live stream (the
app drops the duplicates by sequence number).

Redis unreachable. Every call fails within about ``timeout_s`` (1 s: connect and read
timeouts; a refused connection fails at once) with :class:`StoreUnavailable`; the server
answers UNAVAILABLE and health turns NOT_SERVING (it follows :meth:`ping`). A call whose
connection breaks is sent once more at once on a new connection (after a Redis restart
every pooled connection is stale); a commit carries a nonce, and a create its record, so
that a resent one that Redis had already run is recognised and reported as applied. Readers
retry with backoff for ``reader_grace_s`` (2 s), then end their subscriptions with
``SubscriptionEnded('unavailable')`` so watchers learn of the outage and resume later. When
Redis is back, connections are made again on the next call; nothing needs a restart.

What survives a Redis restart:

- Without persistence (``--save '' --appendonly no``): nothing. Every table, event, lobby
  entry and due-item is gone; calls about old tables answer NOT_FOUND and their watchers end
  (a resume gets NOT_FOUND). New tables work at once.
- With RDB snapshots: the tables as of the last snapshot. Moves committed after it are lost
  while clients may have seen them, so a table can go back in time; watchers resuming past
  the restored last sequence number get INVALID_ARGUMENT and must watch afresh. Acceptable
  for casual play, not for anything that must not go back.
- With AOF (``appendonly yes``, ``appendfsync everysec``: at most about a second of commits
  lost; ``always``: none): tables, events, the lobby, due-items (timers and bot turns resume
  on their own) and idempotency keys all come back; clients resume their streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aredis
import structlog
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .base import (
    CommitOutcome,
    DueItem,
    LobbyCursor,
    LobbyEntry,
    Store,
    StoredEvent,
    StoreUnavailable,
    Subscription,
    SubscriptionEnded,
)

log = structlog.get_logger("tute.store.redis")

QUEUE_LIMIT = 10_000
"""Events a watcher may have waiting before it is ended with ``behind`` (as in memory)."""
STATUSES = ("waiting", "playing", "finished")
_UNAVAILABLE_REPLIES = ("LOADING", "READONLY", "MASTERDOWN", "MISCONF", "NOREPLICAS",
                        "CLUSTERDOWN", "TRYAGAIN")

_CREATE = """
-- KEYS: 1 table, 2 lobby, 3 lobby entries, 4 status waiting, 5 invites, 6 invite of table
-- ARGV: 1 table id, 2 record, 3 invite code, 4 lobby entry ('' = unlisted), 5 lobby score,
--       6 ttl (ms)
local r = redis.call('HMGET', KEYS[1], 'v', 'r')
if r[1] then
  if r[1] == '1' and r[2] == ARGV[2] then return 1 end  -- this very call, sent again
  return 0
end
redis.call('HSET', KEYS[1], 'v', 1, 'r', ARGV[2], 's', 'waiting', 'q', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[6])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[3], ARGV[1])
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[3])
end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
end
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZADD', KEYS[4], ms + tonumber(ARGV[6]), ARGV[1])
return 1
"""

_COMMIT = """
-- KEYS: 1 table, 2 events stream, 3 idempotency, 4 lobby, 5 lobby entries, 6 due,
--       7 status waiting, 8 status playing, 9 status finished
-- ARGV: 1 table id, 2 expected version, 3 record, 4 idempotency key ('' = none), 5 response,
--       6 lobby entry ('' = unlisted), 7 lobby score, 8 due at ('0' = nothing due),
--       9 status ('' = unchanged), 10 finished ttl (ms), 11 active ttl (ms), 12 retention,
--       13 nonce of this call, 14 number of events, then per event: seq, number of fields,
--       field, value, ...
-- Returns {1, version} applied; {0, version} conflict; {0, version, response} duplicate;
-- {-1, 0} no such table.
local t = redis.call('HMGET', KEYS[1], 'v', 's', 'q', 'c')
if not t[1] then return {-1, 0} end
local version = tonumber(t[1])
if t[4] == ARGV[13] then return {1, version} end  -- this very call, sent again
local key = ARGV[4]
if key ~= '' then
  local first = redis.call('HGET', KEYS[3], key)
  if first then return {0, version, first} end
end
if version ~= tonumber(ARGV[2]) then return {0, version} end
-- check the events before writing anything: a script that fails half-way is not undone
local last = tonumber(t[3])
local n = tonumber(ARGV[14])
local i = 15
for e = 1, n do
  local seq = tonumber(ARGV[i])
  if seq <= last then
    return redis.error_reply('tute: event ' .. ARGV[i] .. ' is not after ' .. last)
  end
  last = seq
  i = i + 2 + 2 * tonumber(ARGV[i + 1])
end
i = 15
for e = 1, n do
  local nf = tonumber(ARGV[i + 1])
  local cmd = {'XADD', KEYS[2], 'MAXLEN', '~', ARGV[12], ARGV[i] .. '-0'}
  for f = 1, 2 * nf do cmd[6 + f] = ARGV[i + 1 + f] end
  redis.call(unpack(cmd))
  i = i + 2 + 2 * nf
end
local status = ARGV[9]
if status == '' then status = t[2] end
version = version + 1
redis.call('HSET', KEYS[1], 'v', version, 'r', ARGV[3], 's', status, 'q', last, 'c', ARGV[13])
if key ~= '' then redis.call('HSET', KEYS[3], key, ARGV[5]) end
local tid = ARGV[1]
if ARGV[6] == '' then
  redis.call('ZREM', KEYS[4], tid)
  redis.call('HDEL', KEYS[5], tid)
else
  redis.call('ZADD', KEYS[4], ARGV[7], tid)
  redis.call('HSET', KEYS[5], tid, ARGV[6])
end
if ARGV[8] == '0' then
  redis.call('ZREM', KEYS[6], tid)
else
  redis.call('ZADD', KEYS[6], ARGV[8], tid)
end
local ttl = tonumber(ARGV[11])
if status == 'finished' then ttl = tonumber(ARGV[10]) end
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ttl) end
local now = redis.call('TIME')
local expires = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + ttl
local names = {'waiting', 'playing', 'finished'}
for k = 1, 3 do
  if names[k] == status then
    redis.call('ZADD', KEYS[6 + k], expires, tid)
  else
    redis.call('ZREM', KEYS[6 + k], tid)
  end
end
return {1, version}
"""

_CLAIM = """
-- KEYS: 1 due, 2 lobby, 3 lobby entries, 4 waiting, 5 playing, 6 finished, 7 invites,
--       8 invite of table
-- ARGV: 1 now, 2 lease end (now + lease), 3 limit
-- First sweep the index entries of tables whose keys expired, then claim the due-items.
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for k = 4, 6 do
  local gone = redis.call('ZRANGEBYSCORE', KEYS[k], '-inf', ms, 'LIMIT', 0, 100)
  for _, tid in ipairs(gone) do
    redis.call('ZREM', KEYS[k], tid)
    redis.call('ZREM', KEYS[2], tid)
    redis.call('HDEL', KEYS[3], tid)
    redis.call('ZREM', KEYS[1], tid)
    local code = redis.call('HGET', KEYS[8], tid)
    if code then
      redis.call('HDEL', KEYS[7], code)
      redis.call('HDEL', KEYS[8], tid)
    end
  end
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0,
                       ARGV[3])
for i = 1, #due, 2 do redis.call('ZADD', KEYS[1], ARGV[2], due[i]) end
return due
"""

_COUNT = """
-- KEYS: the status sets; returns how many tables of each have not expired
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for k = 1, #KEYS do out[k] = redis.call('ZCOUNT', KEYS[k], '(' .. ms, '+inf') end
return out
"""


@contextlib.contextmanager
def _guard(where: str) -> Iterator[None]:
    """Turn "Redis cannot be reached" into :class:`StoreUnavailable`."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise StoreUnavailable(f"Redis at {where}: {exc or type(exc).__name__}") from exc
    except ResponseError as exc:
        if str(exc).startswith(_UNAVAILABLE_REPLIES):
            raise StoreUnavailable(f"Redis at {where}: {exc}") from exc
        raise


_XReadReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _event_from_entry(entry_id: bytes, fields: dict[bytes, bytes]) -> StoredEvent:
    seq = int(entry_id.split(b"-", 1)[0])
    private = {int(k): v for k, v in fields.items() if k != b"p"}
    return StoredEvent(seq, fields.get(b"p", b""), private)


class _RedisSubscription(Subscription):
    def __init__(self, reader: _Reader) -> None:
        self._reader = reader
        self._queue: asyncio.Queue[StoredEvent | str] = asyncio.Queue(QUEUE_LIMIT + 1)

    def push(self, event: StoredEvent) -> None:
        if self not in self._reader.subs:
            return  # already ended: its queue holds the reason last
        if self._queue.qsize() >= QUEUE_LIMIT:
            self._end("behind")
        else:
            self._queue.put_nowait(event)

    def _end(self, reason: str) -> None:
        self._reader.discard(self)
        self._queue.put_nowait(reason)

    def interrupt(self) -> None:
        if self in self._reader.subs:
            self._end("shutdown")

    async def __aiter__(self) -> AsyncIterator[StoredEvent]:
        while True:
            event = await self._queue.get()
            if isinstance(event, str):
                raise SubscriptionEnded(event)
            yield event

    async def close(self) -> None:
        self._reader.discard(self)


class _Reader:
    """This replica's one reader of one table's stream, fanning out to local watchers."""

    def __init__(self, store: RedisStore, table_id: str, after_seq: int) -> None:
        self.store = store
        self.table_id = table_id
        self.subs: set[_RedisSubscription] = set()
        self.last_id: bytes | str = f"{after_seq}-0"
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"redis-reader-{self.table_id}")

    def discard(self, sub: _RedisSubscription) -> None:
        self.subs.discard(sub)
        if not self.subs:
            self.stop()

    def stop(self) -> None:
        if self.store._readers.get(self.table_id) is self:
            del self.store._readers[self.table_id]
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()

    def end_all(self, reason: str) -> None:
        for sub in list(self.subs):
            sub._end(reason)
        self.stop()

    async def _run(self) -> None:
        store = self.store
        stream = store._k_stream(self.table_id)
        table = store._k_table(self.table_id)
        down_since: float | None = None
        delay = 0.05
        try:
            while self.subs:
                try:
                    reply = cast(_XReadReply, await store._readers_client.xread(
                        {stream: self.last_id}, count=512, block=store.block_ms
                    ))
                    if not reply or down_since is not None:
                        # idle, or back after an outage: is the table still there?
                        if not await store._readers_client.exists(table):
                            self.end_all("behind")  # expired or lost: a resume says NOT_FOUND
                            return
                        down_since, delay = None, 0.05
                except (RedisConnectionError, RedisTimeoutError, OSError, ResponseError) as exc:
                    if isinstance(exc, ResponseError) and not str(exc).startswith(
                        _UNAVAILABLE_REPLIES
                    ):
                        raise
                    now = time.monotonic()
                    if down_since is None:
                        down_since = now
                        log.warning("stream_reader_lost_redis", table_id=self.table_id,
                                    error=str(exc))
                    if now - down_since >= store.reader_grace_s:
                        self.end_all("unavailable")
                        return
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                for _key, entries in reply or ():
                    for entry_id, fields in entries:
                        event = _event_from_entry(entry_id, fields)
                        self.last_id = entry_id
                        for sub in list(self.subs):
                            sub.push(event)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("stream_reader_failed", table_id=self.table_id)
            self.end_all("behind")


class RedisStore(Store):
    """Tables in Redis, shared by every replica that opens the same URL (see module doc)."""

    def __init__(
        self,
        client: aredis.Redis,
        readers_client: aredis.Redis,
        *,
        where: str = "redis",
        prefix: str = "tute",
        finished_ttl_s: float = 3600.0,
        abandoned_ttl_s: float = 86_400.0,
        retention: int = 10_000,
        block_ms: int = 2_000,
        reader_grace_s: float = 2.0,
    ) -> None:
        self._redis = client
        self._readers_client = readers_client
        self._where = where
        self._prefix = prefix
        g = "{" + prefix + ":g}"
        self._k_lobby = f"{g}:lobby"
        self._k_lobby_e = f"{g}:lobby:e"
        self._k_due = f"{g}:due"
        self._k_status = [f"{g}:st:{s}" for s in STATUSES]
        self._k_inv = f"{g}:inv"
        self._k_invof = f"{g}:invof"
        self.finished_ttl_s = finished_ttl_s
        self.abandoned_ttl_s = abandoned_ttl_s
        self.retention = retention
        self.block_ms = block_ms
        self.reader_grace_s = reader_grace_s
        self._create = client.register_script(_CREATE)
        self._commit = client.register_script(_COMMIT)
        self._claim = client.register_script(_CLAIM)
        self._count = client.register_script(_COUNT)
        self._readers: dict[str, _Reader] = {}

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        finished_ttl_s: float | None = None,
        abandoned_ttl_s: float | None = None,
        retention: int | None = None,
        prefix: str | None = None,
        timeout_s: float | None = None,
        max_connections: int = 64,
    ) -> RedisStore:
        """A store on ``redis://host:port/db``. Store options given as query parameters win
        over the keyword arguments (``open_store`` passes the server's ``finished_ttl_s``)."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        ours: dict[str, str] = {}
        for name in ("finished_ttl_s", "abandoned_ttl_s", "retention", "prefix", "timeout_s"):
            if name in query:
                ours[name] = query.pop(name)
        clean = urlunsplit(parts._replace(query=urlencode(query)))
        def option(name: str, given: float | str | None, default: float | str) -> str:
            return ours.get(name, str(given if given is not None else default))

        finished = float(option("finished_ttl_s", finished_ttl_s, 3600.0))
        abandoned = float(option("abandoned_ttl_s", abandoned_ttl_s, 86_400.0))
        keep = int(option("retention", retention, 10_000))
        pfx = option("prefix", prefix, "tute")
        timeout = float(option("timeout_s", timeout_s, 1.0))
        block_ms = 2_000
        common: dict[str, Any] = {
            "socket_connect_timeout": timeout,
            # One immediate retry on a broken connection (a pooled connection is stale
            # after a Redis restart); commits and creates are safe to send twice.
            "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            "decode_responses": False,
            "health_check_interval": 0,
        }
        pool = aredis.BlockingConnectionPool.from_url(
            clean, max_connections=max_connections, timeout=timeout,
            socket_timeout=timeout, **common,
        )
        readers_pool = aredis.ConnectionPool.from_url(
            clean, socket_timeout=block_ms / 1000 + timeout + 1.0, **common
        )
        host = parts.hostname or parts.path or "localhost"
        where = f"{host}:{parts.port or 6379}{parts.path if parts.hostname else ''}"
        return cls(
            aredis.Redis.from_pool(pool),
            aredis.Redis.from_pool(readers_pool),
            where=where,
            prefix=pfx,
            finished_ttl_s=finished,
            abandoned_ttl_s=abandoned,
            retention=keep,
            block_ms=block_ms,
            reader_grace_s=max(2.0, 2 * timeout),
        )

    # -- keys --------------------------------------------------------------------------------

    def _k_table(self, table_id: str) -> str:
        return f"{self._prefix}:{{{table_id}}}"

    def _k_stream(self, table_id: str) -> str:
        return f"{self._prefix}:{{{table_id}}}:x"

    def _k_idem(self, table_id: str) -> str:
        return f"{self._prefix}:{{{table_id}}}:i"

    # -- tables ------------------------------------------------------------------------------

    async def create(
        self, table_id: str, record: bytes, invite_code: str, lobby: LobbyEntry | None
    ) -> None:
        with _guard(self._where):
            created = await self._create(
                keys=[self._k_table(table_id), self._k_lobby, self._k_lobby_e,
                      self._k_status[0], self._k_inv, self._k_invof],
                args=[table_id, record, invite_code, _encode_lobby(lobby),
                      repr(lobby.created_at) if lobby else "0", _ms(self.abandoned_ttl_s)],
            )
        if not created:
            raise ValueError("table id already used")

    async def load(self, table_id: str) -> tuple[int, bytes] | None:
        with _guard(self._where):
            found = await self._redis.hmget(self._k_table(table_id), ["v", "r"])
        version, record = cast(list[bytes | None], found)
        if version is None or record is None:
            return None
        return int(version), record

    async def find_invite(self, invite_code: str) -> str | None:
        with _guard(self._where):
            found = cast(bytes | None, await self._redis.hget(self._k_inv, invite_code))
            if found is None:
                return None
            table_id = found.decode()
            if not await self._redis.exists(self._k_table(table_id)):
                return None
        return table_id

    async def commit(
        self,
        table_id: str,
        expected_version: int,
        record: bytes,
        events: Sequence[StoredEvent],
        *,
        idempotency_key: str = "",
        response: bytes = b"",
        lobby: LobbyEntry | None = None,
        due_at: float = 0.0,
        status: str = "",
    ) -> CommitOutcome:
        args: list[bytes | str | int] = [
            table_id, expected_version, record, idempotency_key, response,
            _encode_lobby(lobby), repr(lobby.created_at) if lobby else "0",
            repr(due_at) if due_at else "0", status,
            _ms(self.finished_ttl_s), _ms(self.abandoned_ttl_s), self.retention,
            secrets.token_hex(8), len(events),
        ]
        for ev in events:
            args += [ev.seq, 1 + len(ev.private), "p", ev.public]
            for seat, data in ev.private.items():
                args += [str(seat), data]
        with _guard(self._where):
            reply = await self._commit(
                keys=[self._k_table(table_id), self._k_stream(table_id), self._k_idem(table_id),
                      self._k_lobby, self._k_lobby_e, self._k_due, *self._k_status],
                args=args,
            )
        applied, version = int(reply[0]), int(reply[1])
        if applied == 1:
            return CommitOutcome(True, version)
        if len(reply) > 2:
            return CommitOutcome(False, version, reply[2])
        return CommitOutcome(False, max(version, 0))

    async def idempotent_response(self, table_id: str, idempotency_key: str) -> bytes | None:
        with _guard(self._where):
            found = await self._redis.hget(self._k_idem(table_id), idempotency_key)
        return cast(bytes | None, found)

    async def events_after(self, table_id: str, seq: int) -> list[StoredEvent] | None:
        seq = max(seq, 0)
        with _guard(self._where):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hmget(self._k_table(table_id), ["v", "q"])
                pipe.xrange(self._k_stream(table_id), min=f"{seq + 1}-0", max="+")
                (version, last), entries = await pipe.execute()
        if version is None:
            return None
        if int(last) <= seq:
            return []
        events = [_event_from_entry(i, f) for i, f in entries]
        if not events or events[0].seq != seq + 1:
            return None  # trimmed (retention) or lost: the caller sends a snapshot
        return events

    # -- live events ---------------------------------------------------------------------------

    async def subscribe(self, table_id: str) -> Subscription:
        with _guard(self._where):
            found = await self._redis.hmget(self._k_table(table_id), ["v", "q"])
        version, last = cast(list[bytes | None], found)
        if version is None:
            raise KeyError(table_id)
        reader = self._readers.get(table_id)
        if reader is None:
            # Start where the table is now: the caller loads the table after this returns,
            # so every later event reaches the subscription.
            reader = self._readers[table_id] = _Reader(self, table_id, int(last or 0))
            reader.start()
        sub = _RedisSubscription(reader)
        reader.subs.add(sub)
        return sub

    # -- lobby and scheduler -------------------------------------------------------------------

    async def lobby(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int
    ) -> list[LobbyEntry]:
        out: list[LobbyEntry] = []
        if limit <= 0:
            return out
        chunk = max(2 * limit, 100)
        # The lobby's sorted set orders by (created_at, table_id): scores, then members for
        # equal scores. Newest first from the cursor's score down, skipping equal scores whose
        # id is not below the cursor's (the cursor's own table may have left the lobby).
        top = "+inf" if after is None else repr(after[0])
        with _guard(self._where):
            offset = 0
            while len(out) < limit:
                pairs = cast(list[tuple[bytes, float]], await self._redis.zrevrangebyscore(
                    self._k_lobby, top, "-inf", start=offset, num=chunk, withscores=True))
                if not pairs:
                    break
                offset += len(pairs)
                ids = [m for m, score in pairs if after is None or (score, m.decode()) < after]
                if not ids:
                    continue
                raw = cast(list[bytes | None], await self._redis.hmget(self._k_lobby_e, ids))
                for table_id, data in zip(ids, raw, strict=True):
                    if data is None:
                        continue
                    entry = _decode_lobby(table_id.decode(), data)
                    if (preset and entry.preset != preset) or (
                        players and entry.players != players
                    ):
                        continue
                    out.append(entry)
                    if len(out) >= limit:
                        break
        return out

    async def claim_due(self, now: float, lease_s: float, limit: int) -> list[DueItem]:
        with _guard(self._where):
            reply = await self._claim(
                keys=[self._k_due, self._k_lobby, self._k_lobby_e, *self._k_status,
                      self._k_inv, self._k_invof],
                args=[repr(now), repr(now + lease_s), limit],
            )
        return [
            DueItem(reply[i].decode(), float(reply[i + 1])) for i in range(0, len(reply), 2)
        ]

    async def next_due(self) -> float | None:
        with _guard(self._where):
            first = cast(list[tuple[bytes, float]], await self._redis.zrange(
                self._k_due, 0, 0, withscores=True))
        return float(first[0][1]) if first else None

    async def count_tables(self) -> dict[str, int]:
        with _guard(self._where):
            counts = await self._count(keys=self._k_status, args=[])
        return {s: int(n) for s, n in zip(STATUSES, counts, strict=True)}

    async def ping(self) -> None:
        with _guard(self._where):
            await self._redis.ping()

    async def close(self) -> None:
        for reader in list(self._readers.values()):
            reader.stop()
        with contextlib.suppress(Exception):
            await self._redis.aclose()
        with contextlib.suppress(Exception):
            await self._readers_client.aclose()


def _encode_lobby(entry: LobbyEntry | None) -> str:
    if entry is None:
        return ""
    return json.dumps([entry.preset, entry.players, entry.free_seats, entry.created_at])


def _decode_lobby(table_id: str, data: bytes) -> LobbyEntry:
    preset, players, free, created = json.loads(data)
    return LobbyEntry(table_id, preset, int(players), int(free), float(created))
