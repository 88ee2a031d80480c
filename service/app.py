"""The table service, transport-neutral: every RPC's behaviour and the one mutation path.

Every change to a table follows one path (:meth:`TuteApp._mutate`): load the record and its
version from the store, apply the change (for moves, ``engine.apply``), number the new events,
then commit with compare-and-set on the version, the events, the idempotency key, the lobby
entry and the table's next due time in one atomic store call; the store publishes the events.
A lost race is retried for requests without ``expected_version`` and for system actions, and
reported as ABORTED to a client that sent one.

The servicer (:mod:`service.servicer`) only converts requests and calls these methods.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import random
import re
import secrets
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import structlog
from google.protobuf import timestamp_pb2

import engine
from engine.bots import BOTS
from engine.events import CardPlayed, GameEnded, HandDealt, PlayerForfeited, TuteDeclared
from tute.v1 import event_pb2, service_pb2, table_pb2, view_pb2

from . import convert
from .auth import hash_token, new_token
from .bots import BotPool
from .callers import CallerResolver
from .clock import SYSTEM_CLOCK, Clock
from .config import Settings
from .errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    ServiceError,
    Unauthenticated,
    Unavailable,
)
from .limits import Limits
from .metrics import Metrics
from .model import (
    BOT,
    EMPTY,
    FINISHED,
    HUMAN,
    PLAYING,
    PRIVATE,
    PUBLIC,
    WAITING,
    GameRecord,
    SeatInfo,
    TableRecord,
    decode_record,
    encode_record,
)
from .reasons import Reason, from_engine
from .store.base import (
    REWOUND,
    Commit,
    LobbyEntry,
    Store,
    StoredEvent,
    StoreUnavailable,
    SubscriptionEnded,
)

if TYPE_CHECKING:
    from .store.base import Subscription

log = structlog.get_logger("tute.app")

MAX_RETRIES = 16
PRESENCE_TTL_S = 30.0
"""A seated watcher counts as connected this long after its replica last refreshed it (every
third of this), so a crashed replica's watchers fade out by themselves."""
MAX_ID = 64
MAX_NAME = 32
MAX_REQUEST_ID = 64
DEFAULT_PAGE = 50
MAX_PAGE = 200
INVITE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

Change = Callable[[TableRecord], list[convert.EventVariants]]


def _action_kind(action: int) -> str:
    if action < 40:
        return "card"
    if action < 44:
        return "sing"
    if action < 46:
        return "tute"
    return {engine.EXCHANGE: "exchange", engine.TIMEOUT: "timeout"}.get(action, "forfeit")


