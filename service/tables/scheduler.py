"""The scheduler: what falls due at a table without a request (bots, timeouts, away forfeits,
expiries, a ranked match's rating), done exactly once across replicas.

Every commit stores the table's next due time (:meth:`Committer.due_at`). The loop
(:meth:`Scheduler.run`) claims due tables with a lease (:meth:`Store.claim_due`), works on each
(:meth:`Scheduler.run_due`), renews the leases of the work still running and sleeps until the
next due time (or a commit wakes it). The work itself commits through the mutation path with
the version it saw, so a table changed meanwhile (by another replica or a player) is left as
it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import secrets
from typing import Any

import structlog

import engine

from ..bots import BotPool
from ..errors import Aborted, ServiceError
from ..store.base import StoreUnavailable
from . import changes, ratings
from .commit import Committer, Context
from .model import BOT, FINISHED, PLAYING, WAITING, TableRecord
from .streams import Streams

log = structlog.get_logger("tute.scheduler")

CLAIM_BATCH = 64
"""Due tables claimed at once."""
GAUGE_EVERY_S = 2.0
"""How often the tables-by-status gauge is read from the store."""


class Alarm:
    """When this replica's scheduler looks at the due tables next, and how a commit of this
    replica makes it look sooner: a table that falls due before then wakes it (one that falls
    due later is found by the look before it, which asks the store when the next one is).
    During a look nothing wakes it: the soonest due time committed meanwhile bounds its next
    sleep instead (a look per commit would keep it looking under load)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.at = math.inf
        """The clock time of the next look (minus infinity during one)."""
        self.soonest = math.inf
        """The soonest due time committed since the current look began."""

    def looking(self) -> None:
        """A look begins: it serves every wake before it."""
        self.event.clear()
        self.at, self.soonest = -math.inf, math.inf

    def sleep_until(self, at: float) -> None:
        """The look ended; the next is at ``at`` unless a commit makes a table due sooner."""
        self.at = at

    def due(self, at: float) -> None:
        """A commit made a table due at ``at``."""
        self.soonest = min(self.soonest, at)
        if at < self.at:
            self.event.set()


