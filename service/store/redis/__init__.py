"""The Redis store: many stateless replicas share every table through one Redis or a Redis
Cluster (``TUTE_STORE=redis://host:port/db``, ``?cluster=1`` for a Cluster).

docs/redis-store.md is its design: the keys, how a commit and its index step stay atomic on
a Cluster, repair, live events, and what survives a Redis restart. This package:
:mod:`.connect` (the clients a URL makes, errors, scripts), :mod:`.options`, :mod:`.keys`,
:mod:`.reader` (live events), :mod:`.index` (markers, the index step, repair) and
``scripts/*.lua``.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import cast

from redis.exceptions import ResponseError

from ...clock import SYSTEM_CLOCK, Clock
from ..base import (
    BucketOutcome,
    Commit,
    CommitOutcome,
    DueItem,
    ListedTable,
    LobbyCursor,
    LobbyEntry,
    RecordData,
    Store,
    StoredEvent,
    StoreUnavailable,
    Subscription,
    record_bytes,
)
from .connect import UNREACHABLE, Link, Script, guard, open_link, unavailable
from .index import GONE, Index, encode_lobby, lobby_score, log
from .keys import STATUSES, Keys, Shard
from .options import RedisOptions, ms
from .queue import RedisQueue
from .reader import LiveFeeds, Readers, database, event_from_entry, live_channel, pack_events

__all__ = ["RedisOptions", "RedisStore"]

BUCKET_TTL_MS = 7 * 86_400_000
"""A token bucket's key expires this long after its last use at the latest."""
MARKER_TRIES = 3
"""Write-ahead markers a create or a delete writes before it gives up (each fenced)."""
_TABLE_FIELDS = ["v", "r", "l", "o", "d", "s", "b"]
"""What a load reads of a table's hash: version, record, and the index state it predicts
the next commit's marker from."""