class TuteApp:
    """All tables, through one store. Stateless but for open streams and the scheduler."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self._rng = random.Random(secrets.randbits(64))
        self._subs: set[Subscription] = set()
        self._streams: Counter[tuple[str, int | None, str]] = Counter()
        """This replica's open WatchTable streams by (table id, seat, occupancy): a seat's
        by its occupancy (:meth:`SeatInfo.occupancy`), spectators' as (table id, None, '')."""
        self._open_streams = 0
        self._watchers: dict[str, tuple[str, int]] = {}
        """This replica's seated WatchTable streams: watcher id -> (table id, seat). A watcher
        id is ``<occupancy>.<random>`` (:meth:`SeatInfo.occupancy`): its presence counts only
        while that occupancy holds the seat."""
        self._presence_refreshed = 0.0
        self._closing = False
        self._wake = asyncio.Event()
        self.healthy = True
        self.limits = Limits(store, settings, metrics, lambda: self.clock())
        self.callers = CallerResolver(settings.trusted_proxy_header, settings.trusted_proxies)
        self.bots = BotPool(settings.bot_workers, settings.bot_budget_scale)
        """Worker processes for the bots' moves (see :mod:`service.bots`)."""
        self._thinking: dict[str, asyncio.Task[None]] = {}
        """Tables whose bot on turn is thinking on this replica."""
        self._leases: dict[str, float] = {}
        """Due items this replica claimed and works on: table id -> the lease end its claim
        (or last renewal) gave it; renewed while the work runs (:meth:`_keep_leases`)."""
        self._leases_renewed = 0.0

    # ------------------------------------------------------------------------------------
    # reading
    # ------------------------------------------------------------------------------------

    @staticmethod
    def check_table_id(table_id: str, field: str = "table_id") -> str:
        if not table_id:
            raise InvalidArgument(f"{field} is required", field=field)
        if not _ID_RE.match(table_id):
            raise InvalidArgument(f"{field} is not a table id", field=field)
        return table_id

    async def load(self, table_id: str, *, presence: bool = True) -> TableRecord:
        """The table's record; with ``presence``, also which seats are connected (on any
        replica) for the views built from it."""
        self.check_table_id(table_id)
        found = await self.store.load(table_id)
        if found is None:
            raise NotFound("no such table", reason=Reason.TABLE_NOT_FOUND)
        version, data = found
        rec = decode_record(data)
        rec.version = version
        if presence:
            rec.connected = _connected(
                rec, await self.store.present_watchers(table_id, self.clock())
            )
        return rec

    def _view(self, rec: TableRecord, seat: int | None) -> view_pb2.TableView:
        return convert.view_to_proto(rec, seat, connected=rec.connected)

    def _table(self, rec: TableRecord) -> table_pb2.Table:
        return convert.table_to_proto(rec, connected=rec.connected)

    @staticmethod
    def seat_of(rec: TableRecord, token: str | None) -> int | None:
        """The caller's seat: None for a spectator; PERMISSION_DENIED NOT_SEATED for a token
        that opens no seat here (another table's, or one whose player left or forfeited)."""
        if token is None:
            return None
        seat = rec.seat_of_token_hash(hash_token(token))
        if seat is None:
            raise PermissionDenied(
                "this seat token does not open a seat at this table (another table's, or its "
                "player left or forfeited)",
                reason=Reason.NOT_SEATED,
            )
        structlog.contextvars.bind_contextvars(seat=seat)
        return seat

    def require_seat(self, rec: TableRecord, token: str | None) -> int:
        if token is None:
            raise Unauthenticated(
                "this call needs the seat token as 'authorization: Bearer <token>' metadata",
                reason=Reason.TOKEN_REQUIRED,
            )
        seat = self.seat_of(rec, token)
        assert seat is not None
        return seat

    # ------------------------------------------------------------------------------------
    # the one mutation path
    # ------------------------------------------------------------------------------------

    async def _mutate(
        self,
        table_id: str,
        change: Change,
        *,
        expected_version: int | None = None,
        idempotency_key: str = "",
        respond: Callable[[TableRecord, list[StoredEvent]], bytes] | None = None,
        loaded: TableRecord | None = None,
    ) -> tuple[TableRecord, list[StoredEvent], bytes]:
        """Load, change, number the events, commit with compare-and-set; retry lost races.

        ``loaded``: the record the caller just loaded, used for the first attempt (saves a
        store round trip; a lost race loads afresh).

        Returns the committed record, its stored events and the response bytes (for a repeated
        idempotency key: the first response, with no record change).
        """
        for _ in range(MAX_RETRIES):
            rec = loaded if loaded is not None else await self.load(table_id)
            loaded = None
            try:
                if expected_version is not None and rec.version != expected_version:
                    raise Aborted(
                        f"the table is at version {rec.version}, not {expected_version}",
                        reason=Reason.STALE_VERSION,
                        metadata={"current_version": str(rec.version)},
                    )
                state_before = rec.state
                turn_before = state_before.turn_id if state_before is not None else -1
                status_before = rec.status
                variants = change(rec)
            except ServiceError:
                # A repeat whose first call committed since the caller looked: the first answer.
                first = await self._first_response(table_id, idempotency_key)
                if first is not None:
                    return rec, [], first
                raise
            now = self.clock()
            state = rec.state
            if rec.status == PLAYING and state is not None and state.turn_id != turn_before:
                turn_time = rec.rules.turn_time_s
                rec.deadline = now + turn_time if turn_time else 0.0
                rec.turn_started = now
                variants.append(self._turn_started(rec, state))
            elif rec.status == PLAYING and state is not None and state is not state_before:
                # A move that kept the turn (a cante, an exchange): the seat on turn gets its
                # new legal actions in a fresh TurnStarted.
                variants.append(self._turn_started(rec, state))
            elif rec.status != PLAYING:
                rec.deadline = 0.0
            if rec.status != PLAYING:
                rec.away.clear()
            self._set_expiry(rec, now)
            stored = self._number(rec, variants, now)
            response = respond(rec, stored) if respond is not None else b""
            outcome = await self.store.commit(
                table_id,
                Commit(
                    rec.version - 1,
                    encode_record(rec),
                    stored,
                    status=rec.status,
                    lobby=self._lobby_entry(rec),
                    due_at=self._due_at(rec, now),
                    idempotency_key=idempotency_key,
                    response=response if idempotency_key else b"",
                    bot_seats=sum(s.occupant == BOT for s in rec.seats),
                ),
            )
            if outcome.duplicate_response is not None:
                return rec, [], outcome.duplicate_response
            if outcome.applied:
                if rec.status == PLAYING and self._due_at(rec, now) <= now + 0.001:
                    self._wake.set()
                if rec.status != status_before:
                    _log_match(rec, status_before)
                return rec, stored, response
            if expected_version is not None:
                raise Aborted(
                    "the table changed during this request",
                    reason=Reason.STALE_VERSION,
                    metadata={"current_version": str(outcome.version)},
                )
        raise Aborted("the table is too busy; try again", reason=Reason.CONTENTION)

    @staticmethod
    def _turn_started(rec: TableRecord, state: engine.State) -> convert.EventVariants:
        """TurnStarted for the seat on turn, with its legal actions in its own copy (a bot's
        copy would reach nobody: none is made)."""
        human = rec.seats[state.turn].occupant == HUMAN
        return convert.turn_started_variants(state, rec.deadline, with_legal=human)

    async def _first_response(self, table_id: str, idempotency_key: str) -> bytes | None:
        """The response stored under an idempotency key (None: no key, or not used yet)."""
        if not idempotency_key:
            return None
        return await self.store.idempotent_response(table_id, idempotency_key)

    def _number(
        self, rec: TableRecord, variants: list[convert.EventVariants], now: float
    ) -> list[StoredEvent]:
        """Give the new events their sequence numbers, the new version and the time."""
        rec.version += 1
        ts = timestamp_pb2.Timestamp()
        ts.FromNanoseconds(int(now * 1e9))
        stored = []
        for v in variants:
            rec.last_seq += 1
            seq = rec.last_seq
            stored.append(
                StoredEvent(
                    seq,
                    _stamp(v.public, seq, rec.version, ts),
                    {s: _stamp(e, seq, rec.version, ts) for s, e in v.private.items()},
                )
            )
        return stored

    def _lobby_entry(self, rec: TableRecord) -> LobbyEntry | None:
        free = len(rec.free_seats())
        if rec.visibility != PUBLIC or rec.status != WAITING or not free:
            return None
        return LobbyEntry(rec.table_id, rec.preset, rec.rules.players, free, rec.created_at)

    def _set_expiry(self, rec: TableRecord, now: float) -> None:
        """A waiting table where no human sits expires ``waiting_ttl_s`` after it came to be
        so (created, or left by its last human); any other table does not."""
        ttl = self.settings.waiting_ttl_s
        if ttl > 0 and rec.status == WAITING and all(s.occupant != HUMAN for s in rec.seats):
            if not rec.expires_at:
                rec.expires_at = now + ttl
        else:
            rec.expires_at = 0.0

    def _due_at(self, rec: TableRecord, now: float) -> float:
        """When the scheduler must look at this table next (0: nothing due)."""
        if rec.status == WAITING:
            return rec.expires_at
        if rec.status != PLAYING or rec.state is None:
            return 0.0
        if rec.seats[rec.state.turn].occupant == BOT:
            due = now + self.settings.bot_delay_s
        else:
            due = rec.deadline
        grace = self.settings.disconnect_forfeit_s
        if grace > 0 and rec.away:
            away_due = min(rec.away.values()) + grace
            due = min(due, away_due) if due else away_due
        return due

    def _apply(
        self,
        rec: TableRecord,
        seat: int,
        action: int,
        forfeit_reason: event_pb2.ForfeitReason = event_pb2.FORFEIT_REASON_LEFT,
    ) -> list[convert.EventVariants]:
        """``engine.apply`` on the record; engine errors become service errors."""
        before = rec.state
        if before is None or rec.status == WAITING:
            raise FailedPrecondition(
                "the match has not started", reason=Reason.MATCH_NOT_STARTED
            )
        try:
            after, events = engine.apply(before, seat, action)
        except engine.IllegalAction as exc:
            self.metrics.actions.labels(_action_kind(action), exc.reason).inc()
            raise FailedPrecondition(exc.message, reason=from_engine(exc.reason)) from None
        except engine.InvalidInput as exc:
            raise InvalidArgument(
                exc.message, field="action", reason=from_engine(exc.reason)
            ) from None
        rec.state = after
        tute = any(isinstance(e, TuteDeclared) for e in events)
        for e in events:
            if isinstance(e, CardPlayed) and e.auto:
                rec.auto_played |= 1 << e.card
            elif isinstance(e, HandDealt):
                rec.auto_played = 0
            elif isinstance(e, GameEnded):
                rec.games.append(GameRecord(e.game_no, e.winner, e.scores, tute))
            elif isinstance(e, PlayerForfeited):
                rec.forfeited_seat = e.seat
                rec.seats[e.seat].token_hash = ""  # its token stops opening the seat
        if after.over:
            rec.status = FINISHED
        return convert.engine_events_to_proto(
            before, after, events, forfeit_reason=forfeit_reason
        )

    def _start_match(self, rec: TableRecord) -> list[convert.EventVariants]:
        rec.state = engine.new_match(rec.rules, random.Random(secrets.randbits(64)))
        rec.status = PLAYING
        if self.settings.disconnect_forfeit_s > 0:
            # A player without a stream when the match starts is away from the start.
            now = self.clock()
            rec.away = {
                i: now
                for i, s in enumerate(rec.seats)
                if s.occupant == HUMAN and i not in rec.connected
            }
        started = convert.match_started_event(rec, connected=rec.connected)
        variants = [convert.EventVariants(started, {})]
        variants += convert.engine_events_to_proto(
            rec.state, rec.state, engine.opening_events(rec.state)
        )
        return variants

    # ------------------------------------------------------------------------------------
    # RPCs
    # ------------------------------------------------------------------------------------

    async def create_table(
        self, req: service_pb2.CreateTableRequest
    ) -> service_pb2.CreateTableResponse:
        try:
            preset, rules = convert.rules_from_proto(req.rules)
        except convert.BadField as exc:
            raise InvalidArgument(exc.description, field=exc.field, reason=exc.reason) from None
        if req.visibility not in (
            table_pb2.VISIBILITY_UNSPECIFIED,
            table_pb2.VISIBILITY_PUBLIC,
            table_pb2.VISIBILITY_PRIVATE,
        ):
            raise InvalidArgument("unknown visibility", field="visibility")
        private = req.visibility == table_pb2.VISIBILITY_PRIVATE
        seat = None
        if req.take_seat:
            seat = req.seat if req.HasField("seat") else 0
            if seat >= rules.players:
                raise InvalidArgument(
                    f"seat must be from 0 to {rules.players - 1}", field="seat"
                )
            name = _display_name(req.display_name)
        elif req.HasField("seat"):
            raise InvalidArgument("seat is only meaningful with take_seat", field="seat")
        await self.limits.create_table()
        counts = await self.store.count_tables()
        if counts.get(WAITING, 0) + counts.get(PLAYING, 0) >= self.settings.max_tables:
            raise ResourceExhausted("too many open tables on this server; try later",
                                    reason=Reason.TOO_MANY_TABLES)
        table_id = secrets.token_hex(8)
        invite = "".join(secrets.choice(INVITE_ALPHABET) for _ in range(8)) if private else ""
        owner_token, owner_hash = new_token()
        rec = TableRecord(
            table_id=table_id,
            preset=preset,
            rules=rules,
            visibility=PRIVATE if private else PUBLIC,
            invite_code=invite,
            created_at=self.clock(),
            seats=[SeatInfo() for _ in range(rules.players)],
            version=1,
            owner_token_hash=owner_hash,
        )
        self._set_expiry(rec, rec.created_at)
        await self.store.create(
            table_id, encode_record(rec), invite, self._lobby_entry(rec),
            due_at=self._due_at(rec, rec.created_at),
        )
        structlog.contextvars.bind_contextvars(table_id=table_id)
        log.info("table_created", preset=preset, players=rules.players, private=private)
        resp = service_pb2.CreateTableResponse(
            table_id=table_id, invite_code=invite, owner_token=owner_token
        )
        if seat is not None:
            token, token_hash = new_token()
            rec, _, _ = await self._mutate(
                table_id, lambda r: self._seat(r, seat, HUMAN, name, token_hash, "")
            )
            resp.seat = seat
            resp.seat_token = token
            structlog.contextvars.bind_contextvars(seat=seat)
        resp.table.CopyFrom(self._table(rec))
        return resp

    def _seat(
        self, rec: TableRecord, seat: int | None, occupant: str, name: str, token_hash: str,
        level: str,
    ) -> list[convert.EventVariants]:
        """Put someone in a seat (a given one or the first free); start the match when full."""
        if rec.status == FINISHED:
            raise FailedPrecondition("the match is over", reason=Reason.MATCH_OVER)
        if rec.status != WAITING:
            raise FailedPrecondition(
                "the match has already started", reason=Reason.MATCH_ALREADY_STARTED
            )
        if seat is None:
            free = rec.free_seats()
            # the match starts as the last seat is filled: a waiting table has a free seat
            assert free, "a waiting table without a free seat"
            seat = free[0]
        elif seat >= len(rec.seats):
            raise InvalidArgument(f"seat must be from 0 to {len(rec.seats) - 1}", field="seat")
        elif rec.seats[seat].occupant != EMPTY:
            raise FailedPrecondition("that seat is taken", reason=Reason.SEAT_TAKEN)
        # The SeatJoined below is the first event of this change: it gets sequence
        # last_seq + 1, which tells this occupancy from the seat's earlier ones.
        rec.seats[seat] = SeatInfo(occupant, name, token_hash, level, rec.last_seq + 1)
        joined = convert.seat_joined_event(rec, seat, connected=rec.connected)
        variants = [convert.EventVariants(joined, {})]
        if not rec.free_seats():
            variants += self._start_match(rec)
        return variants

    async def list_tables(
        self, req: service_pb2.ListTablesRequest
    ) -> service_pb2.ListTablesResponse:
        if req.page_size < 0:
            raise InvalidArgument("page_size must not be negative", field="page_size")
        size = min(req.page_size or DEFAULT_PAGE, MAX_PAGE)
        if req.players not in (0, 2, 3, 4):
            raise InvalidArgument("players must be 2, 3 or 4 (0: any)", field="players")
        if req.preset and req.preset not in engine.PRESETS:
            raise InvalidArgument("unknown preset", field="preset")
        after = _parse_page_token(req.page_token) if req.page_token else None
        listed = await self.store.lobby_tables(
            req.preset, req.players, after, size + 1, self.clock()
        )
        resp = service_pb2.ListTablesResponse()
        for table in listed[:size]:
            if table.record is None:
                continue  # gone since it was listed
            rec = decode_record(table.record)
            rec.version = table.version
            rec.connected = _connected(rec, table.watchers)
            resp.tables.append(self._table(rec))
        if len(listed) > size:
            last = listed[size - 1].entry
            resp.next_page_token = _page_token(last.created_at, last.table_id)
        return resp

    async def join_table(
        self, req: service_pb2.JoinTableRequest, token: str | None = None
    ) -> service_pb2.JoinTableResponse:
        """Take a seat. ``token``: the caller's seat token, if it sent one; one that opens a
        seat at this table already is FAILED_PRECONDITION ALREADY_SEATED (any other is
        ignored: a player may sit at several tables)."""
        target = req.WhichOneof("target")
        if target is None:
            raise InvalidArgument("give table_id or invite_code", field="table_id")
        name = _display_name(req.display_name)
        if target == "invite_code":
            code = req.invite_code.strip().upper()
            if not code or len(code) > MAX_ID:
                raise InvalidArgument("not an invite code", field="invite_code")
            await self.limits.invite_attempt()
            found = await self.store.find_invite(code)
            if found is None:
                raise NotFound(
                    "no table has this invite code", reason=Reason.INVITE_NOT_FOUND
                )
            await self.limits.invite_found()
            table_id = found
        else:
            table_id = self.check_table_id(req.table_id)
            rec = await self.load(table_id)
            if rec.visibility == PRIVATE:
                raise PermissionDenied(
                    "this table is private: join it with its invite code",
                    reason=Reason.PRIVATE_TABLE,
                )
        seat = req.seat if req.HasField("seat") else None
        caller_hash = hash_token(token) if token is not None else ""
        token, token_hash = new_token()
        structlog.contextvars.bind_contextvars(table_id=table_id)
        holder: dict[str, int] = {}

        def change(r: TableRecord) -> list[convert.EventVariants]:
            if caller_hash and r.seat_of_token_hash(caller_hash) is not None:
                raise FailedPrecondition(
                    "this seat token already opens a seat at this table",
                    reason=Reason.ALREADY_SEATED,
                )
            variants = self._seat(r, seat, HUMAN, name, token_hash, "")
            holder["seat"] = r.seat_of_token_hash(token_hash) or 0
            return variants

        rec, _, _ = await self._mutate(table_id, change)
        got = holder["seat"]
        structlog.contextvars.bind_contextvars(seat=got)
        log.info("seat_joined", seat=got)
        return service_pb2.JoinTableResponse(
            table_id=table_id, seat=got, seat_token=token, view=self._view(rec, got)
        )

    async def add_bot(
        self, req: service_pb2.AddBotRequest, token: str | None = None
    ) -> service_pb2.AddBotResponse:
        table_id = self.check_table_id(req.table_id)
        level = req.level or "random"
        if level not in BOTS:
            raise InvalidArgument(
                "unknown bot level; known: " + ", ".join(sorted(BOTS)), field="level"
            )
        seat = req.seat if req.HasField("seat") else None
        await self.limits.add_bot()  # first: a refusal costs the server next to nothing
        rec = await self.load(table_id)
        self.require_owner_or_seat(rec, token)
        budget = self.settings.max_bot_seats
        if budget > 0 and await self.store.count_bot_seats() >= budget:
            raise ResourceExhausted(
                "the server has as many bots as it can play; try later", reason=Reason.TOO_MANY_BOTS
            )
        holder: dict[str, int] = {}

        def change(r: TableRecord) -> list[convert.EventVariants]:
            self.require_owner_or_seat(r, token)
            before = set(r.free_seats())
            variants = self._seat(r, seat, BOT, f"Bot ({level})", "", level)
            holder["seat"] = (before - set(r.free_seats())).pop()
            return variants

        rec, _, _ = await self._mutate(table_id, change, loaded=rec)
        return service_pb2.AddBotResponse(seat=holder["seat"], table=self._table(rec))

    @staticmethod
    def require_owner_or_seat(rec: TableRecord, token: str | None) -> None:
        """AddBot's rule: the table's owner token, or a seat token of a seat at this table."""
        if token is None:
            raise Unauthenticated(
                "adding a bot needs the table's owner token or a seat token of this table as "
                "'authorization: Bearer <token>' metadata",
                reason=Reason.TOKEN_REQUIRED,
            )
        token_hash = hash_token(token)
        owner = bool(rec.owner_token_hash) and hmac.compare_digest(
            token_hash, rec.owner_token_hash
        )
        if not owner and rec.seat_of_token_hash(token_hash) is None:
            raise PermissionDenied(
                "this token is neither the owner token nor a seat token of this table",
                reason=Reason.NOT_SEATED,
            )

    async def leave_table(
        self, req: service_pb2.LeaveTableRequest, token: str | None
    ) -> service_pb2.LeaveTableResponse:
        table_id = self.check_table_id(req.table_id)
        rec = await self.load(table_id)
        seat = self.require_seat(rec, token)
        forfeited = rec.status == PLAYING

        def change(r: TableRecord) -> list[convert.EventVariants]:
            if r.status == FINISHED:
                raise FailedPrecondition("the match is over", reason=Reason.MATCH_OVER)
            if r.status == WAITING:
                r.seats[seat] = SeatInfo()
                return [convert.EventVariants(convert.seat_left_event(seat), {})]
            self.metrics.actions.labels("forfeit", "applied").inc()
            return self._apply(r, seat, engine.FORFEIT)

        await self._mutate(table_id, change, loaded=rec)
        log.info("seat_left", seat=seat, forfeited=forfeited)
        return service_pb2.LeaveTableResponse(forfeited=forfeited)

    async def get_table(
        self, req: service_pb2.GetTableRequest, token: str | None
    ) -> service_pb2.GetTableResponse:
        rec = await self.load(req.table_id)
        seat = self.seat_of(rec, token)
        return service_pb2.GetTableResponse(view=self._view(rec, seat))

    async def submit_action(
        self, req: service_pb2.SubmitActionRequest, token: str | None
    ) -> service_pb2.SubmitActionResponse:
        table_id = self.check_table_id(req.table_id)
        if not req.HasField("action"):
            raise InvalidArgument("action is required", field="action")
        try:
            action = convert.action_from_proto(req.action)
        except convert.BadField as exc:
            raise InvalidArgument(exc.description, field=exc.field) from None
        if len(req.request_id) > MAX_REQUEST_ID:
            raise InvalidArgument(
                f"request_id is at most {MAX_REQUEST_ID} characters", field="request_id"
            )
        rec = await self.load(table_id)
        seat = self.require_seat(rec, token)
        structlog.contextvars.bind_contextvars(seat=seat)
        key = f"{seat}:{req.request_id}" if req.request_id else ""
        if key:
            first = await self.store.idempotent_response(table_id, key)
            if first is not None:
                return service_pb2.SubmitActionResponse.FromString(first)
        expected = req.expected_version if req.HasField("expected_version") else None

        def change(r: TableRecord) -> list[convert.EventVariants]:
            return self._apply(r, seat, action)

        built: dict[bytes, service_pb2.SubmitActionResponse] = {}

        def respond(r: TableRecord, stored: list[StoredEvent]) -> bytes:
            resp = service_pb2.SubmitActionResponse(
                table_version=r.version, view=self._view(r, seat)
            )
            for ev in stored:
                resp.events.append(event_pb2.Event.FromString(ev.for_seat(seat)))
            data = resp.SerializeToString()
            built.clear()
            built[data] = resp
            return data

        _, stored, response = await self._mutate(
            table_id,
            change,
            expected_version=expected,
            idempotency_key=key,
            respond=respond,
            loaded=rec,
        )
        if stored:
            self.metrics.actions.labels(_action_kind(action), "applied").inc()
        # The response built for this commit as is; a repeated request_id's first answer (the
        # stored bytes) is parsed.
        mine = built.get(response)
        return mine if mine is not None else service_pb2.SubmitActionResponse.FromString(response)

    # ------------------------------------------------------------------------------------
    # streams
    # ------------------------------------------------------------------------------------

    async def watch_table(
        self, req: service_pb2.WatchTableRequest, token: str | None
    ) -> AsyncIterator[service_pb2.WatchTableResponse]:
        """A snapshot (or the missed events after ``resume_after``), then live events.

        A seated stream belongs to the occupancy of the seat its token opened: it gets the
        seat's private copies of that occupancy's events only (of earlier ones, what a
        spectator gets), and it ends with PERMISSION_DENIED SEAT_LOST right after the event
        that ends the occupancy (SeatLeft, PlayerForfeited, another SeatJoined of the seat).
        Every replica sees the same events in the same order, so each ends such a stream at
        the same point: before any private copy of a later occupant.
        """
        table_id = self.check_table_id(req.table_id)
        if self._closing:
            raise Unavailable(
                "the server is shutting down; reconnect", reason=Reason.SHUTTING_DOWN
            )
        rec = await self.load(table_id)
        seat = self.seat_of(rec, token)
        caller = self.limits.stream_caller(token if seat is not None else None)
        await self.limits.open_stream(caller)
        occupancy = rec.seats[seat].occupancy() if seat is not None else ""
        counted = (table_id, seat, occupancy)
        self._check_stream_room(counted)
        try:
            sub = await self.store.subscribe(table_id)
        except KeyError:
            raise NotFound("no such table", reason=Reason.TABLE_NOT_FOUND) from None
        self._subs.add(sub)
        self._streams[counted] += 1
        self._open_streams += 1
        since = rec.seats[seat].since_seq if seat is not None else 0
        self.limits.streams[caller] += 1
        watcher = secrets.token_hex(8)
        if seat is not None:
            watcher = f"{occupancy}.{watcher}"
            self._watchers[watcher] = (table_id, seat)
            await self.store.set_presence(
                table_id, watcher, seat, self.clock() + PRESENCE_TTL_S
            )
            if seat in rec.away:
                await self._mark_away(table_id, seat, away=False)
        self.metrics.watch_streams.inc()
        lost = False

        def response(ev: StoredEvent) -> service_pb2.WatchTableResponse:
            return _event_response(ev, seat if seat is not None and ev.seq >= since else None)

        def seat_lost(msg: service_pb2.WatchTableResponse) -> bool:
            """Did this event (a live one) end the stream's occupancy?"""
            return (
                seat is not None
                and msg.event.sequence > loaded_last
                and _ends_occupancy(msg.event, seat)
            )

        try:
            rec = await self.load(table_id)  # after subscribing: nothing falls in between
            loaded_last = rec.last_seq
            if seat is not None:
                self.seat_of(rec, token)  # NOT_SEATED if the seat was lost in between
            if req.HasField("resume_after"):
                if req.resume_after > rec.last_seq:
                    raise InvalidArgument(
                        f"resume_after is past the last event ({rec.last_seq})",
                        field="resume_after",
                    )
                missed = await self.store.events_after(table_id, req.resume_after)
                if missed is None:
                    last = rec.last_seq
                    yield service_pb2.WatchTableResponse(
                        snapshot=self._view(rec, seat)
                    )
                else:
                    last = req.resume_after
                    for ev in missed:
                        if ev.seq > rec.last_seq:
                            break
                        yield response(ev)
                        last = ev.seq
            else:
                last = rec.last_seq
                yield service_pb2.WatchTableResponse(snapshot=self._view(rec, seat))
            async for ev in sub:
                if ev is REWOUND or loaded_last < ev.seq <= last or ev.seq > last + 1:
                    # The table's history went back or changed under the stream (a store
                    # restored from an older snapshot), or does not continue what it sent:
                    # a fresh snapshot replaces what the client holds, as at the start.
                    rec = await self.load(table_id)
                    log.warning("watch_resynced", table_id=table_id, sent=last,
                                last_seq=rec.last_seq)
                    if seat is not None and (
                        rec.seat_of_token_hash(hash_token(token or "")) != seat
                        or rec.seats[seat].occupancy() != occupancy
                    ):
                        lost = True  # in the table's history now, the seat is not this player's
                        raise _seat_lost(seat)
                    last = loaded_last = rec.last_seq
                    yield service_pb2.WatchTableResponse(snapshot=self._view(rec, seat))
                    continue
                if ev.seq <= last:
                    continue
                out = response(ev)
                self.metrics.publish.observe(
                    max(0.0, self.clock() - out.event.time.ToNanoseconds() / 1e9)
                )
                yield out
                last = ev.seq
                if seat_lost(out):
                    lost = True
                    raise _seat_lost(seat)
        except SubscriptionEnded as exc:
            if exc.reason == "shutdown":
                raise Unavailable(
                    "the server is shutting down; resume on another replica with resume_after",
                    reason=Reason.SHUTTING_DOWN,
                ) from None
            if exc.reason == "unavailable":
                self.metrics.store_errors.inc()
                raise Unavailable(
                    "the table store is unreachable; resume with resume_after when it is back",
                    reason=Reason.STORE_UNAVAILABLE,
                ) from None
            raise Unavailable(
                "this stream fell behind; reconnect with resume_after",
                reason=Reason.STREAM_BEHIND,
            ) from None
        finally:
            self._subs.discard(sub)
            self._open_streams -= 1
            self._streams[counted] -= 1
            if not self._streams[counted]:
                del self._streams[counted]
            self.limits.stream_closed(caller)
            if (seated := self._watchers.pop(watcher, None)) is not None:
                with contextlib.suppress(Exception):
                    await self.store.clear_presence(table_id, watcher)
                    if self.settings.disconnect_forfeit_s > 0 and not self._closing and not lost:
                        # On shutdown the players resume on another replica; if they do not,
                        # their next turn's timeout marks them away (run_due). A stream whose
                        # seat was lost marks nobody: the seat is no longer its player's.
                        await self._mark_away(table_id, seated[1], away=True)
            self.metrics.watch_streams.dec()
            with contextlib.suppress(Exception):
                await sub.close()

    def _check_stream_room(self, counted: tuple[str, int | None, str]) -> None:
        """RESOURCE_EXHAUSTED when this replica has no room for one more stream: a seat's
        streams are bounded per occupancy of the seat only (an earlier occupant's streams
        never take the next one's room), so spectators never lock a player out."""
        seat = counted[1]
        if seat is not None:
            if self._streams[counted] >= self.settings.max_streams_per_seat:
                raise ResourceExhausted(
                    "this seat has too many open streams on this server; close one",
                    reason=Reason.TOO_MANY_STREAMS,
                )
            return
        if self._open_streams >= self.settings.max_streams:
            raise ResourceExhausted("too many open streams on this server",
                                    reason=Reason.TOO_MANY_STREAMS)
        if self._streams[counted] >= self.settings.max_spectator_streams_per_table:
            raise ResourceExhausted("too many spectator streams on this table",
                                    reason=Reason.TOO_MANY_STREAMS)

    async def _mark_away(self, table_id: str, seat: int, *, away: bool) -> None:
        """Record that a seat has no stream (``away``) or has one again; nothing when that is
        already recorded, the seat is not a human's, or no match is being played."""

        def change(r: TableRecord) -> list[convert.EventVariants]:
            if r.status != PLAYING or r.seats[seat].occupant != HUMAN:
                raise _NoChange
            if away:
                if seat in r.away or seat in r.connected:
                    raise _NoChange
                r.away[seat] = self.clock()
            elif r.away.pop(seat, None) is None:
                raise _NoChange
            return []

        try:
            await self._mutate(table_id, change)
        except _NoChange:
            return
        log.info("seat_away" if away else "seat_back", table_id=table_id, seat=seat)

    @property
    def closing(self) -> bool:
        """True once :meth:`begin_shutdown` was called."""
        return self._closing

    def begin_shutdown(self) -> None:
        """Refuse new streams and end the open ones with UNAVAILABLE."""
        self._closing = True
        for sub in list(self._subs):
            sub.interrupt()

    # ------------------------------------------------------------------------------------
    # the scheduler: turn deadlines and bots
    # ------------------------------------------------------------------------------------

    async def run_scheduler(self) -> None:
        """Claim due tables and act on them, until cancelled or shutting down."""
        last_gauge = 0.0
        # Not only cancellation ends the loop: on Python 3.11 asyncio.wait_for (redis-py uses
        # it) can swallow a cancel that comes as the awaited call completes.
        while not self._closing:
            try:
                await self._keep_leases()
                now = self.clock()
                items = await self.store.claim_due(now, self.settings.claim_lease_s, 64)
                for item in items:
                    self._leases[item.table_id] = now + self.settings.claim_lease_s
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
                if now - self._presence_refreshed > PRESENCE_TTL_S / 3:
                    self._presence_refreshed = now
                    for watcher, (table_id, seat) in list(self._watchers.items()):
                        await self.store.set_presence(
                            table_id, watcher, seat, now + PRESENCE_TTL_S
                        )
                if now - last_gauge > 2.0:
                    last_gauge = now
                    for state, n in (await self.store.count_tables()).items():
                        self.metrics.tables.labels(state).set(n)
                self.healthy = True
                if items:
                    continue
                next_due = await self.store.next_due()
            except StoreUnavailable as exc:
                if self.healthy:
                    log.warning("store_unavailable", error=str(exc))
                self.healthy = False
                next_due = None
                # the rest of a batch is not worked on: its claims lapse
                self._leases = {t: at for t, at in self._leases.items() if t in self._thinking}
            wait = self.settings.scheduler_poll_s
            if next_due is not None:
                wait = min(wait, max(0.0, next_due - self.clock()))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def _keep_leases(self) -> None:
        """Renew the claims of the due items this replica works on (a batch being run, a
        bot thinking) once a third of the lease passed since the last renewal: a claim lasts
        ``claim_lease_s`` past the last renewal, so a crashed replica's items fall due again
        that soon, while a live replica keeps its items however long the work takes. A claim
        that could not be renewed (a commit moved the due time, or the lease lapsed and
        another replica claimed it) is let go; the commit's compare-and-set still makes the
        work happen once."""
        lease = self.settings.claim_lease_s
        now = self.clock()
        if not self._leases or now < self._leases_renewed + lease / 3:
            return
        self._leases_renewed = now
        held = dict(self._leases)
        renewed = set(await self.store.renew_due(held, now + lease))
        for table_id, at in held.items():
            if self._leases.get(table_id) != at:
                continue  # claimed again or let go meanwhile
            if table_id in renewed:
                self._leases[table_id] = now + lease
            else:
                del self._leases[table_id]

    async def run_due(self, table_id: str) -> None:
        """Play a bot's turn or a timed-out turn at one table, or forfeit a player away beyond
        the grace period, exactly once (CAS)."""
        grace = self.settings.disconnect_forfeit_s
        rec = await self.load(table_id, presence=grace > 0)
        state = rec.state
        if rec.status == WAITING:
            await self._expire_waiting(rec)
            return
        if rec.status != PLAYING or state is None:
            return
        now = self.clock()
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

        def change(r: TableRecord) -> list[convert.EventVariants]:
            if r.state is None or r.state.turn_id != turn_id:
                raise _NoChange  # the turn moved on (another replica, or the player)
            variants = self._apply(r, seat, engine.TIMEOUT)
            if grace > 0 and seat not in r.connected:
                # Gone without closing its stream (say, with a crashed replica): away from now.
                r.away.setdefault(seat, now)
            return variants

        try:
            await self._mutate(table_id, change, expected_version=rec.version, loaded=rec)
        except (Aborted, _NoChange):
            return  # another replica (or the player) acted first: nothing to do
        self.metrics.actions.labels("timeout", "applied").inc()
        self.metrics.timeouts.inc()
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
        self.metrics.bot_think.labels(level).observe(took)
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

        def change(r: TableRecord) -> list[convert.EventVariants]:
            if r.state is None or r.status != PLAYING or engine.view(r.state, seat) != seen:
                raise _NoChange  # the table moved on
            return self._apply(r, seat, action)

        try:
            await self._mutate(table_id, change)
        except (Aborted, _NoChange):
            self.metrics.actions.labels("bot", "stale").inc()
            return False  # another replica (or a player) changed the table first
        self.metrics.actions.labels("bot", "applied").inc()
        self.metrics.bot_moves.inc()
        return True

    def _done_thinking(self, table_id: str, task: asyncio.Task[Any] | None) -> None:
        if self._thinking.get(table_id) is task:
            del self._thinking[table_id]
            self._leases.pop(table_id, None)

    def close_bots(self) -> None:
        """Stop thinking: cancel the bots' moves in flight and stop the worker processes."""
        for task in list(self._thinking.values()):
            task.cancel()
        self.bots.close()

    async def _expire_waiting(self, rec: TableRecord) -> None:
        """Delete a waiting table whose expiry has come (no human sat down in time), unless
        it changed since it was loaded (then its new due time, if any, brings it back)."""
        if not rec.expires_at or self.clock() < rec.expires_at:
            return
        if await self.store.delete(rec.table_id, rec.version):
            log.info("table_expired", table_id=rec.table_id,
                     bots=sum(s.occupant == BOT for s in rec.seats))

    async def _forfeit_away(self, rec: TableRecord, now: float, grace: float) -> bool:
        """Forfeit the match for the seat away longest, once beyond the grace period and still
        without a stream (or clear its mark when it is back). True when something was done."""
        if not rec.away:
            return False
        seat, since = min(rec.away.items(), key=lambda item: item[1])
        if now < since + grace:
            return False
        if seat in rec.connected:
            await self._mark_away(rec.table_id, seat, away=False)
            return True

        def change(r: TableRecord) -> list[convert.EventVariants]:
            return self._apply(
                r, seat, engine.FORFEIT, forfeit_reason=event_pb2.FORFEIT_REASON_DISCONNECTED
            )

        try:
            await self._mutate(rec.table_id, change, expected_version=rec.version, loaded=rec)
        except Aborted:
            return True  # another replica (or the player) changed it first
        self.metrics.actions.labels("forfeit", "applied").inc()
        log.info("seat_forfeited_disconnected", table_id=rec.table_id, seat=seat,
                 away_s=round(now - since, 3))
        return True


