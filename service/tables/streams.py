"""Watch streams and presence: who follows a table on this replica, and which seats are here.

A stream (:meth:`Streams.watch`) subscribes to the table's events first and loads the record
after (so nothing falls in between), starts with a :class:`Snapshot` (or the events missed
after ``resume_after``) and goes on with the live events, each as the stream's audience sees
it. A seated stream belongs to the occupancy of the seat its token opened: it gets the seat's
private copies of that occupancy's events only (of earlier ones, what a spectator gets), and
it ends with PERMISSION_DENIED SEAT_LOST right after the event that ends the occupancy
(SeatLeft, PlayerForfeited, another SeatJoined of the seat). Every replica sees the same events
in the same order, so each ends such a stream at the same point: before any private copy of a
later occupant.

Presence: a seated stream keeps a presence entry in the store (refreshed by the scheduler's
loop through :meth:`Streams.refresh_presence`), which views show as ``Seat.connected``; with
disconnect forfeits on, a seat whose last stream closes is marked away, and back when one
opens.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
from collections import Counter
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import structlog

from .. import wire
from ..errors import InvalidArgument, NotFound, ResourceExhausted, Unavailable
from ..limits import Limits
from ..reasons import Reason
from ..store.base import REWOUND, StoredEvent, SubscriptionEnded
from . import changes
from .access import SeatPlayer, check_opening, check_table_id, opened_seat, seat_lost, seat_of
from .commit import Committer, Context
from .model import TableRecord

if TYPE_CHECKING:
    from ..store.base import Subscription

log = structlog.get_logger("tute.streams")

PRESENCE_TTL_S = 30.0
"""A seated watcher counts as connected this long after its replica last refreshed it (every
third of this), so a crashed replica's watchers fade out by themselves."""

MAX_BATCH = 256
"""The most events one list of a batching stream holds (:meth:`Streams.watch`)."""


def ends_occupancy(ended: int, seat: int) -> bool:
    """Does an event that ends the occupancy of seat ``ended`` (-1: of none) end ``seat``'s?
    (Module level: a test replaces it.)"""
    return ended == seat


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    """The table as ``seat`` (None: a spectator) sees it now: the record to build the view
    from."""

    record: TableRecord
    seat: int | None


