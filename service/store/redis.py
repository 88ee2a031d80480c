"""The Redis store: many stateless replicas share every table through one Redis or a Redis
Cluster.

Choose it with ``TUTE_STORE=redis://host:port/db`` (or ``--store``; ``rediss://`` and
``unix://`` work too). For a sharded Redis Cluster add ``cluster=1`` to the query string:
``redis://host:port?cluster=1`` (or ``rediss://``; any node of the cluster, the others are
discovered; database 0 only). Store options may ride on the query string and are removed
before redis-py sees it: ``cluster``, ``finished_ttl_s`` (else ``TUTE_FINISHED_TTL_S``),
``abandoned_ttl_s``, ``retention``, ``prefix``, ``timeout_s`` (for example
``redis://redis:6379/0?retention=20000``). Other query parameters are redis-py's own
(``socket_keepalive``, ``client_name``...).

Keys (``tute`` is the prefix). The keys of one table share the hash tag ``{<table id>}``, so
they live in one slot of a Cluster::

    tute:{T}        hash: v (version), r (record bytes), s (status), q (last event seq),
                    c (nonce of the last commit), and the table's index state as its last
                    commit left it: l (lobby entry JSON, '' when not listed), o (its lobby
                    score), d (due time, '0' when nothing is due), i (invite code), x (when
                    the table expires, ms since the epoch), b (its bot seats)
    tute:{T}:x      stream: one entry per event, id ``<seq>-0``; field ``p`` holds the public
                    ``tute.v1.Event``, fields ``0``..``3`` the private variant of that seat
    tute:{T}:i      hash: idempotency key -> first response
    tute:{T}:p      sorted set: presence, ``<seat>:<watcher>`` -> when it expires

A token bucket (:meth:`RedisStore.take_tokens`, the per-caller limits) is one key of its own,
so the one script that refills and takes from it touches one slot::

    tute:rl:<key>   hash: t (tokens), l (time of the last refill, the caller's clock); it
                    expires once it would be full again

The indexes across tables share the hash tag ``{tute:g}`` (one slot, the "global slot")::

    {tute:g}:lobby      sorted set: open public tables by creation time (listed newest first)
    {tute:g}:lobby:e    hash: table id -> lobby entry (JSON)
    {tute:g}:due        sorted set: table id -> when the scheduler must look at it
    {tute:g}:st:<s>     sorted sets (waiting, playing, finished): table id -> its expiry (ms)
                        as of its last index change (a lower bound)
    {tute:g}:inv        hash: invite code -> table id
    {tute:g}:invof      hash: table id -> invite code (to drop the code with the table)
    {tute:g}:ver        hash: table id -> '<version>:<due>' of the index state applied last
    {tute:g}:pend       sorted set: write-ahead markers '<table id>|<nonce>' -> written at (ms)
    {tute:g}:born       string: the indexes were built from the tables (see repair below)
    {tute:g}:rebuild    string: lease of the replica rebuilding them
    {tute:g}:claim:<n>  list: what the claim with nonce n took (kept for the claim's lease)
    {tute:g}:bots       hash: table id -> its bot seats, for waiting and playing tables
    {tute:g}:bots:n     string: the sum of ``bots`` (``count_bot_seats``), kept by the same
                        script

Atomicity. No script touches two slots, so every one runs on a single Redis and on a
Cluster alike. The table hash is the truth; the indexes are derived from it.

- :meth:`RedisStore.commit` is one Lua script on the table's slot: idempotency check (a
  repeated key returns the first response), version check (conflict), record written at
  version + 1, events appended with ``XADD`` (ids ``<seq>-0``, so a stream can never hold a
  sequence number twice), the idempotency response stored, the TTLs refreshed, and the
  table's index state (lobby entry, due time, status, expiry) recorded in its hash.
- The indexes follow in a second script on the global slot, from the values the commit
  recorded: lobby entry, due-item, status set and invite set or removed. It is idempotent
  and ordered by version: it applies a table's state (bot seats included) only if its
  version is above the one applied last (``ver``), so a late or repeated update never puts
  an older state back, and it leaves a due-item alone when its due time is unchanged (a
  claim's lease is kept).
- A commit that changes the index state needs a write-ahead marker: before it, a script on
  the global slot adds ``<table id>|<nonce>`` to ``pend`` with Redis's time; the index update
  removes it. The commit script refuses a change without a marker, and a marker older than
  ``fence_s`` (5 s): the caller writes a fresh one and sends the commit again. A commit that
  leaves the index state as it was (most moves of a match without timers or bots) needs no
  marker and no index update: one round trip, as before. The store predicts which case it
  is from the last state it loaded; the script has the last word.
- :meth:`RedisStore.create` is the same: marker, a script on the table's slot (the hash,
  at version 1, status waiting), the indexes. So is :meth:`RedisStore.delete` (the app
  deletes a waiting table that expired): marker, a script on the table's slot that removes
  its keys if the version is still the expected one, the table dropped from every index.
- :meth:`RedisStore.claim_due` is one script on the global slot (the due set alone), after
  a repair pass when one is due (below). It carries a nonce and records what it took under
  it for the lease, so that the same claim sent again returns that instead of taking more.
  :meth:`RedisStore.renew_due` is one script there too: it pushes the lease end of the items
  still at the one this replica's claim gave them (the app renews while it works on them).

Why a crash between the two steps loses nothing. The marker is written before the commit,
and removed only after an index update of that commit's version (or of a later one), or once
the commit is known not to have applied. So while a committed state is not yet in the
indexes, a marker of that table is in ``pend``. Repair, run by any replica from
:meth:`claim_due` (every ``maintain_every_s``, 1 s), takes the markers older than
``repair_after_s`` (10 s), reads each table's hash and applies its recorded state (a table
with no hash any more is removed from every index), then removes the markers. A commit
carrying a marker applies only within ``fence_s`` of the marker's time, and ``repair_after_s``
is above ``fence_s`` (plus any clock skew between Redis nodes), so when repair reads a hash
the commit of that marker has either landed or never will: repair cannot remove the marker
of a commit still on its way. (So a Cluster's nodes must keep their clocks within a couple
of seconds of each other, as NTP does.) Applying a state twice, or an older state after a
newer one, is harmless by the version order above, and a due-item claimed twice is still
acted on once (the compare-and-set of the commit). So a turn timer or a bot's turn fires at
the latest about ``repair_after_s`` late after a replica crash, and never twice.

Repair also keeps the indexes free of tables that are gone. Each status set entry is scored
with the table's expiry; entries past it are checked against the table (gone: removed from
every index with its lobby entry, due-item and invite code; still there after moves that
did not touch the index: scored again). A slice of every status set (``scrub_batch``, 100
tables, from a random place on each replica) is checked the same way on each pass, so an
index entry whose table vanished in another way (a Cluster node that restarted without its
data) goes too, and an index that missed a change (a node restored from an older snapshot)
gets it. ``count_tables``
counts the status entries that have not expired; ``count_bot_seats`` reads the sum the index
step keeps (a table that expired counts until repair removes it, within a pass or two). If
the global slot itself lost its data (``born`` is missing), one replica scans every node for
table hashes and rebuilds the indexes from them.

Redis Cluster. Every table's keys live on the node of its table's slot, the indexes on the
node of the global slot. Commits of different tables go to different nodes; the lobby, the
due set and the markers go to the global slot's node (one small script before and one after
a commit that changes the index, none for one that does not). Scripts are sent with
``EVALSHA``, and whole with ``EVAL`` the first time a node does not know one (redis-py's
``register_script`` would load it on every primary, so that one primary down would break the
first use of a script on the others). Each stream reader blocks in ``XREAD`` on the node of
its table (sent straight there: a plain Cluster ``XREAD`` first asks a node for its keys). A
node down fails the calls about its own tables with :class:`StoreUnavailable`; the others go
on, and repair leaves its tables (and their markers) for a pass after it is back. The
client learns the cluster's layout before the store's first call (redis-py would send the
first calls of a fresh client to an arbitrary node, keyless), and a MOVED reply updates the
slot's node alone: redis-py's default is to drop every connection of every node on each
fifth MOVED, under the calls still running on them. ``ping``
(health) asks the global slot's node: without it there is no lobby, no scheduler and no
index change. A Cluster client's pools do not wait for a free connection, so the store runs
at most ``max_connections`` (64) calls at once and the others wait up to ``timeout_s``.

Retention and TTLs:

- Events: each table's stream keeps at least the last ``retention`` events (10 000 by
  default; ``MAXLEN ~``, so Redis may keep a few more). A whole match is far below that
  (a four-player hand is about 100 events). Resuming from a trimmed position gets a snapshot.
- A finished table (record, events, idempotency keys) is kept ``finished_ttl_s`` (1 h) after
  its last commit, then expires. A waiting or playing table expires ``abandoned_ttl_s``
  (24 h) after its last commit: every commit refreshes it. Expired tables leave the lobby, the
  due set and the invite index at the next repair pass (:meth:`claim_due`).

Live events. Each replica runs at most one reader task per table with local watchers: it
blocks in ``XREAD`` on the table's stream from the last id it delivered and fans each event
out to that replica's subscriptions (bounded queues; a watcher too far behind is ended with
``SubscriptionEnded('behind')``). The reader holds one connection of a separate pool (on a
Cluster, to its table's node) while it blocks; watchers of the same table share it; it
stops when its last local watcher leaves.
A new reader starts from the table's last sequence number read in :meth:`subscribe`, before
the caller loads the table, so no event falls between the load and the live stream (the
app drops the duplicates by sequence number).
A reader checks that the table's history still continues what it delivered: at its start,
after every failed call (its connections are never retried silently, so a Redis restart
always shows as one), whenever ``XREAD`` comes back idle, and when an entry does not follow
the last one delivered. The table's last sequence number below the reader's, or the stream
entry it delivered last missing or different (Redis restored from an older RDB snapshot,
maybe played on past the old position since), means the history went back: every
subscription then gets :data:`~.base.REWOUND` and the reader goes on from the table's last
event; the app sends its watchers a fresh snapshot (see WatchTable). A history rewritten
by hand on a live Redis, with no broken connection, is noticed only at such a check.

Redis unreachable. Every call fails within about ``timeout_s`` (1 s: connect and read
timeouts; a refused connection fails at once) with :class:`StoreUnavailable`; the server
answers UNAVAILABLE and health turns NOT_SERVING (it follows :meth:`ping`). A call whose
connection breaks (or, on a Cluster, whose reply times out) is sent once more at once on a
new connection (after a Redis restart every pooled connection is stale); a commit carries a
nonce, and a create its record, so that a resent one that Redis had already run is
recognised and reported as applied; a claim carries a nonce too, and a resent one that
Redis had already run returns the items it took then (else they would stay leased to nobody
until the lease ends, and their timers fire that much late). When
the commit applied but its index update fails, the commit is still reported as applied
(the marker stays and repair applies the index later). Readers retry with backoff for
``reader_grace_s`` (2 s), then end their subscriptions with ``SubscriptionEnded('unavailable')``
so watchers learn of the outage and resume later. When Redis is back, connections are made
again on the next call; nothing needs a restart.

What survives a Redis restart:

- Without persistence (``--save '' --appendonly no``): nothing. Every table, event, lobby
  entry and due-item is gone; calls about old tables answer NOT_FOUND and their watchers end
  (a resume gets NOT_FOUND). New tables work at once. On a Cluster, a node that restarts
  empty loses the tables of its slots (repair then removes them from the indexes), or, for
  the global slot's node, the indexes (rebuilt from the tables by the next repair pass).
- With RDB snapshots: the tables as of the last snapshot. Moves committed after it are lost
  while clients may have seen them, so a table can go back in time. Open streams get a
  fresh snapshot of the restored table (above), or end with PERMISSION_DENIED SEAT_LOST when
  their token no longer opens its seat there; streams that ended in a longer outage and
  resume past the restored last sequence number get INVALID_ARGUMENT and must watch afresh.
  Acceptable for casual play, not for anything that must not go back.
- With AOF (``appendonly yes``, ``appendfsync everysec``: at most about a second of commits
  lost; ``always``: none): tables, events, the lobby, due-items (timers and bot turns resume
  on their own) and idempotency keys all come back; clients resume their streams. (On a
  Cluster with ``everysec``, a node may come back a second behind the others. If it is the
  global slot's node, an index change of that second comes back when the scrub reaches the
  table, or with the table's next index change for a table created in that second.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aredis
import structlog
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisClusterException, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..clock import SYSTEM_CLOCK, Clock
from .base import (
    BucketOutcome,
    CommitOutcome,
    DueItem,
    LobbyCursor,
    LobbyEntry,
    QueueSubscription,
    Store,
    StoredEvent,
    StoreUnavailable,
    Subscription,
)

log = structlog.get_logger("tute.store.redis")

QUEUE_LIMIT = 10_000
"""Events a watcher may have waiting before it is ended with ``behind`` (as in memory)."""
STATUSES = ("waiting", "playing", "finished")
_UNAVAILABLE_REPLIES = ("LOADING", "READONLY", "MASTERDOWN", "MISCONF", "NOREPLICAS",
                        "CLUSTERDOWN", "TRYAGAIN")
_STATE_FIELDS = ("l", "o", "d", "s", "i", "x", "b")
"""The index state a table's hash records (see the module doc), in the scripts' order."""
_TRUE = ("1", "true", "yes", "on")
_BUCKET_TTL_MS = 7 * 86_400_000
"""A token bucket's key expires this long after its last use at the latest."""