class _NoChange(Exception):
    """A change that does not apply (a presence mark already recorded, a due turn that moved
    on): no commit."""


def _log_match(rec: TableRecord, status_before: str) -> None:
    """The committed change started or ended the table's match: one line about it."""
    if rec.status == PLAYING:
        log.info("match_started", table_id=rec.table_id, preset=rec.preset,
                 players=rec.rules.players)
    elif rec.status == FINISHED and status_before == PLAYING and rec.state is not None:
        log.info("match_ended", table_id=rec.table_id, winners=list(rec.state.winners),
                 end_reason=rec.state.end_reason, games=len(rec.games),
                 forfeited_seat=rec.forfeited_seat)


def _stamp(ev: event_pb2.Event, seq: int, version: int, ts: timestamp_pb2.Timestamp) -> bytes:
    ev.sequence = seq
    ev.table_version = version
    ev.time.CopyFrom(ts)
    return ev.SerializeToString()


def _event_response(ev: StoredEvent, seat: int | None) -> service_pb2.WatchTableResponse:
    return service_pb2.WatchTableResponse(event=event_pb2.Event.FromString(ev.for_seat(seat)))


def _connected(rec: TableRecord, watchers: Mapping[str, int]) -> frozenset[int]:
    """The seats of ``rec`` whose present watchers count for their current occupants."""
    return frozenset(
        seat for watcher, seat in watchers.items()
        if 0 <= seat < len(rec.seats) and _counts_for(watcher, rec.seats[seat])
    )