class Streams:
    """This replica's WatchTable streams and the presence they keep."""

    def __init__(self, ctx: Context, commits: Committer, limits: Limits) -> None:
        self.ctx = ctx
        self.commits = commits
        self.limits = limits
        self._subs: set[Subscription] = set()
        self._streams: Counter[tuple[str, int | None, str]] = Counter()
        """Open streams by (table id, seat, occupancy): a seat's by its occupancy
        (:meth:`SeatInfo.occupancy`), spectators' as (table id, None, '')."""
        self._open = 0
        self._watchers: dict[str, tuple[str, int]] = {}
        """Seated streams: watcher id -> (table id, seat). A watcher id is
        ``<occupancy>.<random>``: its presence counts only while that occupancy holds the
        seat."""
        self._presence_refreshed = 0.0
        self._closing = False

    @property
    def closing(self) -> bool:
        """True once :meth:`begin_shutdown` was called."""
        return self._closing

    def begin_shutdown(self) -> None:
        """Refuse new streams and end the open ones with UNAVAILABLE."""
        self._closing = True
        for sub in list(self._subs):
            sub.interrupt()

    async def watch(
        self,
        table_id: str,
        token: str | None,
        resume_after: int | None,
        seat_player: SeatPlayer | None = None,
        *,
        batch: bool = False,
    ) -> AsyncGenerator[Snapshot | list[bytes], None]:
        """A snapshot (or the missed events after ``resume_after``), then live events (each
        the serialized ``tute.v1.Event`` of the stream's audience), in lists of consecutive
        events: with ``batch`` the events that are ready at once (those
        of one commit, or more when the stream is behind), else one event each.
        ``seat_player``: the player id by which the token may open a player's seat
        (:meth:`service.identity.Identity.seat_player`)."""
        check_table_id(table_id)
        if self._closing:
            raise Unavailable("the server is shutting down; reconnect", reason=Reason.SHUTTING_DOWN)
        rec = await self.commits.load(table_id)
        seat, player_id = await check_opening(seat_of, rec, token, seat_player)
        caller = self.limits.stream_caller(token if seat is not None else None)
        await self.limits.open_stream(caller)
        occupancy = rec.seats[seat].occupancy() if seat is not None else ""
        counted = (table_id, seat, occupancy)
        self._check_room(counted)
        try:
            sub = await self.ctx.store.subscribe(table_id)
        except KeyError:
            raise NotFound("no such table", reason=Reason.TABLE_NOT_FOUND) from None
        self._subs.add(sub)
        self._streams[counted] += 1
        self._open += 1
        self.limits.streams[caller] += 1
        watcher = secrets.token_hex(8)
        if seat is not None:
            watcher = f"{occupancy}.{watcher}"
            self._watchers[watcher] = (table_id, seat)
            await self.ctx.store.set_presence(
                table_id, watcher, seat, self.ctx.clock() + PRESENCE_TTL_S
            )
            if seat in rec.away:
                await self.mark_away(table_id, seat, away=False)
        self.ctx.metrics.watch_streams.inc()
        follow = _Follow(
            self,
            table_id,
            token,
            seat,
            occupancy,
            since=rec.seats[seat].since_seq if seat is not None else 0,
            player_id=player_id,
            batch=batch,
        )
        del rec  # neither the record nor an item is held while the stream waits
        try:
            # The first items, then the live ones: one generator between the subscription
            # and the handler (each nested one costs a step per message and watcher).
            out = await follow.start(resume_after)
            take, live, limit = sub.take, follow.live, MAX_BATCH if batch else 1
            while True:
                while out:  # nothing of it is held while the stream waits for the next events
                    yield out.pop(0)
                if follow.lost:
                    assert seat is not None
                    raise seat_lost(seat)
                out = await live(await take(limit))
        except SubscriptionEnded as exc:
            raise _ended(exc, self.ctx) from None
        finally:
            await self._close(sub, counted, caller, watcher, lost=follow.lost)

    async def _close(
        self,
        sub: Subscription,
        counted: tuple[str, int | None, str],
        caller: str,
        watcher: str,
        *,
        lost: bool,
    ) -> None:
        self._subs.discard(sub)
        self._open -= 1
        self._streams[counted] -= 1
        if not self._streams[counted]:
            del self._streams[counted]
        self.limits.stream_closed(caller)
        table_id = counted[0]
        if (seated := self._watchers.pop(watcher, None)) is not None:
            with contextlib.suppress(Exception):
                await self.ctx.store.clear_presence(table_id, watcher)
                if self.ctx.settings.disconnect_forfeit_s > 0 and not self._closing and not lost:
                    # On shutdown the players resume on another replica; if they do not,
                    # their next turn's timeout marks them away (run_due). A stream whose
                    # seat was lost marks nobody: the seat is no longer its player's.
                    await self.mark_away(table_id, seated[1], away=True)
        self.ctx.metrics.watch_streams.dec()
        with contextlib.suppress(Exception):
            await sub.close()

    def _check_room(self, counted: tuple[str, int | None, str]) -> None:
        """RESOURCE_EXHAUSTED when this replica has no room for one more stream: a seat's
        streams are bounded per occupancy of the seat only (an earlier occupant's streams
        never take the next one's room), so spectators never lock a player out."""
        settings = self.ctx.settings
        if counted[1] is not None:
            if self._streams[counted] >= settings.max_streams_per_seat:
                raise ResourceExhausted(
                    "this seat has too many open streams on this server; close one",
                    reason=Reason.TOO_MANY_STREAMS,
                )
            return
        if self._open >= settings.max_streams:
            raise ResourceExhausted(
                "too many open streams on this server", reason=Reason.TOO_MANY_STREAMS
            )
        if self._streams[counted] >= settings.max_spectator_streams_per_table:
            raise ResourceExhausted(
                "too many spectator streams on this table", reason=Reason.TOO_MANY_STREAMS
            )

    async def mark_away(self, table_id: str, seat: int, *, away: bool) -> None:
        """Record that a seat has no stream (``away``) or has one again (see
        :func:`changes.mark_away`)."""
        now = self.ctx.clock()
        done = await self.commits.mutate(
            table_id, lambda r: changes.mark_away(r, seat, away=away, now=now)
        )
        if done.committed:
            log.info("seat_away" if away else "seat_back", table_id=table_id, seat=seat)

    async def refresh_presence(self, now: float) -> None:
        """Refresh the presence of this replica's seated streams, once a third of its time to
        live passed since the last refresh."""
        if now - self._presence_refreshed <= PRESENCE_TTL_S / 3:
            return
        self._presence_refreshed = now
        for watcher, (table_id, seat) in list(self._watchers.items()):
            await self.ctx.store.set_presence(table_id, watcher, seat, now + PRESENCE_TTL_S)


