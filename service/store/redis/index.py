"""The indexes across tables (lobby, due set, status sets, invites, bot seats) in their
shards (one by default: the global slot): the write-ahead markers, the index step after a
table's own step, the lobby read merged over the shards, and repair, scrub and rebuild
(docs/redis-store.md, "Atomicity", "Repair" and "Sharded indexes")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Sequence
from typing import cast

import structlog
from redis.exceptions import ResponseError

from ...clock import Clock
from ..base import LobbyCursor, LobbyEntry, StoreUnavailable
from .connect import Link, Script, guard
from .keys import Keys, Shard
from .options import RedisOptions, ms

log = structlog.get_logger("tute.store.redis")

STATE_FIELDS = ("l", "o", "d", "s", "i", "x", "b")
"""The index state a table's hash records, in the scripts' order: lobby entry, lobby score,
due time, status, invite code, expiry, bot seats."""
GONE: Sequence[str] = ("",) * len(STATE_FIELDS)
"""The index state of a table that is gone (applied at version 0: drop it everywhere)."""
RECONCILE_READS = 32
"""Table hashes repair reads at once."""
INDEX_BATCH = 200
"""Tables per index script of a repair pass."""
REBUILD_BATCH = 500
"""Tables per reconcile step of a rebuild."""

IndexItem = tuple[str, int, Sequence[bytes | str | None]]
"""(table id, version, index state): what the index step applies (version 0: gone)."""


def lobby_score(entry: LobbyEntry | None) -> str:
    return repr(entry.created_at) if entry is not None else "0"


def encode_lobby(entry: LobbyEntry | None) -> str:
    if entry is None:
        return ""
    return json.dumps([entry.preset, entry.players, entry.free_seats, entry.created_at])


def decode_lobby(table_id: str, data: bytes) -> LobbyEntry:
    preset, players, free, created = json.loads(data)
    return LobbyEntry(table_id, preset, int(players), int(free), float(created))


class Index:
    """The global slot's indexes as one replica keeps them."""

    def __init__(
        self, link: Link, keys: Keys, options: RedisOptions, clock: Clock, *, predict: bool = True
    ) -> None:
        self.link = link
        self.keys = keys
        self.options = options
        self.clock = clock
        client = link.client
        self._begin = Script(client, "begin", mux=link.mux)
        self._index = Script(client, "index", mux=link.mux)
        self._suspects = Script(client, "suspects", mux=link.mux)
        self.predict = predict
        """Do commits take the two steps (then :attr:`known` predicts their markers)?"""
        self.known: dict[str, tuple[int, tuple[bytes | None, ...]]] = {}
        """table id -> (version, (l, o, d, s, b)) last seen: predicts whether a commit
        changes the index (then it writes its marker first); the commit script has the last
        word. Kept only with :attr:`predict`."""
        self._last_repair = -float("inf")
        self._repairing = False
        self._repair_failing = False
        # replicas scrub different slices; each shard its own
        self._scrub_at = {sh.number: secrets.randbelow(1 << 30) for sh in keys.shards}
        self.rebuild_task: asyncio.Task[None] | None = None

    # -- what this replica last saw ------------------------------------------------------------

    def remember(self, table_id: str, version: int, state: Sequence[bytes | None]) -> None:
        """Note a table's index state (l, o, d, s, b) at ``version`` (with :attr:`predict`)."""
        if not self.predict:
            return
        if len(self.known) >= self.options.known_tables:
            self.known.clear()
        self.known[table_id] = (version, tuple(state[:5]))

    def forget(self, table_id: str) -> None:
        self.known.pop(table_id, None)

    def unchanged(
        self,
        table_id: str,
        version: int,
        lobby: str,
        score: str,
        due: str,
        status: str,
        bots: int,
    ) -> bool:
        """Does a commit at ``version`` leave the index state as this replica last saw it?"""
        known = self.known.get(table_id)
        if known is None or known[0] != version:
            return False
        old_lobby, old_score, old_due, old_status, old_bots = known[1]
        return (
            (old_lobby, old_score, old_due) == (lobby.encode(), score.encode(), due.encode())
            and (not status or old_status == status.encode())
            and old_bots == str(bots).encode()
        )

    # -- the index step ------------------------------------------------------------------------

    async def mark(self, table_id: str) -> tuple[str, int]:
        """Write a write-ahead marker for a change of ``table_id``'s index: (member, ms)."""
        member = f"{table_id}|{secrets.token_hex(8)}"
        async with self.link.call():
            ms = await self._begin(keys=[self.keys.shard_of(table_id).markers], args=[member])
        return member, int(ms)

    async def apply(self, items: Sequence[IndexItem], markers: Sequence[str]) -> None:
        """Apply tables' recorded index states (version 0: the table is gone), then remove
        ``markers``; one script on each shard concerned (at once)."""
        if not items and not markers:
            return
        shard_of = self.keys.shard_of
        work: dict[Shard, tuple[list[IndexItem], list[str]]] = {}
        for item in items:
            work.setdefault(shard_of(item[0]), ([], []))[0].append(item)
        for m in markers:
            work.setdefault(shard_of(m.rsplit("|", 1)[0]), ([], []))[1].append(m)
        if len(work) == 1:
            ((shard, (some, marks)),) = work.items()
            await self._apply_shard(shard, some, marks)
            return
        done = await asyncio.gather(
            *(self._apply_shard(sh, some, marks) for sh, (some, marks) in work.items()),
            return_exceptions=True,
        )
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _apply_shard(
        self, shard: Shard, items: Sequence[IndexItem], markers: Sequence[str]
    ) -> None:
        args: list[bytes | str | int] = [len(items)]
        for table_id, version, state in items:
            args += [table_id, version, *(b"" if v is None else v for v in state)]
        args += markers
        async with self.link.call():
            await self._index(keys=shard.index, args=args)

    async def settle(self, items: Sequence[IndexItem], markers: Sequence[str]) -> None:
        """The index step after a commit or a create. It cannot undo what the table step
        did, so a failure leaves the markers to :meth:`repair` instead of failing the call."""
        try:
            await self.apply(items, markers)
        except StoreUnavailable as exc:
            log.warning("index_update_deferred", tables=[i[0] for i in items], error=str(exc))

    # -- the lobby -----------------------------------------------------------------------------

    async def lobby(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int
    ) -> list[LobbyEntry]:
        """The lobby page :meth:`~service.store.base.Store.lobby` describes: the first
        ``limit`` entries of each shard after the cursor (read at once), merged newest first
        by (created at, table id), the order of one shard's sorted set, so the cursor pages
        through the shards as through one."""
        shards = self.keys.shards
        if limit <= 0:
            return []
        if len(shards) == 1:
            return await self._lobby_shard(shards[0], preset, players, after, limit)
        pages = await asyncio.gather(
            *(self._lobby_shard(sh, preset, players, after, limit) for sh in shards)
        )
        merged = sorted(
            (e for page in pages for e in page),
            key=lambda e: (e.created_at, e.table_id),
            reverse=True,
        )
        return merged[:limit]

    async def _lobby_shard(
        self, shard: Shard, preset: str, players: int, after: LobbyCursor | None, limit: int
    ) -> list[LobbyEntry]:
        out: list[LobbyEntry] = []
        chunk = max(2 * limit, 100)
        client = self.link.client
        # The lobby's sorted set orders by (created_at, table_id): scores, then members for
        # equal scores. Newest first from the cursor's score down, skipping equal scores whose
        # id is not below the cursor's (the cursor's own table may have left the lobby).
        top = "+inf" if after is None else repr(after[0])
        async with self.link.call():
            offset = 0
            while len(out) < limit:
                pairs = cast(
                    list[tuple[bytes, float]],
                    await client.zrevrangebyscore(
                        shard.lobby, top, "-inf", start=offset, num=chunk, withscores=True
                    ),
                )
                if not pairs:
                    break
                offset += len(pairs)
                ids = [m for m, score in pairs if after is None or (score, m.decode()) < after]
                if not ids:
                    continue
                raw = cast(list[bytes | None], await client.hmget(shard.lobby_entries, ids))
                for table_id, data in zip(ids, raw, strict=True):
                    if data is None:
                        continue
                    entry = decode_lobby(table_id.decode(), data)
                    if (preset and entry.preset != preset) or (
                        players and entry.players != players
                    ):
                        continue
                    out.append(entry)
                    if len(out) >= limit:
                        break
        return out

    # -- repair --------------------------------------------------------------------------------

    async def maybe_repair(self) -> None:
        """A :meth:`repair` pass when the last one is ``maintain_every_s`` old. Its first step
        runs on the global slot, like the claim that follows: its failure is the claim's. A
        failure further on (another node) is logged, and the claim goes ahead."""
        started = self.clock.monotonic()
        if self._repairing or started - self._last_repair < self.options.maintain_every_s:
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
        """(rebuild?, old markers, tables to reconcile), from every shard (at once). A shard
        that cannot be reached is left for a later pass; when none can, StoreUnavailable."""
        found = await asyncio.gather(
            *(self._shard_suspects(sh) for sh in self.keys.shards), return_exceptions=True
        )
        rebuild, markers, tables = False, [], set()
        failed: BaseException | None = None
        for outcome in found:
            if isinstance(outcome, BaseException):
                failed = failed or outcome
                continue
            rebuild = rebuild or outcome[0]
            markers += outcome[1]
            tables |= outcome[2]
        if failed is not None and (
            len(found) == 1
            or not isinstance(failed, StoreUnavailable)
            or all(isinstance(o, BaseException) for o in found)
        ):
            raise failed
        if failed is not None:
            log.warning("index_shard_unavailable", error=str(failed))
        return rebuild, markers, tables

    async def _shard_suspects(self, shard: Shard) -> tuple[bool, list[str], set[str]]:
        options = self.options
        async with self.link.call():
            reply = await self._suspects(
                keys=[shard.markers, *shard.status, shard.born, shard.rebuild],
                args=[
                    ms(options.repair_after_s),
                    options.repair_limit,
                    self._scrub_at[shard.number],
                    options.scrub_batch,
                    ms(options.rebuild_lease_s),
                    secrets.token_hex(8),
                ],
            )
        rebuild, old, lapsed, scrub, self._scrub_at[shard.number] = reply
        markers = [m.decode() for m in old]
        tables = {m.rsplit("|", 1)[0] for m in markers}
        tables.update(t.decode() for t in [*lapsed, *scrub])
        return bool(int(rebuild)), markers, tables

    async def _repair_found(self, rebuild: bool, markers: list[str], tables: set[str]) -> None:
        if rebuild and (self.rebuild_task is None or self.rebuild_task.done()):
            self.rebuild_task = asyncio.create_task(self._rebuild(), name="redis-rebuild")
        await self._reconcile(sorted(tables), markers)

    async def _reconcile(self, tables: Sequence[str], markers: Sequence[str]) -> None:
        """Apply the index state each table's hash records (gone: drop it), then remove the
        ``markers`` of the tables read. A table whose node cannot be reached is left (with
        its markers) for a later pass, and the others go ahead; then StoreUnavailable."""
        read: dict[str, list[bytes | None]] = {}
        failed: StoreUnavailable | None = None
        for start in range(0, len(tables), RECONCILE_READS):
            chunk = tables[start : start + RECONCILE_READS]
            rows = await asyncio.gather(
                *(self._read_state(t) for t in chunk), return_exceptions=True
            )
            for table_id, row in zip(chunk, rows, strict=True):
                if isinstance(row, StoreUnavailable):
                    failed = failed or row
                elif isinstance(row, BaseException):
                    raise row
                else:
                    read[table_id] = row
        items: list[IndexItem] = [
            (table_id, 0, GONE) if version is None else (table_id, int(version), state)
            for table_id, (version, *state) in read.items()
        ]
        done = [m for m in markers if m.rsplit("|", 1)[0] in read]
        for start in range(0, max(len(items), 1), INDEX_BATCH):
            last = start + INDEX_BATCH >= len(items)
            await self.apply(items[start : start + INDEX_BATCH], done if last else [])
        if failed is not None:
            raise failed

    async def _read_state(self, table_id: str) -> list[bytes | None]:
        async with self.link.call():
            found = await self.link.command("HMGET", self.keys.table(table_id), "v", *STATE_FIELDS)
        return cast(list[bytes | None], found)

    async def _rebuild(self) -> None:
        """Index every table hash of every node (the global slot lost its data, or this is
        the first start): the version order makes it safe beside live commits."""
        client = self.link.client
        try:
            batch: list[str] = []
            found = 0
            with guard(self.link.where):
                async for key in client.scan_iter(
                    match=self.keys.tables_pattern, count=1000, _type="HASH"
                ):
                    table_id = self.keys.table_of(
                        key.decode() if isinstance(key, bytes) else str(key)
                    )
                    if table_id is None:
                        continue
                    batch.append(table_id)
                    if len(batch) >= REBUILD_BATCH:
                        found += len(batch)
                        await self._reconcile(batch, [])
                        batch = []
            found += len(batch)
            await self._reconcile(batch, [])
            async with self.link.call():
                for shard in self.keys.shards:
                    await client.set(shard.born, "1")
                    await client.delete(shard.rebuild)
            if found:
                log.info("redis_indexes_rebuilt", tables=found)
        except (StoreUnavailable, ResponseError) as exc:
            log.warning("redis_index_rebuild_failed", error=str(exc))

    async def close(self) -> None:
        if self.rebuild_task is not None:
            self.rebuild_task.cancel()
            with contextlib.suppress(BaseException):
                await self.rebuild_task