def _counts_for(watcher: str, seat: SeatInfo) -> bool:
    """Does a present watcher of this seat count for its current occupant? A watcher id is
    ``<occupancy>.<random>``; one without an occupancy (from a replica of an earlier version)
    counts for whoever sits there."""
    occupancy, dot, _ = watcher.partition(".")
    if not dot:
        return seat.occupant == HUMAN
    return occupancy == seat.occupancy() != ""


def _ends_occupancy(ev: event_pb2.Event, seat: int) -> bool:
    """Does this event end the occupancy of ``seat`` (its token stops opening it)?"""
    kind = ev.WhichOneof("kind")
    if kind == "seat_left":
        return ev.seat_left.seat == seat
    if kind == "player_forfeited":
        return ev.player_forfeited.seat == seat
    if kind == "seat_joined":  # somebody else sat there (never the stream's own SeatJoined)
        return ev.seat_joined.seat.index == seat
    return False


def _seat_lost(seat: int | None) -> PermissionDenied:
    return PermissionDenied(
        f"this seat token no longer opens seat {seat}: its player left or forfeited; watch "
        "without the token (as a spectator), with resume_after, to follow the table",
        reason=Reason.SEAT_LOST,
    )


_PAGE_TOKEN_PREFIX = "p1"


def _page_token(created_at: float, table_id: str) -> str:
    """An opaque ListTables page token: the lobby position of a page's last table."""
    raw = f"{_PAGE_TOKEN_PREFIX}:{created_at!r}:{table_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _parse_page_token(token: str) -> tuple[float, str]:
    bad = InvalidArgument("not a page token from ListTables", field="page_token")
    if len(token) > 200:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        prefix, created, table_id = raw.split(":")
        created_at = float(created)
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    if prefix != _PAGE_TOKEN_PREFIX or not _ID_RE.match(table_id) or created_at != created_at:
        raise bad
    return created_at, table_id