_NOW_MS = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

_BEGIN = _NOW_MS + """
-- KEYS: 1 markers; ARGV: 1 marker. A write-ahead marker, scored with Redis's time (ms).
local ms = now_ms()
redis.call('ZADD', KEYS[1], ms, ARGV[1])
return ms
"""

_CREATE = _NOW_MS + """
-- KEYS: 1 table (table slot only)
-- ARGV: 1 record, 2 invite code, 3 lobby entry ('' = unlisted), 4 lobby score, 5 ttl (ms),
--       6 marker time (ms), 7 fence (ms), 8 due at ('0' = nothing due)
-- Returns {1, version, l, o, d, s, i, x, b} created (or this very call, sent again); {0} the
-- id is taken; {-3} the marker is too old.
local r = redis.call('HMGET', KEYS[1], 'v', 'r')
if r[1] then
  if r[1] == '1' and r[2] == ARGV[1] then  -- this very call, sent again
    return {1, 1, unpack(redis.call('HMGET', KEYS[1], 'l', 'o', 'd', 's', 'i', 'x', 'b'))}
  end
  return {0}
end
local now = now_ms()
if now - tonumber(ARGV[6]) > tonumber(ARGV[7]) then return {-3} end
local x = now + tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'v', 1, 'r', ARGV[1], 's', 'waiting', 'q', 0, 'l', ARGV[3],
           'o', ARGV[4], 'd', ARGV[8], 'i', ARGV[2], 'x', x, 'b', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, 1, ARGV[3], ARGV[4], ARGV[8], 'waiting', ARGV[2], tostring(x), '0'}
"""

_DELETE = _NOW_MS + """
-- KEYS: 1 table, 2 events stream, 3 idempotency, 4 presence (table slot only)
-- ARGV: 1 expected version, 2 marker time (ms), 3 fence (ms)
-- Returns 1 deleted, 0 no such table, -1 the version moved on, -3 the marker is too old.
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return 0 end
if tonumber(v) ~= tonumber(ARGV[1]) then return -1 end
if now_ms() - tonumber(ARGV[2]) > tonumber(ARGV[3]) then return -3 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 1
"""

