"""A store that times every call of another store (``tute_store_seconds{op}``)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .base import (
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
)
from .queue import TicketQueue

if TYPE_CHECKING:
    from ..metrics import Metrics

T = TypeVar("T")


class TimedStore(Store):
    """A store that records ``tute_store_seconds{op}`` around every call of another store."""

    def __init__(self, inner: Store, metrics: Metrics) -> None:
        self.inner = inner
        self._metrics = metrics
        self._errors = metrics.store_errors
        self._timers: dict[str, Any] = {}
        """``tute_store_seconds{op}``'s children, by op."""

    async def _timed(self, op: str, call: Awaitable[T]) -> T:
        t0 = time.perf_counter()
        try:
            return await call
        except StoreUnavailable:
            self._errors.inc()
            raise
        finally:
            timer = self._timers.get(op)
            if timer is None:
                metrics = self._metrics
                timer = self._timers[op] = metrics.child(metrics.store_seconds, op)
            timer.observe(time.perf_counter() - t0)

    async def create(
        self,
        table_id: str,
        record: bytes,
        invite_code: str,
        lobby: LobbyEntry | None,
        *,
        due_at: float = 0.0,
    ) -> None:
        await self._timed(
            "create", self.inner.create(table_id, record, invite_code, lobby, due_at=due_at)
        )

    async def delete(self, table_id: str, expected_version: int) -> bool:
        return await self._timed("delete", self.inner.delete(table_id, expected_version))

    async def load(self, table_id: str) -> tuple[int, RecordData] | None:
        return await self._timed("load", self.inner.load(table_id))

    def recent(self, table_id: str) -> tuple[int, RecordData] | None:
        return self.inner.recent(table_id)

    async def find_invite(self, invite_code: str) -> str | None:
        return await self._timed("find_invite", self.inner.find_invite(invite_code))

    async def commit(self, table_id: str, commit: Commit) -> CommitOutcome:
        return await self._timed("commit", self.inner.commit(table_id, commit))

    async def idempotent_response(self, table_id: str, idempotency_key: str) -> bytes | None:
        return await self._timed(
            "idempotent_response", self.inner.idempotent_response(table_id, idempotency_key)
        )

    async def events_after(self, table_id: str, seq: int) -> list[StoredEvent] | None:
        return await self._timed("events_after", self.inner.events_after(table_id, seq))

    async def subscribe(self, table_id: str) -> Subscription:
        return await self._timed("subscribe", self.inner.subscribe(table_id))

    async def lobby(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int
    ) -> list[LobbyEntry]:
        return await self._timed("lobby", self.inner.lobby(preset, players, after, limit))

    async def lobby_tables(
        self, preset: str, players: int, after: LobbyCursor | None, limit: int, now: float
    ) -> list[ListedTable]:
        return await self._timed(
            "lobby_tables", self.inner.lobby_tables(preset, players, after, limit, now)
        )

    async def claim_due(self, now: float, lease_s: float, limit: int) -> list[DueItem]:
        return await self._timed("claim_due", self.inner.claim_due(now, lease_s, limit))

    async def renew_due(self, held: Mapping[str, float], until: float) -> list[str]:
        return await self._timed("renew_due", self.inner.renew_due(held, until))

    async def set_presence(self, table_id: str, watcher: str, seat: int, expires_at: float) -> None:
        await self._timed(
            "set_presence", self.inner.set_presence(table_id, watcher, seat, expires_at)
        )

    async def clear_presence(self, table_id: str, watcher: str) -> None:
        await self._timed("clear_presence", self.inner.clear_presence(table_id, watcher))

    async def present_watchers(self, table_id: str, now: float) -> dict[str, int]:
        return await self._timed("present_watchers", self.inner.present_watchers(table_id, now))

    async def next_due(self) -> float | None:
        return await self.inner.next_due()

    async def count_tables(self) -> dict[str, int]:
        return await self.inner.count_tables()

    async def count_bot_seats(self) -> int:
        return await self._timed("count_bot_seats", self.inner.count_bot_seats())

    async def ping(self) -> None:
        await self.inner.ping()

    async def take_tokens(
        self, key: str, rate: float, burst: float, cost: float, now: float
    ) -> BucketOutcome:
        return await self._timed("take_tokens", self.inner.take_tokens(key, rate, burst, cost, now))

    def tickets(self) -> TicketQueue:
        return self.inner.tickets()

    async def close(self) -> None:
        await self.inner.close()