class Scheduler:
    """This replica's share of the due work, and the bots' thinking."""

    def __init__(
        self,
        ctx: Context,
        commits: Committer,
        streams: Streams,
        bots: BotPool,
        alarm: Alarm,
    ) -> None:
        self.ctx = ctx
        self.commits = commits
        self.streams = streams
        self.bots = bots
        """Worker processes for the bots' moves (see :mod:`service.bots`)."""
        self._alarm = alarm
        self._rng = random.Random(secrets.randbits(64))
        self._thinking: dict[str, asyncio.Task[None]] = {}
        """Tables whose bot on turn is thinking on this replica."""
        self._leases: dict[str, float] = {}
        """Due items this replica claimed and works on: table id -> the lease end its claim
        (or last renewal) gave it; renewed while the work runs (:meth:`_keep_leases`)."""
        self._leases_renewed = 0.0
        self._store_ok = True
        """Whether the store answered the last pass (a lost store is logged once)."""

    async def run(self) -> None:
        """Claim due tables and act on them, until cancelled or shutting down."""
        last_gauge = 0.0
        ctx = self.ctx
        # Not only cancellation ends the loop: on Python 3.11 asyncio.wait_for (redis-py uses
        # it) can swallow a cancel that comes as the awaited call completes.
        alarm = self._alarm
        while not self.streams.closing:
            # cleared before the look, not after: a table that falls due during it bounds
            # the sleep after it (at once when it is due already)
            alarm.looking()
            try:
                await self._keep_leases()
                now = ctx.clock()
                items = await ctx.store.claim_due(now, ctx.settings.claim_lease_s, CLAIM_BATCH)
                await self._work(items, now)
                await self.streams.refresh_presence(now)
                if now - last_gauge > GAUGE_EVERY_S:
                    last_gauge = now
                    for state, n in (await ctx.store.count_tables()).items():
                        ctx.metrics.tables.labels(state).set(n)
                self._store_ok = True
                if items:
                    continue
                next_due = await ctx.store.next_due()
            except StoreUnavailable as exc:
                if self._store_ok:
                    log.warning("store_unavailable", error=str(exc))
                self._store_ok = False
                next_due = None
                # the rest of a batch is not worked on: its claims lapse
                self._leases = {t: at for t, at in self._leases.items() if t in self._thinking}
            wait = ctx.settings.scheduler_poll_s
            now = ctx.clock()
            for at in (next_due, alarm.soonest):
                if at is not None:
                    wait = min(wait, max(0.0, at - now))
            if self._leases:  # renewed in time, whatever the poll
                renew_at = self._leases_renewed + ctx.settings.claim_lease_s / 3
                wait = min(wait, max(0.0, renew_at - now))
            alarm.sleep_until(now + wait)
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancel that
            # comes as the wait ends, and the loop would go on after its task was cancelled
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await alarm.event.wait()

    async def _work(self, items: list[Any], now: float) -> None:
        """Work on the claimed due items, one by one."""
        for item in items:
            self._leases[item.table_id] = now + self.ctx.settings.claim_lease_s
        for item in items:
            try:
                await self._keep_leases()
                await self.run_due(item.table_id)
            except ServiceError as exc:
                log.debug("due_item_skipped", table_id=item.table_id, error=exc.message)
            finally:
                if item.table_id not in self._thinking:
                    self._leases.pop(item.table_id, None)
            await asyncio.sleep(0)  # calls waiting go first (bots never starve them)

    async def _keep_leases(self) -> None:
        """Renew the claims of the due items this replica works on (a batch being run, a
        bot thinking) once a third of the lease passed since the last renewal: a claim lasts
        ``claim_lease_s`` past the last renewal, so a crashed replica's items fall due again
        that soon, while a live replica keeps its items however long the work takes. A claim
        that could not be renewed (a commit moved the due time, or the lease lapsed and
        another replica claimed it) is let go; the commit's compare-and-set still makes the
        work happen once."""
        lease = self.ctx.settings.claim_lease_s
        now = self.ctx.clock()
        if not self._leases or now < self._leases_renewed + lease / 3:
            return
        self._leases_renewed = now
        held = dict(self._leases)
        renewed = set(await self.ctx.store.renew_due(held, now + lease))
        for table_id, at in held.items():
            if self._leases.get(table_id) != at:
                continue  # claimed again or let go meanwhile
            if table_id in renewed:
                self._leases[table_id] = now + lease
            else:
                del self._leases[table_id]

    async def run_due(self, table_id: str) -> None:
        """Play a bot's turn or a timed-out turn at one table, or forfeit a player away beyond
        the grace period, or expire a waiting table, or write a finished ranked match's
        rating, exactly once (CAS; the rating: by table id)."""
        grace = self.ctx.settings.disconnect_forfeit_s
        rec = await self.commits.load(table_id, presence=grace > 0)
        state = rec.state
        if rec.status == WAITING:
            await self._expire_waiting(rec)
            return
        if rec.status == FINISHED:
            await ratings.settle(self.ctx, self.commits, rec)
            return
        if rec.status != PLAYING or state is None:
            return
        now = self.ctx.clock()
        if grace > 0 and await self._forfeit_away(rec, now, grace):
            return
        seat = state.turn
        if rec.seats[seat].occupant == BOT:
            if table_id not in self._thinking:
                level = rec.seats[seat].bot_level or "random"
                task = asyncio.create_task(self._bot_turn(rec, seat, level))
                self._thinking[table_id] = task
                task.add_done_callback(lambda done: self._done_thinking(table_id, done))
            return
        if not (rec.deadline and now >= rec.deadline):
            return
        turn_id = state.turn_id
        try:
            done = await self.commits.mutate(
                table_id,
                lambda r: changes.time_out(r, seat, turn_id, now=now, mark_away=grace > 0),
                expect=rec.version,
                loaded=rec,
            )
        except Aborted:
            return  # another replica (or the player) acted first: nothing to do
        if not done.committed:
            return  # the turn moved on (another replica, or the player)
        metrics = self.ctx.metrics
        metrics.actions.labels("timeout", "applied").inc()
        metrics.timeouts.inc()
        log.info("turn_timed_out", table_id=table_id, seat=seat)

    async def _bot_turn(self, rec: TableRecord, seat: int, level: str) -> None:
        """Think in the bot pool (off the event loop), then play the move, unless the table
        moved on meanwhile. Without an answer in time the bot plays its cheapest card."""
        state = rec.state
        assert state is not None
        seen = engine.view(state, seat)
        try:
            action, took = await self.bots.choose(level, rec.rules, seen, self._rng.getrandbits(64))
        except Exception:
            log.exception("bot_think_failed", table_id=rec.table_id, level=level)
            action, took = None, 0.0
        self.ctx.metrics.bot_think.labels(level).observe(took)
        if action is None:
            action = engine.cheapest_card(state, seat)
        # Thinking is over: the table's next bot turn, due as soon as this move commits, may
        # start while this task is still finishing.
        self._done_thinking(rec.table_id, asyncio.current_task())
        try:
            await self.play_bot_move(rec.table_id, seat, seen, action)
        except ServiceError as exc:
            log.debug("bot_move_skipped", table_id=rec.table_id, error=exc.message)

    async def play_bot_move(self, table_id: str, seat: int, seen: engine.View, action: int) -> bool:
        """Apply a bot's ``action`` chosen on view ``seen``, exactly once; a move for a table
        that has changed since (the seat's view is not ``seen`` any more) is dropped. True
        when applied."""
        now = self.ctx.clock()
        metrics = self.ctx.metrics
        try:
            done = await self.commits.mutate(
                table_id, lambda r: changes.bot_move(r, seat, seen, action, now=now)
            )
        except Aborted:
            done = None
        if done is None or not done.result:
            metrics.actions.labels("bot", "stale").inc()
            return False  # another replica (or a player) changed the table first
        metrics.actions.labels("bot", "applied").inc()
        metrics.bot_moves.inc()
        return True

    def _done_thinking(self, table_id: str, task: asyncio.Task[Any] | None) -> None:
        if self._thinking.get(table_id) is task:
            del self._thinking[table_id]
            self._leases.pop(table_id, None)

    def close(self) -> None:
        """Stop thinking: cancel the bots' moves in flight and stop the worker processes."""
        for task in list(self._thinking.values()):
            task.cancel()
        self.bots.close()

    async def _expire_waiting(self, rec: TableRecord) -> None:
        """Delete a waiting table whose expiry has come (no human sat down in time), unless
        it changed since it was loaded (then its new due time, if any, brings it back)."""
        if not rec.expires_at or self.ctx.clock() < rec.expires_at:
            return
        if await self.ctx.store.delete(rec.table_id, rec.version):
            log.info("table_expired", table_id=rec.table_id, bots=rec.bot_seats())

    async def _forfeit_away(self, rec: TableRecord, now: float, grace: float) -> bool:
        """Forfeit the match for the seat away longest, once beyond the grace period and still
        without a stream (or clear its mark when it is back). True when something was done."""
        if not rec.away:
            return False
        seat, since = min(rec.away.items(), key=lambda item: item[1])
        if now < since + grace:
            return False
        if seat in rec.connected:
            await self.streams.mark_away(rec.table_id, seat, away=False)
            return True
        try:
            await self.commits.mutate(
                rec.table_id,
                lambda r: changes.forfeit_away(r, seat, now=now),
                expect=rec.version,
                loaded=rec,
            )
        except Aborted:
            return True  # another replica (or the player) changed it first
        self.ctx.metrics.actions.labels("forfeit", "applied").inc()
        log.info(
            "seat_forfeited_disconnected",
            table_id=rec.table_id,
            seat=seat,
            away_s=round(now - since, 3),
        )
        return True