_COMMIT = _NOW_MS + """
-- KEYS: 1 table, 2 events stream, 3 idempotency (table slot only)
-- ARGV: 1 expected version, 2 record, 3 idempotency key ('' = none), 4 response,
--       5 lobby entry ('' = unlisted), 6 lobby score ('0' when unlisted), 7 due at ('0' =
--       nothing due), 8 status ('' = unchanged), 9 finished ttl (ms), 10 active ttl (ms),
--       11 retention, 12 nonce of this call, 13 marker time (ms; '0' = no marker),
--       14 fence (ms), 15 bot seats, 16 number of events, then per event: seq, number of
--       fields, field, value, ...
-- Returns {1, version, l, o, d, s, i, x, b} applied; {0, version} conflict;
-- {0, version, response} duplicate; {-1, 0} no such table; {-2, version} the commit changes
-- the index state and has no marker; {-3, version} its marker is too old.
local t = redis.call('HMGET', KEYS[1], 'v', 's', 'q', 'c', 'l', 'o', 'd', 'b')
if not t[1] then return {-1, 0} end
local version = tonumber(t[1])
if t[4] == ARGV[12] then  -- this very call, sent again
  return {1, version, unpack(redis.call('HMGET', KEYS[1], 'l', 'o', 'd', 's', 'i', 'x', 'b'))}
end
local key = ARGV[3]
if key ~= '' then
  local first = redis.call('HGET', KEYS[3], key)
  if first then return {0, version, first} end
end
if version ~= tonumber(ARGV[1]) then return {0, version} end
local status = ARGV[8]
if status == '' then status = t[2] end
local now = now_ms()
if ARGV[5] ~= t[5] or ARGV[6] ~= t[6] or ARGV[7] ~= t[7] or status ~= t[2]
    or ARGV[15] ~= t[8] then
  -- the index changes: only under a fresh write-ahead marker (see the module doc)
  if ARGV[13] == '0' then return {-2, version} end
  if now - tonumber(ARGV[13]) > tonumber(ARGV[14]) then return {-3, version} end
end
-- check the events before writing anything: a script that fails half-way is not undone
local last = tonumber(t[3])
local n = tonumber(ARGV[16])
local i = 17
for e = 1, n do
  local seq = tonumber(ARGV[i])
  if seq <= last then
    return redis.error_reply('tute: event ' .. ARGV[i] .. ' is not after ' .. last)
  end
  last = seq
  i = i + 2 + 2 * tonumber(ARGV[i + 1])
end
i = 17
for e = 1, n do
  local nf = tonumber(ARGV[i + 1])
  local cmd = {'XADD', KEYS[2], 'MAXLEN', '~', ARGV[11], ARGV[i] .. '-0'}
  for f = 1, 2 * nf do cmd[6 + f] = ARGV[i + 1 + f] end
  redis.call(unpack(cmd))
  i = i + 2 + 2 * nf
end
local ttl = tonumber(ARGV[10])
if status == 'finished' then ttl = tonumber(ARGV[9]) end
local x = now + ttl
version = version + 1
redis.call('HSET', KEYS[1], 'v', version, 'r', ARGV[2], 's', status, 'q', last, 'c', ARGV[12],
           'l', ARGV[5], 'o', ARGV[6], 'd', ARGV[7], 'x', x, 'b', ARGV[15])
if key ~= '' then redis.call('HSET', KEYS[3], key, ARGV[4]) end
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ttl) end
local invite = redis.call('HGET', KEYS[1], 'i') or ''
return {1, version, ARGV[5], ARGV[6], ARGV[7], status, invite, tostring(x), ARGV[15]}
"""

_INDEX = """
-- KEYS: 1 lobby, 2 lobby entries, 3 due, 4 waiting, 5 playing, 6 finished, 7 invites,
--       8 invite of table, 9 applied versions, 10 markers, 11 bot seats of table, 12 bot
--       seats in all (global slot only)
-- ARGV: 1 number of tables, then per table: id, version ('0' = the table is gone), l, o, d,
--       s, i, x, b (as its hash records them); then the markers to remove.
-- A table's state is applied only when its version is above the one applied last.
local function set_bots(tid, n)  -- the bot seats a table counts for (waiting or playing)
  local before = tonumber(redis.call('HGET', KEYS[11], tid) or '0')
  if n ~= before then
    if n == 0 then
      redis.call('HDEL', KEYS[11], tid)
    else
      redis.call('HSET', KEYS[11], tid, n)
    end
    redis.call('INCRBY', KEYS[12], n - before)
  end
end
local function drop(tid)
  redis.call('ZREM', KEYS[1], tid)
  redis.call('HDEL', KEYS[2], tid)
  redis.call('ZREM', KEYS[3], tid)
  for k = 4, 6 do redis.call('ZREM', KEYS[k], tid) end
  local code = redis.call('HGET', KEYS[8], tid)
  if code then
    redis.call('HDEL', KEYS[7], code)
    redis.call('HDEL', KEYS[8], tid)
  end
  redis.call('HDEL', KEYS[9], tid)
  set_bots(tid, 0)
end
local names = {'waiting', 'playing', 'finished'}
local n = tonumber(ARGV[1])
local a = 2
for _ = 1, n do
  local tid, version = ARGV[a], tonumber(ARGV[a + 1])
  local lobby, score, due, status, code, x, bots =
    ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8]
  a = a + 9
  if version == 0 then
    drop(tid)
  else
    local applied, applied_due = 0, nil
    local prev = redis.call('HGET', KEYS[9], tid)
    if prev then
      local sep = string.find(prev, ':', 1, true)
      applied, applied_due = tonumber(string.sub(prev, 1, sep - 1)), string.sub(prev, sep + 1)
    end
    if version > applied then
      if lobby == '' then
        redis.call('ZREM', KEYS[1], tid)
        redis.call('HDEL', KEYS[2], tid)
      else
        redis.call('ZADD', KEYS[1], score, tid)
        redis.call('HSET', KEYS[2], tid, lobby)
      end
      if due == '0' then
        redis.call('ZREM', KEYS[3], tid)
      elseif due ~= applied_due or not redis.call('ZSCORE', KEYS[3], tid) then
        redis.call('ZADD', KEYS[3], due, tid)  -- unchanged due time: a claim's lease stays
      end
      for k = 1, 3 do
        if names[k] == status then
          redis.call('ZADD', KEYS[3 + k], x, tid)
        else
          redis.call('ZREM', KEYS[3 + k], tid)
        end
      end
      if code ~= '' then
        redis.call('HSET', KEYS[7], code, tid)
        redis.call('HSET', KEYS[8], tid, code)
      end
      redis.call('HSET', KEYS[9], tid, version .. ':' .. due)
      if status == 'waiting' or status == 'playing' then
        set_bots(tid, tonumber(bots) or 0)
      else
        set_bots(tid, 0)
      end
    end
  end
end
for m = a, #ARGV do redis.call('ZREM', KEYS[10], ARGV[m]) end
return n
"""