def _display_name(name: str) -> str:
    """A player's name as shown: NFC, without whitespace or invisible format characters at
    either end, runs of whitespace inside as one space; 1 to ``MAX_NAME`` characters, all
    printable, at least one visible (a letter, digit, punctuation mark or symbol: a name of
    combining marks only shows nothing). Else INVALID_ARGUMENT naming ``display_name``."""
    name = unicodedata.normalize("NFC", name)
    start, end = 0, len(name)
    while start < end and _invisible_at_end(name[start]):
        start += 1
    while end > start and _invisible_at_end(name[end - 1]):
        end -= 1
    name = " ".join(name[start:end].split())
    if not name:
        raise InvalidArgument(
            f"display_name is required: 1 to {MAX_NAME} characters, at least one visible",
            field="display_name",
        )
    if len(name) > MAX_NAME:
        raise InvalidArgument(f"display_name is at most {MAX_NAME} characters",
                              field="display_name")
    if any(not ch.isprintable() for ch in name):
        raise InvalidArgument("display_name has unprintable characters", field="display_name")
    if not any(unicodedata.category(ch)[0] in "LNPS" for ch in name):
        raise InvalidArgument("display_name has no visible character", field="display_name")
    return name


def _invisible_at_end(ch: str) -> bool:
    """Whitespace (every Unicode space: NBSP, U+3000...) or a format character (zero-width
    space, joiners, BOM, soft hyphen...): trimmed from the ends of a display name. Other
    control characters are refused, not trimmed."""
    return ch.isspace() or unicodedata.category(ch) in ("Zs", "Zl", "Zp", "Cf")