class _Follow:
    """One stream's reading of its table: what it has sent and whether its seat was lost."""

    __slots__ = (
        "batch",
        "last",
        "loaded_last",
        "lost",
        "occupancy",
        "player_id",
        "seat",
        "since",
        "streams",
        "table_id",
        "token",
    )

    def __init__(
        self,
        streams: Streams,
        table_id: str,
        token: str | None,
        seat: int | None,
        occupancy: str,
        *,
        since: int,
        player_id: str = "",
        batch: bool,
    ) -> None:
        self.streams = streams
        self.table_id = table_id
        self.token = token
        self.seat = seat
        self.occupancy = occupancy
        self.since = since
        """The sequence number of the SeatJoined that began the stream's occupancy."""
        self.lost = False
        """The stream ended because its seat is no longer its player's."""
        self.player_id = player_id
        """The player whose bound seat the token opens ('' when it opens one by hash)."""
        self.batch = batch
        """Send the events that are ready at once together (else one by one)."""
        self.last = 0
        """The sequence number of the last event the stream sent (or its snapshot's)."""
        self.loaded_last = 0
        """The last sequence number of the record the stream's snapshot (or its resume)
        was checked against: a live event at or below it that is not the next one means
        the table's history changed under the stream."""

    def _event(self, ev: StoredEvent) -> bytes:
        """The event's bytes for this stream's audience (its seat's own from the SeatJoined
        that began the stream's occupancy on)."""
        seat = self.seat
        return ev.for_seat(seat if seat is not None and ev.seq >= self.since else None)

    async def _resync(self, sent: int) -> TableRecord:
        """The table afresh, for a snapshot that replaces what the stream sent; SEAT_LOST when
        in the table's history now the seat is not this player's."""
        rec = await self.streams.commits.load(self.table_id)
        log.warning("watch_resynced", table_id=self.table_id, sent=sent, last_seq=rec.last_seq)
        seat = self.seat
        if seat is not None and (
            opened_seat(rec, self.token, self.player_id) != seat
            or rec.seats[seat].occupancy() != self.occupancy
        ):
            self.lost = True
            raise seat_lost(seat)
        return rec

    async def start(self, resume_after: int | None) -> list[Snapshot | list[bytes]]:
        """What the stream sends first: a snapshot, or the missed events after
        ``resume_after`` in lists of consecutive ones (with ``batch``, up to
        :data:`MAX_BATCH` each, else one each); the live events follow (:meth:`live`)."""
        commits, seat, table_id = self.streams.commits, self.seat, self.table_id
        rec = await commits.load(table_id)  # after subscribing: nothing falls in between
        self.loaded_last = rec.last_seq
        if seat is not None:
            seat_of(rec, self.token, self.player_id)  # NOT_SEATED if lost in between
        if resume_after is None:
            self.last = rec.last_seq
            return [Snapshot(rec, seat)]
        if resume_after > rec.last_seq:
            raise InvalidArgument(
                f"resume_after is past the last event ({rec.last_seq})",
                field="resume_after",
            )
        missed = await self.streams.ctx.store.events_after(table_id, resume_after)
        if missed is None:
            self.last = rec.last_seq
            return [Snapshot(rec, seat)]
        self.last = resume_after
        kept = [ev for ev in missed if ev.seq <= rec.last_seq]
        step = MAX_BATCH if self.batch else 1
        out: list[Snapshot | list[bytes]] = [
            [self._event(ev) for ev in kept[i : i + step]] for i in range(0, len(kept), step)
        ]
        if kept:
            self.last = kept[-1].seq
        return out

    async def live(self, got: list[StoredEvent]) -> list[Snapshot | list[bytes]]:
        """What the stream sends for live events ``got``: lists of the events that continue
        what it sent; a fresh snapshot where the table's history went back or changed under
        the stream (a store restored from an older snapshot) or does not continue it. Stops
        after an event that ends the stream's occupancy (``lost``: the stream then ends)."""
        out: list[Snapshot | list[bytes]] = []
        events: list[bytes] = []
        latencies: list[float] = []
        seat = self.seat
        clock = self.streams.ctx.clock
        now = clock()  # the events of one batch reach the stream together
        for ev in got:
            if ev is REWOUND or self.loaded_last < ev.seq <= self.last or ev.seq > self.last + 1:
                if events:
                    out.append(events)
                    events = []
                rec = await self._resync(self.last)
                self.last = self.loaded_last = rec.last_seq
                out.append(Snapshot(rec, seat))
                del rec
                now = clock()
                continue
            if ev.seq <= self.last:
                continue
            data = self._event(ev)
            at, ended = ev.time, ev.ended_seat
            if not at:  # read from the store as bytes alone: they tell (the bytes are sent)
                msg = wire.parse(data)
                at, ended = wire.event_time(msg), wire.ended_seat(msg)
            latencies.append(max(0.0, now - at))
            events.append(data)
            self.last = ev.seq
            if seat is not None and ev.seq > self.loaded_last and ends_occupancy(ended, seat):
                self.lost = True
                break
        if events:
            out.append(events)
        if latencies:
            self.streams.ctx.metrics.publish.observe_many(latencies)
        return out


def _ended(exc: SubscriptionEnded, ctx: Context) -> Unavailable:
    """The error a stream whose subscription ended is closed with."""
    if exc.reason == "shutdown":
        return Unavailable(
            "the server is shutting down; resume on another replica with resume_after",
            reason=Reason.SHUTTING_DOWN,
        )
    if exc.reason == "unavailable":
        ctx.metrics.store_errors.inc()
        return Unavailable(
            "the table store is unreachable; resume with resume_after when it is back",
            reason=Reason.STORE_UNAVAILABLE,
        )
    return Unavailable(
        "this stream fell behind; reconnect with resume_after", reason=Reason.STREAM_BEHIND
    )