class RedisStore(Store):
    """Tables in Redis or a Redis Cluster, shared by every replica that opens the same URL
    (see docs/redis-store.md)."""

    def __init__(
        self, link: Link, options: RedisOptions | None = None, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.link = link
        self.options = options = options or RedisOptions()
        self.cluster = link.cluster
        self._clock = clock
        """The time of presence expiries and of repair passes (the Lua scripts read Redis's)."""
        self.keys = keys = Keys(options.prefix, options.index_shards)
        self.inline_index = options.inline_index and not self.cluster
        """Does a create, a commit or a delete run its index step in its own script (a
        single Redis)?"""
        self.index = Index(link, keys, options, clock, predict=not self.inline_index)
        self.publish = not self.cluster
        """Does a commit publish its events on its table's channel (a single Redis: some
        replica may take them from there, :class:`.reader.LiveFeeds`)?"""
        self.readers: LiveFeeds | Readers = (
            LiveFeeds(link.readers, keys, options)
            if self.publish and options.pubsub
            else Readers(link.readers, keys, options)
        )
        self._db = 0 if self.cluster else database(link.readers)
        client = link.client
        # On a single Redis the scripts are pipelined on one connection (``link.mux``; None on
        # a Cluster), all but the scheduler's claim and renew (a few a second, on the pool).
        self._create = Script(client, "create", mux=link.mux)
        self._delete = Script(client, "delete", mux=link.mux)
        self._commit = Script(client, "commit", mux=link.mux)
        self._commit_indexed = Script(client, "commit_indexed", mux=link.mux)
        self._create_indexed = Script(client, "create_indexed", mux=link.mux)
        self._delete_indexed = Script(client, "delete_indexed", mux=link.mux)
        self._claim = Script(client, "claim")
        self._renew = Script(client, "renew")
        self._count = Script(client, "count", mux=link.mux)
        self._events = Script(client, "events", mux=link.mux)
        self._take = Script(client, "take", mux=link.mux)
        self._tickets = RedisQueue(link, options.prefix)

    def tickets(self) -> RedisQueue:
        return self._tickets

    @classmethod
    def from_url(
        cls,
        url: str,
        options: RedisOptions | None = None,
        *,
        max_connections: int = 64,
        clock: Clock = SYSTEM_CLOCK,
    ) -> RedisStore:
        """A store on ``redis://host:port/db`` (``?cluster=1``: on the Redis Cluster that
        node belongs to). Store options given as query parameters win over ``options``
        (``open_store`` passes the server's ``finished_ttl_s``)."""
        link, options = open_link(url, options or RedisOptions(), max_connections=max_connections)
        return cls(link, options, clock=clock)

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
        # A marker first, the table's hash at version 1, then the index step (on a single
        # Redis: both steps in one script, no marker).
        key = self.keys.table(table_id)

        def args(marker: int | str) -> list[bytes | str | int]:
            return [
                record,
                invite_code,
                encode_lobby(lobby),
                lobby_score(lobby),
                ms(self.options.abandoned_ttl_s),
                marker,
                ms(self.options.fence_s),
                repr(due_at) if due_at else "0",
            ]

        if self.inline_index:
            async with self.link.call():
                reply = await self._create_indexed(
                    keys=[key, *self.keys.shard_of(table_id).index],
                    args=[table_id, *args("inline")],
                )
            if int(reply[0]) == 0:
                raise ValueError("table id already used")
            await self._replicated(table_id)
            return
        markers: list[str] = []
        try:
            for _ in range(MARKER_TRIES):
                member, marker_ms = await self.index.mark(table_id)
                markers.append(member)
                async with self.link.call():
                    reply = await self._create(keys=[key], args=args(marker_ms))
                if int(reply[0]) != -3:
                    break
            else:
                raise StoreUnavailable(f"{self.link.where}: create kept missing its marker's fence")
        except ResponseError:
            await self.index.settle([], markers)
            raise
        if int(reply[0]) == 0:
            await self.index.settle([], markers)
            raise ValueError("table id already used")
        state = cast(list[bytes], reply[2:9])
        self.index.remember(table_id, 1, [*state[:4], state[6]])
        await self.index.settle([(table_id, 1, state)], markers)
        await self._replicated(table_id)

    async def delete(self, table_id: str, expected_version: int) -> bool:
        # Like a commit that changes the index: a marker first, the table's keys go in one
        # script on its slot, then the index step drops it everywhere (or repair does). On a
        # single Redis, both steps in one script.
        k = self.keys
        keys = [
            k.table(table_id),
            k.stream(table_id),
            k.idempotency(table_id),
            k.presence(table_id),
        ]
        if self.inline_index:
            async with self.link.call():
                reply = int(
                    await self._delete_indexed(
                        keys=[*keys, *k.shard_of(table_id).index],
                        args=[table_id, expected_version],
                    )
                )
            return self._deleted(table_id) if reply == 1 else False
        markers: list[str] = []
        for _ in range(MARKER_TRIES):
            member, marker_ms = await self.index.mark(table_id)
            markers.append(member)
            async with self.link.call():
                reply = int(
                    await self._delete(
                        keys=keys, args=[expected_version, marker_ms, ms(self.options.fence_s)]
                    )
                )
            if reply != -3:
                break
        else:
            await self.index.settle([], markers)
            raise StoreUnavailable(f"{self.link.where}: delete kept missing its marker's fence")
        if reply != 1:
            await self.index.settle([], markers)
            return False
        await self.index.settle([(table_id, 0, GONE)], markers)
        return self._deleted(table_id)

    def _deleted(self, table_id: str) -> bool:
        """After a delete: forget the table, end its watchers here (the other replicas'
        readers see it gone)."""
        self.index.forget(table_id)
        self.readers.end(table_id, "behind")
        return True

    async def load(self, table_id: str) -> tuple[int, bytes] | None:
        async with self.link.call():
            found = await self.link.command("HMGET", self.keys.table(table_id), *_TABLE_FIELDS)
        version, record, *state = cast(list[bytes | None], found)
        if version is None or record is None:
            self.index.forget(table_id)
            return None
        self.index.remember(table_id, int(version), state)
        return int(version), record

    def recent(self, table_id: str) -> tuple[int, RecordData] | None:
        return self.readers.recent(table_id)

    async def find_invite(self, invite_code: str) -> str | None:
        # An invite code is in the shard of its table, which the code does not tell: every
        # shard is asked (at once).
        client = self.link.client
        async with self.link.call():
            found = await asyncio.gather(
                *(client.hget(sh.invites, invite_code) for sh in self.keys.shards)
            )
            ids = [cast(bytes, f).decode() for f in found if f is not None]
            if not ids:
                return None
            table_id = ids[0]
            if not await client.exists(self.keys.table(table_id)):
                return None
        return table_id

    async def commit(self, table_id: str, commit: Commit) -> CommitOutcome:
        options, index = self.options, self.index
        entry, score = encode_lobby(commit.lobby), lobby_score(commit.lobby)
        due = repr(commit.due_at) if commit.due_at else "0"
        record = record_bytes(commit.record)
        head: list[bytes | str | int] = [
            commit.expected_version,
            record,
            commit.idempotency_key,
            commit.response,
            entry,
            score,
            due,
            commit.status,
            # a held finished table is kept as long as an active one
            ms(options.abandoned_ttl_s if commit.hold else options.finished_ttl_s),
            ms(options.abandoned_ttl_s),
            options.retention,
            secrets.token_hex(8),
        ]
        tail: list[bytes | str | int] = ["", "", len(commit.events)]
        if self.publish and commit.events:
            # the record too: a replica following the table can then commit the next change
            # without loading it first (recent)
            message = pack_events(commit.events, (commit.expected_version + 1, record))
            tail[:2] = [live_channel(self.keys, table_id, self._db), message]
        for ev in commit.events:
            tail += [ev.seq, 1 + len(ev.private), "p", ev.public]
            for seat, data in ev.private.items():
                tail += [str(seat), data]
        k = self.keys
        keys = [k.table(table_id), k.stream(table_id), k.idempotency(table_id)]
        if self.inline_index:
            async with self.link.call():
                reply = await self._commit_indexed(
                    keys=[*keys, *k.shard_of(table_id).index],
                    args=[table_id, *head, "inline", 0, commit.bot_seats, *tail],
                )
            return await self._committed(table_id, reply, [])
        markers: list[str] = []
        marker_ms = 0
        try:
            if not index.unchanged(
                table_id,
                commit.expected_version,
                entry,
                score,
                due,
                commit.status,
                commit.bot_seats,
            ):
                member, marker_ms = await index.mark(table_id)
                markers.append(member)
            for _ in range(MARKER_TRIES + 1):
                async with self.link.call():
                    reply = await self._commit(
                        keys=keys,
                        args=[*head, marker_ms, ms(options.fence_s), commit.bot_seats, *tail],
                    )
                if int(reply[0]) not in (-2, -3):
                    break
                # The commit changes the index and has no marker, or a stale one: mark again.
                member, marker_ms = await index.mark(table_id)
                markers.append(member)
            else:
                raise StoreUnavailable(f"{self.link.where}: commit kept missing its marker's fence")
        except ResponseError:
            await index.settle([], markers)  # a refused commit wrote nothing
            raise
        return await self._committed(table_id, reply, markers)

    async def _committed(
        self, table_id: str, reply: list[bytes], markers: list[str]
    ) -> CommitOutcome:
        """A commit script's reply as an outcome, the index step after it where it changed
        the index (``markers``), and the replicas' acknowledgement."""
        index = self.index
        applied, version = int(reply[0]), int(reply[1])
        if applied == 1:
            state = reply[2:9]
            index.remember(table_id, version, [*state[:4], state[6]])
            if markers:
                await index.settle([(table_id, version, state)], markers)
            await self._replicated(table_id)
            return CommitOutcome(True, version)
        if markers:
            await index.settle([], markers)
        if applied == -1:
            index.forget(table_id)
        if len(reply) > 2:
            await self._replicated(table_id)  # the first one may have failed in its WAIT
            return CommitOutcome(False, version, reply[2])
        return CommitOutcome(False, max(version, 0))

    async def idempotent_response(self, table_id: str, idempotency_key: str) -> bytes | None:
        async with self.link.call():
            found = await self.link.client.hget(self.keys.idempotency(table_id), idempotency_key)
        if found is not None:
            await self._replicated(table_id)  # its first answer may have failed in its WAIT
        return cast(bytes | None, found)

    async def _replicated(self, table_id: str) -> None:
        """With ``wait_replicas``: return once that many replicas of the table's node have
        what it wrote (else StoreUnavailable); see :meth:`.connect.Link.replicated`."""
        if self.options.wait_replicas > 0:
            await self.link.replicated(
                self.keys.acknowledged(table_id), self.options.wait_replicas, self.options.wait_ms
            )

    async def events_after(self, table_id: str, seq: int) -> list[StoredEvent] | None:
        seq = max(seq, 0)
        async with self.link.call():
            reply = await self._events(
                keys=[self.keys.table(table_id), self.keys.stream(table_id)],
                args=[f"{seq + 1}-0"],
            )
        if reply is None:
            return None
        _version, last, entries = reply
        if int(last) <= seq:
            return []
        events = [
            event_from_entry(entry_id, dict(zip(fields[::2], fields[1::2], strict=True)))
            for entry_id, fields in entries
        ]
        if not events or events[0].seq != seq + 1:
            return None  # trimmed (retention) or lost: the caller sends a snapshot
        return events

    # -- presence ------------------------------------------------------------------------------

    async def set_presence(self, table_id: str, watcher: str, seat: int, expires_at: float) -> None:
        # A sorted set in the table's slot: member "<seat>:<watcher>", score its expiry. The
        # key itself expires a while after the last refresh, with the table's other keys gone.
        key = self.keys.presence(table_id)
        now = self._clock.now()
        command = self.link.command
        async with self.link.call():
            await asyncio.gather(  # sent at once (on a single Redis, pipelined)
                command("ZADD", key, repr(expires_at), f"{seat}:{watcher}"),
                command("ZREMRANGEBYSCORE", key, "-inf", repr(now)),
                command("EXPIRE", key, max(1, int(expires_at - now) + 60)),
            )

    async def clear_presence(self, table_id: str, watcher: str) -> None:
        key = self.keys.presence(table_id)
        command = self.link.command
        async with self.link.call():
            members = cast(list[bytes], await command("ZRANGE", key, 0, -1))
            gone = [m for m in members if m.split(b":", 1)[-1] == watcher.encode()]
            if gone:
                await command("ZREM", key, *gone)

    async def present_watchers(self, table_id: str, now: float) -> dict[str, int]:
        async with self.link.call():
            members = cast(
                list[bytes],
                await self.link.command(
                    "ZRANGEBYSCORE", self.keys.presence(table_id), f"({now!r}", "+inf"
                ),
            )
        return _watchers(members)

    # -- live events ---------------------------------------------------------------------------

    async def subscribe(self, table_id: str) -> Subscription:
        async with self.link.call():
            found = await self.link.command("HMGET", self.keys.table(table_id), "v", "q")
        version, last = cast(list[bytes | None], found)
        if version is None:
            raise KeyError(table_id)
        # From where the table is now: the caller loads the table after this returns, so
        # every later event reaches the subscription.
        return self.readers.subscribe(table_id, int(last or 0))

    # -- lobby and scheduler -------------------------------------------------------------------

    async def lobby(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int
    ) -> list[LobbyEntry]:
        return await self.index.lobby(preset, players, after, limit)

    async def lobby_tables(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int, now: float
    ) -> list[ListedTable]:
        entries = await self.index.lobby(preset, players, after, limit)
        if not entries:
            return []
        # One pipeline for the whole page: each table's hash and its presence (on a Cluster,
        # one batch per node holding some of them, sent at once).
        async with self.link.call():
            pipe = self.link.client.pipeline(transaction=False)
            for entry in entries:
                pipe.hmget(self.keys.table(entry.table_id), _TABLE_FIELDS)
                pipe.zrangebyscore(self.keys.presence(entry.table_id), f"({now!r}", "+inf")
            replies = await pipe.execute()
        out = []
        for i, entry in enumerate(entries):
            version, record, *state = cast(list[bytes | None], replies[2 * i])
            if version is None or record is None:
                out.append(ListedTable(entry, 0, None, {}))
                continue
            self.index.remember(entry.table_id, int(version), state)
            watchers = _watchers(cast(list[bytes], replies[2 * i + 1]))
            out.append(ListedTable(entry, int(version), record, watchers))
        return out

    async def claim_due(self, now: float, lease_s: float, limit: int) -> list[DueItem]:  # noqa: C901 - a claim over every shard, each failure handled where it happens
        await self.index.maybe_repair()
        shards = self.keys.shards
        if len(shards) == 1:
            return await self._claim_shard(shards[0], now, lease_s, limit)
        # The earliest ``limit`` due items over all shards: each shard's first ``limit`` read
        # at once, then each shard claims its part of the earliest (the claim script takes
        # a shard's earliest first). A shard that cannot be reached is skipped (its items
        # wait for it); only when none can be is the claim unavailable.
        client = self.link.client
        now_s = repr(now)
        async with self.link.call():
            peeks = await asyncio.gather(
                *(
                    client.zrangebyscore(sh.due, "-inf", now_s, start=0, num=limit, withscores=True)
                    for sh in shards
                ),
                return_exceptions=True,
            )
        due: list[tuple[float, int]] = []
        failed: BaseException | None = None
        for i, peek in enumerate(peeks):
            if isinstance(peek, BaseException):
                failed = failed or peek
                continue
            due += [(float(score), i) for _, score in cast(list[tuple[bytes, float]], peek)]
        if failed is not None:
            if not (isinstance(failed, UNREACHABLE) or unavailable(failed)) or all(
                isinstance(p, BaseException) for p in peeks
            ):
                with guard(self.link.where):
                    raise failed
            log.warning("index_shard_unavailable", error=str(failed))
        due.sort()
        counts = Counter(i for _, i in due[:limit])
        got = await asyncio.gather(
            *(self._claim_shard(shards[i], now, lease_s, k) for i, k in counts.items()),
            return_exceptions=True,
        )
        items: list[DueItem] = []
        spent = {i for i, p in enumerate(peeks) if isinstance(p, BaseException)}
        for (i, k), outcome in zip(counts.items(), got, strict=True):
            if isinstance(outcome, StoreUnavailable):
                log.warning("index_shard_unavailable", error=str(outcome))
                spent.add(i)
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                items += outcome
                if len(outcome) < k:
                    spent.add(i)  # another claim took some: nothing more due there
        # Short (concurrent claims took some first): the rest from the shards that may still
        # have some, one after the other.
        for i in range(len(shards)):
            if len(items) >= limit or not due:
                break
            if i in spent:
                continue
            with contextlib.suppress(StoreUnavailable):
                items += await self._claim_shard(shards[i], now, lease_s, limit - len(items))
        items.sort(key=lambda d: d.due_at)  # earliest first, as one shard gives them
        return items

    async def _claim_shard(
        self, shard: Shard, now: float, lease_s: float, limit: int
    ) -> list[DueItem]:
        record = f"{shard.claim}:{secrets.token_hex(8)}"
        async with self.link.call():
            reply = await self._claim(
                keys=[shard.due, record],
                args=[repr(now), repr(now + lease_s), limit, ms(lease_s)],
            )
        return [DueItem(reply[i].decode(), float(reply[i + 1])) for i in range(0, len(reply), 2)]

    async def renew_due(self, held: Mapping[str, float], until: float) -> list[str]:
        if not held:
            return []
        renewed: list[str] = []
        for shard, ids in self.keys.group(held).items():
            args: list[bytes | str | int] = [repr(until)]
            for table_id in ids:
                args += [table_id, repr(held[table_id])]
            async with self.link.call():
                done = await self._renew(keys=[shard.due], args=args)
            renewed += [t.decode() for t in done]
        return renewed

    async def next_due(self) -> float | None:
        client = self.link.client
        async with self.link.call():
            firsts = await asyncio.gather(
                *(client.zrange(sh.due, 0, 0, withscores=True) for sh in self.keys.shards)
            )
        due = [float(f[0][1]) for f in cast(list[list[tuple[bytes, float]]], firsts) if f]
        return min(due) if due else None

    async def repair(self) -> None:
        """One repair pass of the indexes now (:meth:`.index.Index.repair`)."""
        await self.index.repair()

    async def count_tables(self) -> dict[str, int]:
        async with self.link.call():
            counts = await asyncio.gather(
                *(self._count(keys=sh.status, args=[]) for sh in self.keys.shards)
            )
        return {s: sum(int(c[i]) for c in counts) for i, s in enumerate(STATUSES)}

    async def count_bot_seats(self) -> int:
        client = self.link.client
        async with self.link.call():
            totals = await asyncio.gather(*(client.get(sh.bots_total) for sh in self.keys.shards))
        return sum(int(t or 0) for t in totals)

    async def take_tokens(
        self, key: str, rate: float, burst: float, cost: float, now: float
    ) -> BucketOutcome:
        async with self.link.call():
            taken, wait = await self._take(
                keys=[self.keys.bucket(key)],
                args=[
                    repr(float(rate)),
                    repr(float(burst)),
                    repr(float(cost)),
                    repr(now),
                    BUCKET_TTL_MS,
                ],
            )
        return BucketOutcome(int(taken) == 1, float(wait))

    async def ping(self) -> None:
        # A keyed read of each index shard: on a Cluster it asks the nodes of the shards,
        # which the lobby, the scheduler and index changes need (another node down fails the
        # calls about its own tables, with UNAVAILABLE, and the others go on).
        client = self.link.client
        async with self.link.call():
            await asyncio.gather(*(client.exists(sh.born) for sh in self.keys.shards))

    async def close(self) -> None:
        await self.readers.close()
        await self.index.close()
        await self.link.close()


def _watchers(members: Sequence[bytes]) -> dict[str, int]:
    """Presence members ``<seat>:<watcher>`` as watcher -> seat."""
    out: dict[str, int] = {}
    for m in members:
        seat, _, watcher = m.decode().partition(":")
        out[watcher] = int(seat)
    return out
