"""One replica's matchmaker: FindMatch and WatchTicket on domain values, the matcher's loop,
and the ranked tables it makes.

Every replica runs :meth:`Matchmaker.run`: a pass reads each mode's waiting tickets from the
store's queue (:meth:`~service.store.base.Store.tickets`), plans tables (:mod:`.matcher`) and
claims each plan's tickets in one atomic step; only the replica whose claim succeeds seats
the table, so a player is never seated twice and a cancelled ticket is never matched. A claim
stores the table's whole plan (its id and every seat) in the tickets before any table exists:
whoever reads a matched ticket first (the claiming replica, or a watcher on any replica)
makes the table from the plan, idempotently, so a replica that dies between the claim and
the table leaves nothing half done.

A player is in at most one ranked table, at every step. Until the seating, the queue holds it:
a claimed ticket stays its player's ticket while it is kept (:data:`KEEP_MATCHED_S`), so
FindMatch in that window returns the matched ticket (its WatchTicket ends at once with the
same table and seat, seating the plan itself if nobody has) instead of queueing a second
one, and in another mode refuses the player as seated at that table. From the seating on,
the player store holds it: seating a plan records the table as each of its players' current
ranked table before the seats are taken (every replica seating the plan writes the same),
and FindMatch refuses a player who holds a seat there until the match is over (the record is
cleared when the table's result is recorded; a finished or vanished table holds nobody).
Once the match is over the player queues again at once: FindMatch replaces its matched
ticket, still kept, with a new waiting one in one step of the queue, so concurrent calls
still leave one waiting ticket.

Times are the injected clock's (:mod:`service.clock`); the loop and the ticket streams look
again every ``matchmaking_poll_s`` of the event loop's time (and at once after a pass of this
replica), as the scheduler does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
import re
import secrets
from collections.abc import AsyncGenerator, Sequence

import structlog

from ..errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from ..identity import Identity
from ..reasons import Reason
from ..store.base import StoreUnavailable
from ..store.queue import MATCHED, Ticket, TicketQueue
from ..tables import changes
from ..tables.access import seat_of_player
from ..tables.model import BOT, EMPTY, FINISHED, HUMAN, WAITING, TableRecord
from ..tables.service import TableService
from . import matcher
from .entrants import MODES, Entrant, Mode, PlayerDirectory, StoreDirectory

log = structlog.get_logger("tute.matchmaking")

TICKET_ID_RE = re.compile(r"^[0-9a-f]{16}$")
MAX_TICKET_ID = 64
KEEP_MATCHED_S = 600.0
"""How long a matched ticket stays readable for its watchers, and its player's ticket (FindMatch
returns it). Shorter than the time a finished table is kept (``finished_ttl_s``, 3600 s by
default), so a plan's table not found while its ticket is kept is one not made yet (with a
``finished_ttl_s`` below it, a finished table dropped within the keep would be made again
by the ticket's watcher)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Waiting:
    """A waiting ticket's progress."""

    window: float
    queued: int
    waited_s: float
    bots_in_s: float