_SUSPECTS = _NOW_MS + """
-- KEYS: 1 markers, 2 waiting, 3 playing, 4 finished, 5 born, 6 rebuild lease (global slot)
-- ARGV: 1 repair after (ms), 2 limit, 3 scrub offset, 4 scrub count, 5 rebuild lease (ms),
--       6 nonce of this call (the lease's value: this very call sent again rebuilds too)
-- Returns {rebuild?, old markers, tables past their expiry, a slice of all tables from the
-- offset (modulo their number), the offset of the next slice}; repair then reads those
-- tables (see the module doc).
local ms = now_ms()
local limit = tonumber(ARGV[2])
local rebuild = 0
if redis.call('EXISTS', KEYS[5]) == 0 then
  redis.call('SET', KEYS[6], ARGV[6], 'NX', 'PX', ARGV[5])
  if redis.call('GET', KEYS[6]) == ARGV[6] then rebuild = 1 end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[1]), 'LIMIT', 0,
                       limit)
local lapsed = {}
for k = 2, 4 do
  for _, tid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[k], '-inf', ms, 'LIMIT', 0, limit)) do
    lapsed[#lapsed + 1] = tid
  end
end
local sizes, all = {}, 0
for k = 2, 4 do
  sizes[k] = redis.call('ZCARD', KEYS[k])
  all = all + sizes[k]
end
local slice = {}
local function take(offset, want)  -- positions offset .. offset + want - 1 of all the sets
  local total = 0
  for k = 2, 4 do
    local n = sizes[k]
    if want > 0 and offset < total + n then
      local from = math.max(offset - total, 0)
      for _, tid in ipairs(redis.call('ZRANGE', KEYS[k], from, from + want - 1)) do
        slice[#slice + 1] = tid
        want = want - 1
      end
    end
    total = total + n
  end
end
local following = 0
if all > 0 then
  local offset, want = tonumber(ARGV[3]) % all, math.min(tonumber(ARGV[4]), all)
  take(offset, want)
  if #slice < want then take(0, want - #slice) end  -- round the end
  following = (offset + #slice) % all
end
return {rebuild, old, lapsed, slice, following}
"""

_CLAIM = """
-- KEYS: 1 due, 2 this claim's record (global slot)
-- ARGV: 1 now, 2 lease end (now + lease), 3 limit, 4 lease (ms)
-- Returns {id, due at, ...}. The client sends a call again when its connection broke or its
-- reply timed out, though Redis may have run it: this very claim sent again returns what it
-- took then (recorded for the lease) instead of taking more and leaving those leased to
-- nobody. A claim that took nothing records nothing: sent again, it may take items.
local taken = redis.call('LRANGE', KEYS[2], 0, -1)
if #taken > 0 then return taken end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0,
                       ARGV[3])
for i = 1, #due, 2 do redis.call('ZADD', KEYS[1], ARGV[2], due[i]) end
if #due > 0 then
  for i = 1, #due, 1000 do
    redis.call('RPUSH', KEYS[2], unpack(due, i, math.min(i + 999, #due)))
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return due
"""

_RENEW = """
-- KEYS: 1 due (global slot); ARGV: 1 new lease end, then per table: id, the lease end its
-- claim (or last renewal) gave it. Returns the ids renewed: those still at that lease end
-- (a commit that moved the due time, or another replica's claim, changed it).
local out = {}
for i = 2, #ARGV, 2 do
  local at = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if at and tonumber(at) == tonumber(ARGV[i + 1]) then
    redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i])
    out[#out + 1] = ARGV[i]
  end
end
return out
"""

_AT = """
-- KEYS: 1 table, 2 events stream (table slot); ARGV: 1 stream id
-- Returns nil (no table) or {version, last seq, the entry with that id (none: empty)}.
local t = redis.call('HMGET', KEYS[1], 'v', 'q')
if not t[1] then return false end
return {t[1], t[2] or '0', redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])}
"""

_COUNT = _NOW_MS + """
-- KEYS: the status sets; returns how many tables of each have not expired
local ms = now_ms()
local out = {}
for k = 1, #KEYS do out[k] = redis.call('ZCOUNT', KEYS[k], '(' .. ms, '+inf') end
return out
"""

_EVENTS = """
-- KEYS: 1 table, 2 events stream (table slot); ARGV: 1 first stream id
-- Returns nil (no table) or {version, last seq, entries from that id on}, read at once.
local t = redis.call('HMGET', KEYS[1], 'v', 'q')
if not t[1] then return false end
return {t[1], t[2], redis.call('XRANGE', KEYS[2], ARGV[1], '+')}
"""

_TAKE = """
-- KEYS: 1 bucket (hash: t tokens, l last refill time; its own slot)
-- ARGV: 1 rate (tokens per second, > 0), 2 burst, 3 cost, 4 now (the caller's clock, s),
--       5 longest ttl (ms)
-- Returns {1 taken or 0 not, seconds until it would be (a string)}: Store.take_tokens, the
-- same steps as base.refill_and_take.
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 't', 'l')
local tokens, last = burst, now
if b[1] then
  tokens, last = tonumber(b[1]), tonumber(b[2])
  if now > last then
    tokens = math.min(burst, tokens + (now - last) * rate)
    last = now
  end
end
local taken, wait = 0, 0
if cost <= tokens then
  tokens = math.min(burst, tokens - cost)
  taken = 1
else
  wait = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'l', string.format('%.17g', last))
-- a bucket left alone until it is full again is as good as none
local ttl = math.min(math.floor((burst - tokens) / rate * 1000) + 1000, tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))
return {taken, string.format('%.17g', wait)}
"""


def _unavailable(exc: BaseException) -> bool:
    """Is this reply one of "Redis cannot serve now" (loading, read-only, cluster down...)?"""
    if isinstance(exc, RedisClusterException):
        return True  # no node reachable, slot not covered: the cluster cannot be used now
    if not isinstance(exc, ResponseError):
        return False
    code = getattr(exc, "status_code", None) or str(exc).split(" ", 1)[0]
    return code in _UNAVAILABLE_REPLIES or str(exc).startswith(_UNAVAILABLE_REPLIES)


