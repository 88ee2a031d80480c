"""Per-caller limits: token buckets in the store (so they hold across replicas) and a cap on
each caller's open streams on this replica.

Each limit is a token bucket per caller (see :mod:`service.callers`): it holds up to a burst
of calls and refills at a rate (``Settings.create_rate_per_s``, ``create_burst``, ...); a call
finding it empty is refused with RESOURCE_EXHAUSTED, reason RATE_LIMITED, ErrorInfo metadata
``limit`` (which one) and a google.rpc.RetryInfo saying when a token is back. A refused call
changes nothing. A rate of 0 turns a limit off. The buckets run on the app's clock.

- ``create_table``: CreateTable, by caller address.
- ``add_bot``: AddBot, by caller address.
- ``invite``: JoinTable by invite code, by caller address; an attempt holds a token and gives
  it back when the code exists, so only unknown codes (guesses) use the bucket up.
- ``watch``: WatchTable stream opens, by seat token (its hash) when the stream opens a seat,
  else by address, so that spectators from a player's own address never use up the player's
  room; the same key counts the caller's open streams (``max_streams_per_caller``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from .auth import hash_token
from .callers import CALLER
from .config import Settings
from .errors import RateLimited, ResourceExhausted
from .metrics import Metrics
from .reasons import Reason
from .store.base import Store


class Limits:
    """The per-caller limits of one app (one replica)."""

    def __init__(
        self, store: Store, settings: Settings, metrics: Metrics, clock: Callable[[], float]
    ) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self.streams: Counter[str] = Counter()
        """Open WatchTable streams on this replica, by stream caller."""

    async def _take(self, limit: str, who: str, rate: float, burst: int, cost: float) -> None:
        if rate <= 0:
            return
        outcome = await self.store.take_tokens(
            f"{limit}:{who}", rate, max(1, burst), cost, self.clock()
        )
        if not outcome.allowed:
            self.metrics.rate_limited.labels(limit).inc()
            raise RateLimited(
                f"too many {_WHAT[limit]} from this caller; retry in {outcome.retry_after_s:.1f} s",
                limit=limit,
                retry_after_s=outcome.retry_after_s,
            )

    async def create_table(self) -> None:
        s = self.settings
        await self._take("create_table", CALLER.get(), s.create_rate_per_s, s.create_burst, 1)

    async def add_bot(self) -> None:
        s = self.settings
        await self._take("add_bot", CALLER.get(), s.bot_rate_per_s, s.bot_burst, 1)

    async def invite_attempt(self) -> None:
        """Before an invite code is looked up: hold a token of the caller's bucket."""
        s = self.settings
        await self._take("invite", CALLER.get(), s.invite_rate_per_s, s.invite_burst, 1)

    async def invite_found(self) -> None:
        """The code existed: the attempt's token goes back."""
        s = self.settings
        await self._take("invite", CALLER.get(), s.invite_rate_per_s, s.invite_burst, -1)

    @staticmethod
    def stream_caller(seat_token: str | None) -> str:
        """Who a stream counts for: its seat token (when it opens a seat), else the address."""
        if seat_token is not None:
            return "seat:" + hash_token(seat_token)
        return "addr:" + CALLER.get()

    async def open_stream(self, who: str) -> None:
        """May ``who`` open one more stream? (TOO_MANY_STREAMS past its cap here, RATE_LIMITED
        when its bucket is empty); the caller counts it in :attr:`streams` once it is open."""
        s = self.settings
        cap = s.max_streams_per_caller
        if cap > 0 and self.streams[who] >= cap:
            raise ResourceExhausted(
                f"too many open streams from this caller (at most {cap} per server)",
                reason=Reason.TOO_MANY_STREAMS,
            )
        await self._take("watch", who, s.watch_rate_per_s, s.watch_burst, 1)

    def stream_closed(self, who: str) -> None:
        self.streams[who] -= 1
        if self.streams[who] <= 0:
            del self.streams[who]


_WHAT = {
    "create_table": "new tables",
    "add_bot": "bots added",
    "invite": "unknown invite codes",
    "watch": "streams opened",
}
