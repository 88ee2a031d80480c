"""One replica's table service: the parts of :mod:`service.tables` wired together.

- :attr:`TableService.commits` (:mod:`.commit`): reads tables and commits their changes
  (:mod:`.changes`), the one mutation path;
- :attr:`TableService.streams` (:mod:`.streams`): WatchTable streams and presence;
- :attr:`TableService.scheduler` (:mod:`.scheduler`): bots, timeouts, away forfeits, expiries;
- :attr:`TableService.limits` and :attr:`TableService.callers`: the per-caller limits;
- :attr:`TableService.history` (:mod:`service.durable`): finished matches' records.

The servicer (:mod:`service.servicer`) turns requests into calls of these parts and their
results into responses. Stateless but for open streams and the scheduler's work.
"""

from __future__ import annotations

import engine
from engine.record import MatchRecord

from ..bots import BotPool
from ..callers import CallerResolver
from ..clock import SYSTEM_CLOCK, Clock
from ..config import Settings
from ..durable import History, open_history
from ..errors import NotFound
from ..limits import Limits
from ..metrics import Metrics
from ..players import PlayerStore, open_players
from ..store.base import Store
from . import records
from .access import check_table_id
from .commit import Committer, Context
from .model import TableRecord
from .scheduler import Alarm, Scheduler
from .streams import Streams


class TableService:
    """All tables, through one store."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        *,
        clock: Clock = SYSTEM_CLOCK,
        history: History | None = None,
        players: PlayerStore | None = None,
    ) -> None:
        """``history``: where finished matches' records go (default: ``settings.history``);
        ``players``: the player store (default: ``settings.players``, else the history's
        database). Neither is started yet: :meth:`start_history`."""
        self.ctx = Context(
            store,
            settings,
            metrics,
            clock,
            history if history is not None else open_history(settings.history),
            players if players is not None else open_players(settings.players or settings.history),
        )
        alarm = Alarm()
        self.commits = Committer(self.ctx, due=alarm.due)
        self.limits = Limits(store, settings, metrics, self._now)
        self.callers = CallerResolver(settings.trusted_proxy_header, settings.trusted_proxies)
        self.streams = Streams(self.ctx, self.commits, self.limits)
        self.scheduler = Scheduler(
            self.ctx,
            self.commits,
            self.streams,
            BotPool(settings.bot_workers, settings.bot_budget_scale),
            alarm,
        )

    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    @property
    def metrics(self) -> Metrics:
        return self.ctx.metrics

    @property
    def clock(self) -> Clock:
        """The clock every part reads (settable: a test may drive a running server's)."""
        return self.ctx.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self.ctx.clock = clock

    def now(self) -> float:
        """The time on the clock of the moment (read at each call: the clock may be swapped)."""
        return self.ctx.clock()

    _now = now

    @property
    def bots(self) -> BotPool:
        return self.scheduler.bots

    @property
    def closing(self) -> bool:
        """True once :meth:`begin_shutdown` was called."""
        return self.streams.closing

    @property
    def history(self) -> History:
        return self.ctx.history

    @property
    def players(self) -> PlayerStore:
        return self.ctx.players

    async def start_history(self) -> None:
        """Connect to the history and the player store and apply their migrations (one
        after the other: they may share a database)."""
        await self.ctx.history.start()
        await self.ctx.players.start()

    async def prune_history(self) -> int:
        """Delete the records older than the retention settings; how many went."""
        now_ms = round(self.ctx.clock() * 1000)
        gone = 0
        for ranked, days in (
            (False, self.settings.history_casual_days),
            (True, self.settings.history_ranked_days),
        ):
            if days > 0:
                gone += await self.ctx.history.prune(
                    ranked=ranked, finished_before_ms=now_ms - round(days * 86_400_000)
                )
        return gone

    async def close_history(self) -> None:
        await self.ctx.players.close()
        await self.ctx.history.close()

    async def match_record(self, table_id: str) -> MatchRecord:
        """The record of the table's finished match (see :func:`.records.match_record`)."""
        check_table_id(table_id)
        try:
            rec: TableRecord | None = await self.load(table_id, presence=False)
        except NotFound:
            rec = None
        return await records.match_record(self.ctx.history, table_id, rec)

    async def load(self, table_id: str, *, presence: bool = True) -> TableRecord:
        """The table's record (see :meth:`Committer.load`)."""
        return await self.commits.load(table_id, presence=presence)

    async def run_scheduler(self) -> None:
        """The scheduler's loop (see :meth:`Scheduler.run`)."""
        await self.scheduler.run()

    async def run_due(self, table_id: str) -> None:
        """Whatever is due at one table (see :meth:`Scheduler.run_due`)."""
        await self.scheduler.run_due(table_id)

    async def play_bot_move(self, table_id: str, seat: int, seen: engine.View, action: int) -> bool:
        """A bot's move, exactly once (see :meth:`Scheduler.play_bot_move`)."""
        return await self.scheduler.play_bot_move(table_id, seat, seen, action)

    def begin_shutdown(self) -> None:
        """Refuse new streams and end the open ones with UNAVAILABLE."""
        self.streams.begin_shutdown()

    def close_bots(self) -> None:
        """Cancel the bots' moves in flight and stop the worker processes."""
        self.scheduler.close()