@contextlib.contextmanager
def _guard(where: str) -> Iterator[None]:
    """Turn "Redis cannot be reached" into :class:`StoreUnavailable`."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise StoreUnavailable(f"{where}: {exc or type(exc).__name__}") from exc
    except (ResponseError, RedisClusterException) as exc:
        if _unavailable(exc):
            raise StoreUnavailable(f"{where}: {exc or type(exc).__name__}") from exc
        raise
    except AttributeError as exc:
        # redis-py's Cluster client can close a node's connections (a topology refresh after a
        # connection error) under a call that is still connecting: its writer is then None.
        # The call never reached Redis; it is a transient connection failure, nothing else.
        if _raised_in_redis_connection(exc):
            raise StoreUnavailable(f"{where}: connection reset while connecting") from exc
        raise


def _raised_in_redis_connection(exc: BaseException) -> bool:
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return last is not None and last.tb_frame.f_code.co_filename.endswith(
        ("redis/asyncio/connection.py", "redis\\asyncio\\connection.py")
    )


_XReadReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None
_Client = aredis.Redis | RedisCluster


class _Script:
    """A Lua script run with ``EVALSHA``, sent whole with ``EVAL`` the first time a node does
    not know it (``EVAL`` caches it there). Both route by the script's keys on a Cluster;
    redis-py's ``register_script`` would instead load an unknown script on every primary, so
    that one primary down would break the first use of a script on the others."""

    def __init__(self, client: _Client, text: str) -> None:
        self.client = client
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()

    async def __call__(self, keys: Sequence[str], args: Sequence[bytes | str | int]) -> Any:
        try:
            return await self.client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self.client.eval(self.text, len(keys), *keys, *args)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _event_from_entry(entry_id: bytes, fields: dict[bytes, bytes]) -> StoredEvent:
    seq = int(entry_id.split(b"-", 1)[0])
    private = {int(k): v for k, v in fields.items() if k != b"p"}
    return StoredEvent(seq, fields.get(b"p", b""), private)
class _RedisSubscription(QueueSubscription):
    def __init__(self, reader: _Reader) -> None:
        super().__init__(QUEUE_LIMIT)
        self._reader = reader

    def _detach(self) -> None:
        self._reader.discard(self)


class _Reader:
    """This replica's one reader of one table's stream, fanning out to local watchers.

    It checks that the table's history still continues what it delivered: after every
    failed call (a Redis restart breaks its connection), when the stream is idle, and when
    an entry does not follow the last one delivered. Its check reads the table's last
    sequence number and the entry it delivered last: a table whose last sequence number is
    below it, or whose entry there is missing or different (a Redis restored from an older
    snapshot, then played on past that point), went back in time. Then every subscription
    gets :data:`REWOUND` and the reader goes on from the table's current position."""

    def __init__(self, store: RedisStore, table_id: str, after_seq: int) -> None:
        self.store = store
        self.table_id = table_id
        self.subs: set[_RedisSubscription] = set()
        self.last_id: bytes | str = f"{after_seq}-0"
        self.seq = after_seq
        """The sequence number delivered last (or the table's when the reader started)."""
        self.entry: dict[bytes, bytes] | None = None
        """The stream entry of ``seq`` as delivered (None: not read yet)."""
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
            sub.end(reason)
        self.stop()

    async def _xread(self, stream: str) -> _XReadReply:
        client = self.store._readers_client
        if isinstance(client, RedisCluster):
            # Straight to the node of the stream's slot: a plain XREAD would first ask a
            # node which key it reads (COMMAND GETKEYS; XREAD's keys are "movable").
            await client.initialize()
            return cast(_XReadReply, await client.execute_command(
                "XREAD", "COUNT", 512, "BLOCK", self.store.block_ms, "STREAMS", stream,
                self.last_id, target_nodes=client.get_node_from_key(stream),
            ))
        return cast(_XReadReply, await client.xread(
            {stream: self.last_id}, count=512, block=self.store.block_ms
        ))

    async def _read_at(self, seq: int) -> tuple[int, dict[bytes, bytes] | None] | None:
        """(the table's last sequence number, the entry of ``seq`` or None); None: no table."""
        store = self.store
        if isinstance(store._readers_client, RedisCluster):
            await store._readers_client.initialize()  # route by the key, as _xread does
        reply = await store._at(
            keys=[store._k_table(self.table_id), store._k_stream(self.table_id)],
            args=[f"{seq}-0"],
        )
        if reply is None:
            return None
        entries = reply[2]
        fields = None
        if entries:
            flat = entries[0][1]
            fields = dict(zip(flat[::2], flat[1::2], strict=True))
        return int(reply[1] or 0), fields

    async def _check(self, *, diverged: bool = False) -> bool:
        """Does the table still continue what this reader delivered (``diverged``: it is
        known not to)? If not, every subscription gets REWOUND and the reader starts again
        from the table's last event. False: the table is gone."""
        found = await self._read_at(self.seq)
        if found is None:
            return False
        last, entry = found
        if self.seq and entry is None and last >= self.seq:
            diverged = True  # the entry delivered last is not in the stream any more
        elif last < self.seq or (entry is not None and self.entry is not None
                                 and entry != self.entry):
            diverged = True
        if not diverged:
            if self.entry is None:
                self.entry = entry
            return True
        log.warning("stream_history_changed", table_id=self.table_id, delivered=self.seq,
                    last_seq=last)
        found = await self._read_at(last)
        if found is None:
            return False
        self.seq, self.entry = last, found[1]
        self.last_id = f"{last}-0"
        for sub in list(self.subs):
            sub.rewound()
        return True

    async def _run(self) -> None:
        store = self.store
        stream = store._k_stream(self.table_id)
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
                    reply = await self._xread(stream)
                    if not reply:
                        check = True
                        continue
                except (RedisConnectionError, RedisTimeoutError, OSError, ResponseError,
                        RedisClusterException) as exc:
                    if isinstance(exc, ResponseError | RedisClusterException) and (
                        not _unavailable(exc)
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
                for _key, entries in reply:
                    for entry_id, fields in entries:
                        event = _event_from_entry(entry_id, fields)
                        if event.seq != self.seq + 1:
                            check = diverged = True  # a gap: not the history delivered
                            break
                        self.last_id, self.seq, self.entry = entry_id, event.seq, fields
                        for sub in list(self.subs):
                            sub.push(event)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("stream_reader_failed", table_id=self.table_id)
            self.end_all("behind")


class RedisStore(Store):
    """Tables in Redis or a Redis Cluster, shared by every replica that opens the same URL
    (see the module doc)."""

    def __init__(
        self,
        client: _Client,
        readers_client: _Client,
        *,
        where: str = "Redis",
        prefix: str = "tute",
        finished_ttl_s: float = 3600.0,
        abandoned_ttl_s: float = 86_400.0,
        retention: int = 10_000,
        block_ms: int = 2_000,
        reader_grace_s: float = 2.0,
        max_calls: int = 0,
        call_timeout_s: float = 1.0,
        wait_replicas: int = 0,
        wait_ms: int = 100,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._redis = client
        self.wait_replicas = wait_replicas
        """A commit or create is acknowledged once this many replicas of its node have it."""
        self.wait_ms = wait_ms
        """How long the acknowledgement waits for them (then StoreUnavailable)."""
        self._clock = clock
        """The time of presence expiries and of repair passes (the Lua scripts read Redis's)."""
        self._readers_client = readers_client
        self.cluster = isinstance(client, RedisCluster)
        self._where = where
        self._prefix = prefix
        g = "{" + prefix + ":g}"
        self._k_lobby = f"{g}:lobby"
        self._k_lobby_e = f"{g}:lobby:e"
        self._k_due = f"{g}:due"
        self._k_status = [f"{g}:st:{s}" for s in STATUSES]
        self._k_inv = f"{g}:inv"
        self._k_invof = f"{g}:invof"
        self._k_ver = f"{g}:ver"
        self._k_pend = f"{g}:pend"
        self._k_born = f"{g}:born"
        self._k_rebuild = f"{g}:rebuild"
        self._k_claim = f"{g}:claim"
        self._k_bots = f"{g}:bots"
        self._k_bots_n = f"{g}:bots:n"
        self._index_keys = [self._k_lobby, self._k_lobby_e, self._k_due, *self._k_status,
                            self._k_inv, self._k_invof, self._k_ver, self._k_pend,
                            self._k_bots, self._k_bots_n]
        self.finished_ttl_s = finished_ttl_s
        self.abandoned_ttl_s = abandoned_ttl_s
        self.retention = retention
        self.block_ms = block_ms
        self.reader_grace_s = reader_grace_s
        self.fence_s = 5.0
        """A commit that changes the index applies only this soon after its marker."""
        self.repair_after_s = 10.0
        """Repair takes markers older than this (above ``fence_s`` plus clock skew)."""
        self.maintain_every_s = 1.0
        """How often :meth:`claim_due` runs a :meth:`repair` pass on this replica."""
        self.scrub_batch = 100
        """Tables of the status sets checked against their hash on each repair pass."""
        self.repair_limit = 200
        """Old markers, and tables past their expiry (per status), taken per repair pass."""
        self._begin = _Script(client, _BEGIN)
        self._create = _Script(client, _CREATE)
        self._delete = _Script(client, _DELETE)
        self._commit = _Script(client, _COMMIT)
        self._index = _Script(client, _INDEX)
        self._suspects = _Script(client, _SUSPECTS)
        self._claim = _Script(client, _CLAIM)
        self._count = _Script(client, _COUNT)
        self._events = _Script(client, _EVENTS)
        self._take = _Script(client, _TAKE)
        self._renew = _Script(client, _RENEW)
        self._at = _Script(readers_client, _AT)
        self._readers: dict[str, _Reader] = {}
        # A Cluster client's pools do not wait for a free connection: calls wait here.
        self._gate = asyncio.Semaphore(max_calls) if max_calls > 0 else None
        self._gate_timeout_s = call_timeout_s
        # table id -> (version, (l, o, d, s, b)) last seen: predicts whether a commit changes the
        # index (then it writes its marker first); the commit script has the last word.
        self._known: dict[str, tuple[int, tuple[bytes | None, ...]]] = {}
        self._last_repair = -float("inf")
        self._repairing = False
        self._repair_failing = False
        self._scrub_at = secrets.randbelow(1 << 30)  # replicas scrub different slices
        self._rebuild_task: asyncio.Task[None] | None = None

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
        clock: Clock = SYSTEM_CLOCK,
    ) -> RedisStore:
        """A store on ``redis://host:port/db`` (``?cluster=1``: on the Redis Cluster that
        node belongs to). Store options given as query parameters win over the keyword
        arguments (``open_store`` passes the server's ``finished_ttl_s``)."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        ours: dict[str, str] = {}
        for name in ("cluster", "finished_ttl_s", "abandoned_ttl_s", "retention", "prefix",
                     "timeout_s", "wait_replicas", "wait_ms"):
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
        reader_timeout = block_ms / 1000 + timeout + 1.0
        settings: dict[str, Any] = {
            "prefix": pfx, "finished_ttl_s": finished, "abandoned_ttl_s": abandoned,
            "retention": keep, "block_ms": block_ms, "reader_grace_s": max(2.0, 2 * timeout),
            "call_timeout_s": timeout, "clock": clock,
            "wait_replicas": int(ours.get("wait_replicas", "0")),
            "wait_ms": int(ours.get("wait_ms", "100")),
        }
        host = parts.hostname or parts.path or "localhost"
        if ours.get("cluster", "").lower() in _TRUE:
            if parts.scheme not in ("redis", "rediss") or not parts.hostname:
                raise ValueError(
                    f"a Redis Cluster store URL is redis://host:port?cluster=1 (or rediss://),"
                    f" not {url!r}"
                )
            if parts.path.strip("/") not in ("", "0"):
                raise ValueError("a Redis Cluster has database 0 only")

            def cluster_client(retries: int = 1, **kw: Any) -> RedisCluster:
                # One retry at once (as below); a node that cannot be reached makes the
                # client look the cluster's layout up again before it. A MOVED reply moves
                # its slot alone (reinitialize_steps=0): redis-py's default closes every
                # connection of every node on each fifth MOVED, under the calls running on
                # them, which then fail or are sent again.
                return RedisCluster.from_url(
                    clean, socket_connect_timeout=timeout, decode_responses=False,
                    retry=Retry(NoBackoff(), retries), reinitialize_steps=0, **kw,
                )

            return cls(
                cluster_client(max_connections=max_connections, socket_timeout=timeout),
                # the readers see every broken connection (they check the table after it)
                cluster_client(0, max_connections=1_000_000, socket_timeout=reader_timeout),
                where=f"Redis Cluster at {host}:{parts.port or 6379}",
                max_calls=max_connections,
                **settings,
            )
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
        # No retry for the readers: each sees its connection break (a Redis restart) and
        # checks its table's history before it reads on.
        readers_pool = aredis.ConnectionPool.from_url(
            clean, socket_timeout=reader_timeout, **{**common, "retry": Retry(NoBackoff(), 0)}
        )
        where = f"Redis at {host}:{parts.port or 6379}{parts.path if parts.hostname else ''}"
        return cls(
            aredis.Redis.from_pool(pool), aredis.Redis.from_pool(readers_pool), where=where,
            **settings,
        )

    # -- keys and calls ------------------------------------------------------------------------

    def _k_table(self, table_id: str) -> str:
        return f"{self._prefix}:{{{table_id}}}"

    def _k_stream(self, table_id: str) -> str:
        return f"{self._prefix}:{{{table_id}}}:x"

    def _k_idem(self, table_id: str) -> str:
        return f"{self._prefix}:{{{table_id}}}:i"

    def _k_presence(self, table_id: str) -> str:
        return f"{self._prefix}:{{{table_id}}}:p"

    def _k_bucket(self, key: str) -> str:
        return f"{self._prefix}:rl:{key}"

    @contextlib.asynccontextmanager
    async def _call(self) -> AsyncIterator[None]:
        """Around every call: "cannot be reached" becomes StoreUnavailable; on a Cluster, at
        most ``max_calls`` calls at once (the others wait up to the timeout, as for a free
        connection of the single-node pool)."""
        with _guard(self._where):
            if self._gate is None:
                yield
                return
            try:
                async with asyncio.timeout(self._gate_timeout_s):
                    await self._gate.acquire()
            except TimeoutError:
                raise StoreUnavailable(f"{self._where}: no connection free") from None
            try:
                if isinstance(self._redis, RedisCluster):
                    # Learn the layout first (once, and again after the client dropped it):
                    # redis-py routes a call made before then as keyless, to any node.
                    await self._redis.initialize()
                yield
            finally:
                self._gate.release()

    def _remember(self, table_id: str, version: int, state: Sequence[bytes | None]) -> None:
        """Note a table's index state (l, o, d, s, b) at ``version``."""
        if len(self._known) >= 50_000:
            self._known.clear()
        self._known[table_id] = (version, tuple(state[:5]))

    def _index_unchanged(
        self, table_id: str, version: int, lobby: str, score: str, due: str, status: str,
        bots: int,
    ) -> bool:
        """Does a commit at ``version`` leave the index state as this replica last saw it?"""
        known = self._known.get(table_id)
        if known is None or known[0] != version:
            return False
        old_lobby, old_score, old_due, old_status, old_bots = known[1]
        return (old_lobby, old_score, old_due) == (lobby.encode(), score.encode(), due.encode()) \
            and (not status or old_status == status.encode()) and old_bots == str(bots).encode()

    # -- the index step (see "Atomicity" in the module doc) ------------------------------------

    async def _mark(self, table_id: str) -> tuple[str, int]:
        """Write a write-ahead marker for a change of ``table_id``'s index: (member, ms)."""
        member = f"{table_id}|{secrets.token_hex(8)}"
        async with self._call():
            ms = await self._begin(keys=[self._k_pend], args=[member])
        return member, int(ms)

    async def _apply_index(
        self, items: Sequence[tuple[str, int, Sequence[bytes | str | None]]],
        markers: Sequence[str],
    ) -> None:
        """Apply tables' recorded index states (version 0: the table is gone), then remove
        ``markers``; one script on the global slot."""
        if not items and not markers:
            return
        args: list[bytes | str | int] = [len(items)]
        for table_id, version, state in items:
            args += [table_id, version, *(b"" if v is None else v for v in state)]
        args += markers
        async with self._call():
            await self._index(keys=self._index_keys, args=args)

    async def _settle(
        self, items: Sequence[tuple[str, int, Sequence[bytes | str | None]]],
        markers: Sequence[str],
    ) -> None:
        """The index step after a commit or a create. It cannot undo what the table step
        did, so a failure leaves the markers to :meth:`repair` instead of failing the call."""
        try:
            await self._apply_index(items, markers)
        except StoreUnavailable as exc:
            log.warning("index_update_deferred", tables=[i[0] for i in items], error=str(exc))

    async def _replicated(self, table_id: str) -> None:
        """With ``wait_replicas``: return once that many replicas of the table's node have
        every write made so far (``WAIT``), else raise :class:`StoreUnavailable`.

        ``WAIT`` counts the writes of its own connection, so it goes in one pipeline after a
        write of its own to the table's slot (a small key that expires): replicas that have
        that write have every earlier one of the node, the commit's included."""
        if self.wait_replicas <= 0:
            return
        key = f"{self._prefix}:{{{table_id}}}:w"
        async with self._call():
            pipe = self._redis.pipeline(transaction=False)
            pipe.set(key, b"", px=60_000)
            if isinstance(self._redis, RedisCluster):
                node = self._redis.get_node_from_key(key)
                pipe.execute_command("WAIT", self.wait_replicas, self.wait_ms,
                                     target_nodes=node)
            else:
                pipe.execute_command("WAIT", self.wait_replicas, self.wait_ms)
            _, acked = await pipe.execute()
        if int(acked) < self.wait_replicas:
            raise StoreUnavailable(
                f"{self._where}: {int(acked)} of {self.wait_replicas} replicas acknowledged "
                f"a write of table {table_id} within {self.wait_ms} ms"
            )

    # -- tables ------------------------------------------------------------------------------

    async def create(
        self,
        table_id: str,
        record: bytes,
        invite_code: str,
        lobby: LobbyEntry | None,
        *,
        due_at: float = 0.0,
    ) -> None:
        markers: list[str] = []
        try:
            for _ in range(3):
                member, ms = await self._mark(table_id)
                markers.append(member)
                async with self._call():
                    reply = await self._create(
                        keys=[self._k_table(table_id)],
                        args=[record, invite_code, _encode_lobby(lobby), _lobby_score(lobby),
                              _ms(self.abandoned_ttl_s), ms, _ms(self.fence_s),
                              repr(due_at) if due_at else "0"],
                    )
                if int(reply[0]) != -3:
                    break
            else:
                raise StoreUnavailable(f"{self._where}: create kept missing its marker's fence")
        except ResponseError:
            await self._settle([], markers)
            raise
        if int(reply[0]) == 0:
            await self._settle([], markers)
            raise ValueError("table id already used")
        state = cast(list[bytes], reply[2:9])
        self._remember(table_id, 1, [*state[:4], state[6]])
        await self._settle([(table_id, 1, state)], markers)
        await self._replicated(table_id)

    async def delete(self, table_id: str, expected_version: int) -> bool:
        # Like a commit that changes the index: a marker first, the table's keys go in one
        # script on its slot, then the index step drops it everywhere (or repair does).
        keys = [self._k_table(table_id), self._k_stream(table_id), self._k_idem(table_id),
                self._k_presence(table_id)]
        markers: list[str] = []
        for _ in range(3):
            member, ms = await self._mark(table_id)
            markers.append(member)
            async with self._call():
                reply = int(await self._delete(
                    keys=keys, args=[expected_version, ms, _ms(self.fence_s)]
                ))
            if reply != -3:
                break
        else:
            await self._settle([], markers)
            raise StoreUnavailable(f"{self._where}: delete kept missing its marker's fence")
        if reply != 1:
            await self._settle([], markers)
            return False
        self._known.pop(table_id, None)
        await self._settle([(table_id, 0, [""] * len(_STATE_FIELDS))], markers)
        reader = self._readers.get(table_id)
        if reader is not None:
            reader.end_all("behind")  # the other replicas' readers see the table gone
        return True

    async def load(self, table_id: str) -> tuple[int, bytes] | None:
        async with self._call():
            found = await self._redis.hmget(
                self._k_table(table_id), ["v", "r", "l", "o", "d", "s", "b"]
            )
        version, record, *state = cast(list[bytes | None], found)
        if version is None or record is None:
            self._known.pop(table_id, None)
            return None
        self._remember(table_id, int(version), state)
        return int(version), record

    async def find_invite(self, invite_code: str) -> str | None:
        async with self._call():
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
        bot_seats: int = 0,
    ) -> CommitOutcome:
        entry, score = _encode_lobby(lobby), _lobby_score(lobby)
        due = repr(due_at) if due_at else "0"
        head: list[bytes | str | int] = [
            expected_version, record, idempotency_key, response, entry, score, due, status,
            _ms(self.finished_ttl_s), _ms(self.abandoned_ttl_s), self.retention,
            secrets.token_hex(8),
        ]
        tail: list[bytes | str | int] = [len(events)]
        for ev in events:
            tail += [ev.seq, 1 + len(ev.private), "p", ev.public]
            for seat, data in ev.private.items():
                tail += [str(seat), data]
        keys = [self._k_table(table_id), self._k_stream(table_id), self._k_idem(table_id)]
        markers: list[str] = []
        marker_ms = 0
        try:
            if not self._index_unchanged(
                table_id, expected_version, entry, score, due, status, bot_seats
            ):
                member, marker_ms = await self._mark(table_id)
                markers.append(member)
            for _ in range(4):
                async with self._call():
                    reply = await self._commit(
                        keys=keys,
                        args=[*head, marker_ms, _ms(self.fence_s), bot_seats, *tail],
                    )
                if int(reply[0]) not in (-2, -3):
                    break
                # The commit changes the index and has no marker, or a stale one: mark again.
                member, marker_ms = await self._mark(table_id)
                markers.append(member)
            else:
                raise StoreUnavailable(f"{self._where}: commit kept missing its marker's fence")
        except ResponseError:
            await self._settle([], markers)  # a refused commit wrote nothing
            raise
        applied, version = int(reply[0]), int(reply[1])
        if applied == 1:
            state = cast(list[bytes], reply[2:9])
            self._remember(table_id, version, [*state[:4], state[6]])
            if markers:
                await self._settle([(table_id, version, state)], markers)
            await self._replicated(table_id)
            return CommitOutcome(True, version)
        await self._settle([], markers)
        if applied == -1:
            self._known.pop(table_id, None)
        if len(reply) > 2:
            await self._replicated(table_id)  # a repeat: the first one may not have been
            return CommitOutcome(False, version, reply[2])
        return CommitOutcome(False, max(version, 0))

    async def set_presence(
        self, table_id: str, watcher: str, seat: int, expires_at: float
    ) -> None:
        # A sorted set in the table's slot: member "<seat>:<watcher>", score its expiry. The
        # key itself expires a while after the last refresh, with the table's other keys gone.
        key = self._k_presence(table_id)
        async with self._call():
            pipe = self._redis.pipeline(transaction=False)
            pipe.zadd(key, {f"{seat}:{watcher}": expires_at})
            now = self._clock.now()
            pipe.zremrangebyscore(key, "-inf", repr(now))
            pipe.expire(key, max(1, int(expires_at - now) + 60))
            await pipe.execute()

    async def clear_presence(self, table_id: str, watcher: str) -> None:
        key = self._k_presence(table_id)
        async with self._call():
            members = cast(list[bytes], await self._redis.zrange(key, 0, -1))
            gone = [m for m in members if m.split(b":", 1)[-1] == watcher.encode()]
            if gone:
                await self._redis.zrem(key, *gone)

    async def present_watchers(self, table_id: str, now: float) -> dict[str, int]:
        async with self._call():
            members = cast(list[bytes], await self._redis.zrangebyscore(
                self._k_presence(table_id), f"({now!r}", "+inf"))
        out: dict[str, int] = {}
        for m in members:
            seat, _, watcher = m.decode().partition(":")
            out[watcher] = int(seat)
        return out

    async def idempotent_response(self, table_id: str, idempotency_key: str) -> bytes | None:
        async with self._call():
            found = await self._redis.hget(self._k_idem(table_id), idempotency_key)
        if found is not None:
            await self._replicated(table_id)  # its first answer may have failed in WAIT
        return cast(bytes | None, found)

    async def events_after(self, table_id: str, seq: int) -> list[StoredEvent] | None:
        seq = max(seq, 0)
        async with self._call():
            reply = await self._events(
                keys=[self._k_table(table_id), self._k_stream(table_id)], args=[f"{seq + 1}-0"]
            )
        if reply is None:
            return None
        _version, last, entries = reply
        if int(last) <= seq:
            return []
        events = [
            _event_from_entry(entry_id, dict(zip(fields[::2], fields[1::2], strict=True)))
            for entry_id, fields in entries
        ]
        if not events or events[0].seq != seq + 1:
            return None  # trimmed (retention) or lost: the caller sends a snapshot
        return events

    # -- live events ---------------------------------------------------------------------------

    async def subscribe(self, table_id: str) -> Subscription:
        async with self._call():
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
        async with self._call():
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
        await self._maybe_repair()
        record = f"{self._k_claim}:{secrets.token_hex(8)}"
        async with self._call():
            reply = await self._claim(
                keys=[self._k_due, record],
                args=[repr(now), repr(now + lease_s), limit, _ms(lease_s)],
            )
        return [
            DueItem(reply[i].decode(), float(reply[i + 1])) for i in range(0, len(reply), 2)
        ]

    async def renew_due(self, held: Mapping[str, float], until: float) -> list[str]:
        if not held:
            return []
        args: list[bytes | str | int] = [repr(until)]
        for table_id, at in held.items():
            args += [table_id, repr(at)]
        async with self._call():
            renewed = await self._renew(keys=[self._k_due], args=args)
        return [t.decode() for t in renewed]

    async def next_due(self) -> float | None:
        async with self._call():
            first = cast(list[tuple[bytes, float]], await self._redis.zrange(
                self._k_due, 0, 0, withscores=True))
        return float(first[0][1]) if first else None

    async def count_tables(self) -> dict[str, int]:
        async with self._call():
            counts = await self._count(keys=self._k_status, args=[])
        return {s: int(n) for s, n in zip(STATUSES, counts, strict=True)}

    async def count_bot_seats(self) -> int:
        async with self._call():
            total = await self._redis.get(self._k_bots_n)
        return int(total or 0)

    async def take_tokens(
        self, key: str, rate: float, burst: float, cost: float, now: float
    ) -> BucketOutcome:
        async with self._call():
            taken, wait = await self._take(
                keys=[self._k_bucket(key)],
                args=[repr(float(rate)), repr(float(burst)), repr(float(cost)), repr(now),
                      _BUCKET_TTL_MS],
            )
        return BucketOutcome(int(taken) == 1, float(wait))

    async def ping(self) -> None:
        # A keyed read: on a Cluster it asks the node of the global slot, which the lobby,
        # the scheduler and every index change need (another node down fails the calls about
        # its own tables, with UNAVAILABLE, and the others go on).
        async with self._call():
            await self._redis.exists(self._k_born)

    async def close(self) -> None:
        for reader in list(self._readers.values()):
            reader.stop()
        if self._rebuild_task is not None:
            self._rebuild_task.cancel()
            with contextlib.suppress(BaseException):
                await self._rebuild_task
        with contextlib.suppress(Exception):
            await self._redis.aclose()
        with contextlib.suppress(Exception):
            await self._readers_client.aclose()

    # -- repair (see the module doc) -----------------------------------------------------------

    async def _maybe_repair(self) -> None:
        """A :meth:`repair` pass when the last one is ``maintain_every_s`` old. Its first step
        runs on the global slot, like the claim that follows: its failure is the claim's. A
        failure further on (another node) is logged, and the claim goes ahead."""
        started = self._clock.monotonic()
        if self._repairing or started - self._last_repair < self.maintain_every_s:
            return
        self._repairing = True
        self._last_repair = started
        try:
            found = await self._find_suspects()
            try:
                await self._repair_found(*found)
            except (StoreUnavailable, ResponseError) as exc:
                if not self._repair_failing:
                    log.warning("index_repair_failed", error=str(exc))
                self._repair_failing = True
            else:
                self._repair_failing = False
        finally:
            self._repairing = False

    async def repair(self) -> None:
        """One repair pass of the indexes: tables of markers older than ``repair_after_s``,
        tables past the expiry their status entry records, and the next ``scrub_batch``
        tables of the status sets get the index state their hash records (removed from every
        index when the hash is gone); if the indexes were lost, a rebuild starts."""
        await self._repair_found(*await self._find_suspects())

    async def _find_suspects(self) -> tuple[bool, list[str], set[str]]:
        """(rebuild?, old markers, tables to reconcile), from the global slot."""
        async with self._call():
            reply = await self._suspects(
                keys=[self._k_pend, *self._k_status, self._k_born, self._k_rebuild],
                args=[_ms(self.repair_after_s), self.repair_limit, self._scrub_at,
                      self.scrub_batch, 60_000, secrets.token_hex(8)],
            )
        rebuild, old, lapsed, scrub, self._scrub_at = reply
        markers = [m.decode() for m in old]
        tables = {m.rsplit("|", 1)[0] for m in markers}
        tables.update(t.decode() for t in [*lapsed, *scrub])
        return bool(int(rebuild)), markers, tables

    async def _repair_found(self, rebuild: bool, markers: list[str], tables: set[str]) -> None:
        if rebuild and (self._rebuild_task is None or self._rebuild_task.done()):
            self._rebuild_task = asyncio.create_task(self._rebuild(), name="redis-rebuild")
        await self._reconcile(sorted(tables), markers)

    async def _reconcile(self, tables: Sequence[str], markers: Sequence[str]) -> None:
        """Apply the index state each table's hash records (gone: drop it), then remove the
        ``markers`` of the tables read. A table whose node cannot be reached is left (with
        its markers) for a later pass, and the others go ahead; then StoreUnavailable."""
        read: dict[str, list[bytes | None]] = {}
        failed: StoreUnavailable | None = None
        for start in range(0, len(tables), 32):
            chunk = tables[start : start + 32]
            rows = await asyncio.gather(*(self._read_state(t) for t in chunk),
                                        return_exceptions=True)
            for table_id, row in zip(chunk, rows, strict=True):
                if isinstance(row, StoreUnavailable):
                    failed = failed or row
                elif isinstance(row, BaseException):
                    raise row
                else:
                    read[table_id] = row
        items: list[tuple[str, int, Sequence[bytes | str | None]]] = []
        for table_id, (version, *state) in read.items():
            if version is None:
                items.append((table_id, 0, [""] * len(_STATE_FIELDS)))
            elif state[_STATE_FIELDS.index("x")] is not None:
                items.append((table_id, int(version), state))
            # else: a table last written before this layout; its next commit indexes it
        done = [m for m in markers if m.rsplit("|", 1)[0] in read]
        for start in range(0, max(len(items), 1), 200):
            last = start + 200 >= len(items)
            await self._apply_index(items[start : start + 200], done if last else [])
        if failed is not None:
            raise failed

    async def _read_state(self, table_id: str) -> list[bytes | None]:
        async with self._call():
            found = await self._redis.hmget(self._k_table(table_id), ["v", *_STATE_FIELDS])
        return cast(list[bytes | None], found)

    async def _rebuild(self) -> None:
        """Index every table hash of every node (the global slot lost its data, or this is
        the first start): the version order makes it safe beside live commits."""
        pattern = f"{self._prefix}:{{*}}"
        skip = len(self._prefix) + 2
        try:
            batch: list[str] = []
            found = 0
            with _guard(self._where):
                async for key in self._redis.scan_iter(match=pattern, count=1000, _type="HASH"):
                    name = key.decode() if isinstance(key, bytes) else str(key)
                    if not name.endswith("}"):
                        continue
                    batch.append(name[skip:-1])
                    if len(batch) >= 500:
                        found += len(batch)
                        await self._reconcile(batch, [])
                        batch = []
            found += len(batch)
            await self._reconcile(batch, [])
            async with self._call():
                await self._redis.set(self._k_born, "1")
                await self._redis.delete(self._k_rebuild)
            if found:
                log.info("redis_indexes_rebuilt", tables=found)
        except (StoreUnavailable, ResponseError) as exc:
            log.warning("redis_index_rebuild_failed", error=str(exc))


def _lobby_score(entry: LobbyEntry | None) -> str:
    return repr(entry.created_at) if entry is not None else "0"


def _encode_lobby(entry: LobbyEntry | None) -> str:
    if entry is None:
        return ""
    return json.dumps([entry.preset, entry.players, entry.free_seats, entry.created_at])


def _decode_lobby(table_id: str, data: bytes) -> LobbyEntry:
    preset, players, free, created = json.loads(data)
    return LobbyEntry(table_id, preset, int(players), int(free), float(created))