@dataclasses.dataclass(frozen=True, slots=True)
class Matched:
    """Where a matched ticket's player sits."""

    table_id: str
    seat: int
    bot_seats: int


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """A table the matcher made: its id, mode and every seat's entrant."""

    table_id: str
    mode: str
    seats: tuple[Entrant, ...]

    def encode(self) -> bytes:
        return json.dumps(
            {"t": self.table_id, "m": self.mode, "s": [e.encode().decode() for e in self.seats]},
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Plan:
        d = json.loads(raw)
        return cls(d["t"], d["m"], tuple(Entrant.decode(s.encode()) for s in d["s"]))

    def seat_of(self, player_id: str) -> int:
        for i, e in enumerate(self.seats):
            if e.player_id == player_id and not e.bot_level:
                return i
        raise LookupError(player_id)

    @property
    def bot_seats(self) -> int:
        return sum(1 for e in self.seats if e.bot_level)


def check_cooldown(until: float, now: float) -> None:
    """FAILED_PRECONDITION RANKED_COOLDOWN while a ranked cooldown lasting ``until`` lasts at
    ``now`` (metadata ``cooldown_s``: the whole seconds left; RetryInfo)."""
    if until <= now:
        return
    left = math.ceil(until - now)
    error = FailedPrecondition(
        f"this player left a ranked match: it may queue for ranked play again in {left} s",
        reason=Reason.RANKED_COOLDOWN,
        metadata={"cooldown_s": str(left)},
    )
    error.retry_after_s = until - now
    raise error


def _seated(table_id: str) -> FailedPrecondition:
    """FAILED_PRECONDITION ALREADY_SEATED: the player holds (or is being given) a seat at the
    ranked table ``table_id``, whose match is not over (metadata ``table_id``)."""
    return FailedPrecondition(
        f"this player is seated at ranked table {table_id}, whose match is not over: "
        "play it to its end (or leave it) before queueing again",
        reason=Reason.ALREADY_SEATED,
        metadata={"table_id": table_id},
    )


def candidates(waiting: Sequence[Ticket]) -> list[matcher.Candidate]:
    """The matcher's view of the waiting tickets of one mode (:meth:`TicketQueue.waiting`)."""
    return [matcher.Candidate(t.ticket_id, Entrant.decode(t.entry), t.enqueued_at) for t in waiting]


def check_mode(mode: str) -> Mode:
    """The ranked mode named (INVALID_ARGUMENT naming ``mode`` otherwise)."""
    found = MODES.get(mode)
    if found is None:
        raise InvalidArgument(
            "mode must be one of " + ", ".join(f'"{m}"' for m in MODES), field="mode"
        )
    return found


class Matchmaker:
    """The queue, the matcher and the ranked tables of one replica."""

    def __init__(self, tables: TableService, directory: PlayerDirectory | None = None) -> None:
        """``directory``: who the callers are (default: the players of ``tables.players``,
        without JWTs)."""
        self.tables = tables
        self.directory: PlayerDirectory = directory or StoreDirectory(
            Identity(tables.players, None, tables.now)
        )
        self._changed = asyncio.Event()
        """Set after each pass of this replica: its ticket streams look again at once."""
        self.claims = 0
        """Claims this replica won (for tests and the benchmark)."""

    @property
    def queue(self) -> TicketQueue:
        return self.tables.store.tickets()

    def _now(self) -> float:
        return self.tables.clock()

    # -- FindMatch -------------------------------------------------------------------------

    async def find_match(self, token: str | None, mode_name: str) -> tuple[Ticket, Waiting]:
        """Queue the caller in ``mode_name``; its ticket and its progress. A player has one
        ticket at a time: a ticket waiting in the same mode is returned as it is, and so is
        one matched in that mode whose table is not seated yet (its WatchTicket ends at once
        with the table and seat); a ticket matched whose match is over (its table finished,
        or playing without the player) is replaced by a new one at once. Refused with
        FAILED_PRECONDITION: a player in its ranked cooldown (it left a ranked match),
        RANKED_COOLDOWN; a player seated at a ranked table whose match is not over (its
        current ranked table in the player store, or its matched ticket's table), or whose
        ticket was matched in another mode (that table is seated first, as its WatchTicket
        would), ALREADY_SEATED with the table's id in metadata ``table_id``; a player whose
        ticket waits in another mode, ALREADY_QUEUED."""
        mode = check_mode(mode_name)
        entrant = await self.directory.entrant(token, mode.name)
        now = self._now()
        await self._check_free(entrant.player_id, now)
        fresh = Ticket(
            ticket_id=secrets.token_hex(8),
            mode=mode.name,
            player_id=entrant.player_id,
            rating=entrant.rating,
            enqueued_at=now,
            alive_until=now + self.tables.settings.ticket_ttl_s,
            entry=entrant.encode(),
        )
        ticket = await self.queue.enqueue(fresh, now)
        while ticket.state == MATCHED and await self._match_over(ticket, entrant.player_id, mode):
            ticket = await self.queue.enqueue(fresh, now, replace_matched=ticket.ticket_id)
        if ticket.mode != mode.name:  # waiting: a matched one of another mode was refused
            raise FailedPrecondition(
                f"this player's ticket waits in mode {ticket.mode}: cancel it first (close "
                "its WatchTicket stream)",
                reason=Reason.ALREADY_QUEUED,
            )
        if ticket.ticket_id == fresh.ticket_id:
            log.info("ticket_queued", mode=mode.name, ticket_id=ticket.ticket_id)
        return ticket, await self._progress(ticket, now)

    async def _check_free(self, player_id: str, now: float) -> None:
        """Nothing keeps the player out of the ranked queue: its ranked cooldown and its
        current ranked table (one read of the player store, and one of the table store when
        a table is recorded); UNAVAILABLE STORE_UNAVAILABLE when the player store cannot
        tell."""
        try:
            hold = await self.tables.players.ranked_hold(player_id)
        except Exception as exc:  # the player store's own errors
            log.warning("players_unavailable", error=type(exc).__name__)
            raise Unavailable(
                "the player store cannot be reached; retry later",
                reason=Reason.STORE_UNAVAILABLE,
            ) from None
        check_cooldown(hold.cooldown_until, now)
        if hold.table_id:
            await self._check_not_seated(player_id, hold.table_id)

    async def _check_not_seated(self, player_id: str, table_id: str) -> None:
        """FAILED_PRECONDITION ALREADY_SEATED while the player holds a seat at the ranked
        table ``table_id`` and its match is not over. A table finished or gone, or whose seats
        are not taken yet (its seating did not finish), holds nobody."""
        try:
            rec = await self.tables.load(table_id, presence=False)
        except NotFound:
            return
        if rec.status == FINISHED or seat_of_player(rec, player_id) is None:
            return
        raise _seated(table_id)

    async def _match_over(self, ticket: Ticket, player_id: str, mode: Mode) -> bool:
        """Whether the match of the player's matched ``ticket`` is over: its table finished,
        or started without the player (it left); then FindMatch replaces the ticket. Not
        over: the table is not made, or its seats are not taken yet (False in the ticket's
        mode: FindMatch returns the ticket); FAILED_PRECONDITION ALREADY_SEATED (metadata
        ``table_id``) when the player sits there (a seating whose record the player store
        missed), or when ``mode`` is another, after seating the plan (idempotently, as the
        ticket's watcher does: the table named exists even if the claiming replica died)."""
        plan = Plan.decode(ticket.plan)
        try:
            rec: TableRecord | None = await self.tables.load(plan.table_id, presence=False)
        except NotFound:
            rec = None  # not made yet (a finished table outlives the ticket's keep)
        if rec is not None and rec.status != WAITING:
            if rec.status == FINISHED or seat_of_player(rec, player_id) is None:
                return True
            raise _seated(plan.table_id)
        if ticket.mode != mode.name:
            await self.seat(plan)
            raise _seated(plan.table_id)
        return False

    async def _own_ticket(self, ticket_id: str, token: str | None) -> Entrant:
        """The entrant of the caller's live ticket (INVALID_ARGUMENT, NOT_FOUND
        TICKET_NOT_FOUND, PERMISSION_DENIED NOT_YOUR_TICKET otherwise)."""
        if not ticket_id or len(ticket_id) > MAX_TICKET_ID:
            raise InvalidArgument(
                f"ticket_id is required (at most {MAX_TICKET_ID} characters)", field="ticket_id"
            )
        ticket = None
        if TICKET_ID_RE.match(ticket_id):
            ticket = await self.queue.get(ticket_id, self._now())
        if ticket is None:
            raise NotFound("no such ticket (cancelled or expired?)", reason=Reason.TICKET_NOT_FOUND)
        entrant = Entrant.decode(ticket.entry)
        caller = await self.directory.entrant(token, ticket.mode)
        if caller.player_id != entrant.player_id:
            raise PermissionDenied("this ticket is another player's", reason=Reason.NOT_YOUR_TICKET)
        return entrant

    async def _progress(self, ticket: Ticket, now: float) -> Waiting:
        waited = max(0.0, now - ticket.enqueued_at)
        queued = await self.queue.count(ticket.mode)
        deadline = self.tables.settings.matchmaking_deadline_s
        return Waiting(matcher.window(waited), queued, waited, max(0.0, deadline - waited))

    # -- WatchTicket -----------------------------------------------------------------------

    async def watch(
        self, ticket_id: str, token: str | None
    ) -> AsyncGenerator[Waiting | Matched, None]:
        """A ticket's progress until it is matched (the last item). While the iteration
        runs the ticket stays alive; when it ends before the match (closed, cancelled,
        failed) the ticket is cancelled."""
        entrant = await self._own_ticket(ticket_id, token)
        gone = NotFound("no such ticket (cancelled or expired?)", reason=Reason.TICKET_NOT_FOUND)
        settings = self.tables.settings
        last: Waiting | None = None
        matched = False
        try:
            while True:
                if self.tables.closing:
                    raise Unavailable(
                        "the server is shutting down: FindMatch again on another server",
                        reason=Reason.SHUTTING_DOWN,
                    )
                now = self._now()
                ticket = await self.queue.get(ticket_id, now)
                if ticket is None:
                    raise gone
                if ticket.state == MATCHED:
                    plan = Plan.decode(ticket.plan)
                    await self.seat(plan)
                    matched = True
                    yield Matched(plan.table_id, plan.seat_of(entrant.player_id), plan.bot_seats)
                    return
                if not await self.queue.touch(ticket_id, now + settings.ticket_ttl_s, now):
                    continue  # matched or gone since: the next read says which
                progress = await self._progress(ticket, now)
                if last is None or (progress.window, progress.queued) != (
                    last.window,
                    last.queued,
                ):
                    last = progress
                    yield progress
                self._changed.clear()
                # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow the cancel
                # of a closed stream that comes as the wait ends, and the ticket would live on
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(settings.matchmaking_poll_s):
                        await self._changed.wait()
        finally:
            if not matched:
                with contextlib.suppress(StoreUnavailable):
                    if await self.queue.cancel(ticket_id):
                        log.info("ticket_cancelled", ticket_id=ticket_id)

    # -- the matcher -----------------------------------------------------------------------

    async def run(self) -> None:
        """Passes until cancelled or shutting down."""
        store_ok = True
        while not self.tables.closing:
            try:
                await self.run_pass()
                store_ok = True
            except StoreUnavailable as exc:
                if store_ok:
                    log.warning("store_unavailable", error=str(exc))
                store_ok = False
            await asyncio.sleep(self.tables.settings.matchmaking_poll_s)

    async def run_pass(self) -> list[Plan]:
        """One pass over every mode's queue at the clock's time: the tables this replica
        claimed and made."""
        made: list[Plan] = []
        for mode in MODES.values():
            made += await self._pass(mode)
        self._changed.set()
        return made

    async def _pass(self, mode: Mode) -> list[Plan]:
        now = self._now()
        waiting = await self.queue.waiting(mode.name, now)
        if not waiting:
            return []
        deadline = self.tables.settings.matchmaking_deadline_s
        made = []
        for group in matcher.plan(mode, candidates(waiting), now, deadline):
            plan = Plan(secrets.token_hex(8), mode.name, group.seats)
            if not await self.claim(group.ticket_ids, plan, now):
                continue
            await self.seat(plan)
            made.append(plan)
        return made

    async def claim(self, ticket_ids: Sequence[str], plan: Plan, now: float) -> bool:
        """Claim the tickets for ``plan``, all or none (see :meth:`TicketQueue.claim`)."""
        won = await self.queue.claim(ticket_ids, plan.encode(), now, KEEP_MATCHED_S)
        if won:
            self.claims += 1
            log.info("match_made", mode=plan.mode, table_id=plan.table_id, bot_seats=plan.bot_seats)
        return won

    # -- the ranked table ------------------------------------------------------------------

    async def seat(self, plan: Plan) -> TableRecord:
        """The plan's table, made if it is not yet (by anyone): private, the mode's ranked
        rules with the turn clock, every seat taken at once (the match starts). Idempotent."""
        tables = self.tables
        mode = MODES[plan.mode]
        now = self._now()
        try:
            rec = await tables.load(plan.table_id, presence=False)
        except NotFound:
            rec = changes.new_table(
                plan.table_id,
                mode.preset,
                mode.rules(tables.settings.ranked_turn_time_s),
                private=True,
                invite_code="",
                created_at=now,
                owner_token_hash="",
            )
            rec.ranked = True
            with contextlib.suppress(ValueError):  # made meanwhile by another replica
                await tables.commits.create(rec)
            rec = await tables.load(plan.table_id, presence=False)
        if rec.status != WAITING or any(s.occupant != EMPTY for s in rec.seats):
            return rec
        await self._record_seated(plan)
        away = tables.settings.disconnect_forfeit_s > 0

        def take_all(r: TableRecord) -> changes.Changed[None]:
            if r.status != WAITING or any(s.occupant != EMPTY for s in r.seats):
                return changes.unchanged(None)
            events = []
            for i, e in enumerate(plan.seats):
                if e.bot_level:
                    took = changes.take_seat(
                        r, i, BOT, e.name, "", e.bot_level, now=now, away_from_start=away
                    )
                else:
                    took = changes.take_seat(
                        r,
                        i,
                        HUMAN,
                        e.name,
                        e.token_hash,
                        "",
                        now=now,
                        away_from_start=away,
                        player_id=e.player_id,
                    )
                events += took.events
            return changes.Changed(events, None)

        done = await tables.commits.mutate(plan.table_id, take_all, loaded=rec)
        return done.record

    async def _record_seated(self, plan: Plan) -> None:
        """Record the plan's table as its players' current ranked table, before their seats
        are taken: once the match has started, FindMatch refuses them until it is over. A
        player store that fails here is logged and the match starts all the same (the table
        matters more than the guard)."""
        humans = [e.player_id for e in plan.seats if not e.bot_level]
        try:
            await self.tables.players.seat_ranked(plan.table_id, humans)
        except Exception as exc:  # the player store's own errors
            log.warning(
                "ranked_table_not_recorded", table_id=plan.table_id, error=type(exc).__name__
            )
