"""The gRPC servicer: the RPCs of ``tute.v1.TuteService``.

Each RPC validates its request (INVALID_ARGUMENT naming the field), authenticates the caller
(the seat token, owner token or player credential in the ``authorization`` metadata; see
:mod:`service.identity`), names it for the per-caller
limits, turns the request into domain arguments for :mod:`service.tables`, and builds the
response from the domain results (through :mod:`service.wire`). Below this module nothing
takes or returns a request or response message.

A handler reads only ``context.invocation_metadata()`` and ``context.peer()``, and reports
failure by raising a :class:`~service.errors.ServiceError` (the interceptor sends it as a
status), so any transport that offers those two serves the same servicer.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import secrets
import unicodedata
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import structlog
from google.protobuf import timestamp_pb2

from tute.v1 import matchmaking_pb2, player_pb2, service_pb2, service_pb2_grpc, table_pb2

from . import wire
from .auth import bearer_token, hash_token, new_token
from .callers import CALLER
from .durable import MatchSummary
from .errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    ServiceError,
    Unavailable,
)
from .identity import Identity
from .interceptor import as_service_error
from .matchmaking.service import Matched, Matchmaker, Waiting
from .players import MODES as RATED_MODES
from .players import LeaderboardEntry, Player, Standing
from .reasons import Reason
from .tables import changes
from .tables.access import (
    TABLE_ID_RE,
    check_opening,
    check_table_id,
    opened_seat,
    require_owner_or_seat,
    require_seat,
    seat_of,
    still_seated,
)
from .tables.commit import Repeated
from .tables.fair import check_client_seed
from .tables.model import (
    BOT,
    BOT_LEVELS,
    HUMAN,
    PLAYING,
    PRESET_NAMES,
    PRIVATE,
    WAITING,
    TableRecord,
    action_kind,
)
from .tables.service import TableService
from .tables.streams import Snapshot
from .wire import framing

log = structlog.get_logger("tute.rpc")
T = TypeVar("T")

MAX_ID = 64
MAX_NAME = 32
MAX_REQUEST_ID = 64
MAX_PAGE_TOKEN = 200
DEFAULT_PAGE = 50
MAX_PAGE = 200
RECENT_MATCHES = 10
"""GetPlayer's recent matches."""
INVITE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _token(context: Any) -> str | None:
    return bearer_token(context.invocation_metadata())


class TuteServicer(service_pb2_grpc.TuteServiceServicer):
    """The RPCs over one replica's :class:`TableService`."""

    def __init__(
        self,
        tables: TableService,
        matchmaker: Matchmaker | None = None,
        identity: Identity | None = None,
    ) -> None:
        """``identity``: who player credentials are (default: the players of
        ``tables.players``, without JWTs)."""
        self.tables = tables
        self.matchmaker = matchmaker if matchmaker is not None else Matchmaker(tables)
        self.identity = (
            identity
            if identity is not None
            else Identity(tables.players, None, tables.now, check_name=display_name)
        )

    async def _open(
        self,
        check: Callable[[TableRecord, str | None, str], T],
        rec: TableRecord,
        token: str | None,
    ) -> tuple[T, str]:
        """:func:`~service.tables.access.check_opening` with this server's players."""
        return await check_opening(check, rec, token, self.identity.seat_player)

    def _caller(self, context: Any) -> None:
        """Who calls, for the per-caller limits (service.callers.CALLER)."""
        CALLER.set(self.tables.callers.caller(context.peer(), context.invocation_metadata()))

    async def CreateTable(
        self, request: service_pb2.CreateTableRequest, context: Any
    ) -> service_pb2.CreateTableResponse:
        self._caller(context)
        req, tables = request, self.tables
        try:
            preset, rules = wire.rules_from_proto(req.rules)
        except wire.BadField as exc:
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
                raise InvalidArgument(f"seat must be from 0 to {rules.players - 1}", field="seat")
            name = display_name(req.display_name)
            client_seed = check_client_seed(req.client_seed)
        elif req.HasField("seat"):
            raise InvalidArgument("seat is only meaningful with take_seat", field="seat")
        elif req.client_seed:
            raise InvalidArgument(
                "client_seed is only meaningful with take_seat", field="client_seed"
            )
        await tables.limits.create_table()
        bound = await self.identity.binding(_token(context)) if seat is not None else None
        counts = await tables.store.count_tables()
        if counts.get(WAITING, 0) + counts.get(PLAYING, 0) >= tables.settings.max_tables:
            raise ResourceExhausted(
                "too many open tables on this server; try later", reason=Reason.TOO_MANY_TABLES
            )
        table_id = secrets.token_hex(8)
        invite = "".join(secrets.choice(INVITE_ALPHABET) for _ in range(8)) if private else ""
        owner_token, owner_hash = new_token()
        rec = changes.new_table(
            table_id,
            preset,
            rules,
            private=private,
            invite_code=invite,
            created_at=tables.clock(),
            owner_token_hash=owner_hash,
        )
        await tables.commits.create(rec)
        structlog.contextvars.bind_contextvars(table_id=table_id)
        log.info("table_created", preset=preset, players=rules.players, private=private)
        resp = service_pb2.CreateTableResponse(
            table_id=table_id, invite_code=invite, owner_token=owner_token
        )
        if seat is not None:
            token, token_hash = new_token()
            taken = seat
            now = tables.clock()
            away = tables.settings.disconnect_forfeit_s > 0
            done = await tables.commits.mutate(
                table_id,
                lambda r: changes.take_seat(
                    r,
                    taken,
                    HUMAN,
                    name,
                    token_hash,
                    "",
                    now=now,
                    away_from_start=away,
                    client_seed=client_seed,
                    player_id=bound.player_id if bound is not None else "",
                ),
            )
            rec = done.record
            resp.seat = seat
            resp.seat_token = token
            structlog.contextvars.bind_contextvars(seat=seat)
        resp.table.CopyFrom(wire.table_to_proto(rec))
        return resp

    async def ListTables(
        self, request: service_pb2.ListTablesRequest, context: Any
    ) -> service_pb2.ListTablesResponse:
        req = request
        size = _page_size(req.page_size)
        if req.players not in (0, 2, 3, 4):
            raise InvalidArgument("players must be 2, 3 or 4 (0: any)", field="players")
        if req.preset and req.preset not in PRESET_NAMES:
            raise InvalidArgument("unknown preset", field="preset")
        after: tuple[float, str] | None = None
        if req.page_token:
            created_at, table_id = _parse_opaque(
                req.page_token, ("lt1",), (float, str), "ListTables"
            )
            if not TABLE_ID_RE.match(table_id):
                raise _not_a_page_token("ListTables")
            after = (created_at, table_id)
        records, last = await self.tables.commits.lobby_page(req.preset, req.players, after, size)
        resp = service_pb2.ListTablesResponse(tables=[wire.table_to_proto(rec) for rec in records])
        if last is not None:
            resp.next_page_token = _opaque(("lt1", last.created_at, last.table_id))
        return resp

    async def JoinTable(
        self, request: service_pb2.JoinTableRequest, context: Any
    ) -> service_pb2.JoinTableResponse:
        """Take a seat. The caller's token, if it sent one, must not open a seat at this table
        already (FAILED_PRECONDITION ALREADY_SEATED; a player may sit at several tables). A
        player credential binds the seat to its player; any other token is ignored."""
        self._caller(context)
        req, tables = request, self.tables
        target = req.WhichOneof("target")
        if target is None:
            raise InvalidArgument("give table_id or invite_code", field="table_id")
        name = display_name(req.display_name)
        client_seed = check_client_seed(req.client_seed)
        if target == "invite_code":
            table_id = await self._find_invite(req.invite_code)
        else:
            table_id = check_table_id(req.table_id)
            rec = await tables.load(table_id)
            if rec.visibility == PRIVATE:
                raise PermissionDenied(
                    "this table is private: join it with its invite code",
                    reason=Reason.PRIVATE_TABLE,
                )
        seat = req.seat if req.HasField("seat") else None
        caller = _token(context)
        caller_hash = hash_token(caller) if caller is not None else ""
        bound = await self.identity.binding(caller)
        player_id = bound.player_id if bound is not None else ""
        token, token_hash = new_token()
        structlog.contextvars.bind_contextvars(table_id=table_id)
        now = tables.clock()
        away = tables.settings.disconnect_forfeit_s > 0

        def change(r: TableRecord) -> changes.Changed[int]:
            if caller_hash and opened_seat(r, caller, player_id) is not None:
                raise FailedPrecondition(
                    "this token already opens a seat at this table",
                    reason=Reason.ALREADY_SEATED,
                )
            return changes.take_seat(
                r,
                seat,
                HUMAN,
                name,
                token_hash,
                "",
                now=now,
                away_from_start=away,
                client_seed=client_seed,
                player_id=player_id,
            )

        done = await tables.commits.mutate(table_id, change)
        got = done.result
        structlog.contextvars.bind_contextvars(seat=got)
        log.info("seat_joined", seat=got)
        rec = done.record
        return service_pb2.JoinTableResponse(
            table_id=table_id,
            seat=got,
            seat_token=token,
            view=wire.view_to_proto(rec, got),
        )

    async def _find_invite(self, invite_code: str) -> str:
        """The table an invite code opens (NOT_FOUND INVITE_NOT_FOUND), within the limits."""
        code = invite_code.strip().upper()
        if not code or len(code) > MAX_ID:
            raise InvalidArgument("not an invite code", field="invite_code")
        limits = self.tables.limits
        await limits.invite_attempt()
        found = await self.tables.store.find_invite(code)
        if found is None:
            raise NotFound("no table has this invite code", reason=Reason.INVITE_NOT_FOUND)
        await limits.invite_found()
        return found

    async def AddBot(
        self, request: service_pb2.AddBotRequest, context: Any
    ) -> service_pb2.AddBotResponse:
        self._caller(context)
        req, tables = request, self.tables
        table_id = check_table_id(req.table_id)
        level = req.level or "random"
        if level not in BOT_LEVELS:
            raise InvalidArgument(
                "unknown bot level; known: " + ", ".join(sorted(BOT_LEVELS)), field="level"
            )
        seat = req.seat if req.HasField("seat") else None
        await tables.limits.add_bot()  # first: a refusal costs the server next to nothing
        token = _token(context)
        rec = await tables.load(table_id)
        _, player_id = await self._open(require_owner_or_seat, rec, token)
        budget = tables.settings.max_bot_seats
        if budget > 0 and await tables.store.count_bot_seats() >= budget:
            raise ResourceExhausted(
                "the server has as many bots as it can play; try later",
                reason=Reason.TOO_MANY_BOTS,
            )
        now = tables.clock()
        away = tables.settings.disconnect_forfeit_s > 0

        def change(r: TableRecord) -> changes.Changed[int]:
            require_owner_or_seat(r, token, player_id)
            return changes.take_seat(
                r, seat, BOT, f"Bot ({level})", "", level, now=now, away_from_start=away
            )

        done = await tables.commits.mutate(table_id, change, loaded=rec)
        rec = done.record
        return service_pb2.AddBotResponse(seat=done.result, table=wire.table_to_proto(rec))

    async def LeaveTable(
        self, request: service_pb2.LeaveTableRequest, context: Any
    ) -> service_pb2.LeaveTableResponse:
        tables = self.tables
        table_id = check_table_id(request.table_id)
        token = _token(context)
        rec = await tables.load(table_id)
        seat, player_id = await self._open(require_seat, rec, token)
        now = tables.clock()
        done = await tables.commits.mutate(
            table_id,
            lambda r: changes.leave(r, still_seated(r, rec, token, player_id, seat), now=now),
            loaded=rec,
        )
        if done.result:
            tables.metrics.actions.labels("forfeit", "applied").inc()
        log.info("seat_left", seat=seat, forfeited=done.result)
        return service_pb2.LeaveTableResponse(forfeited=done.result)

    async def GetTable(self, request: service_pb2.GetTableRequest, context: Any) -> wire.Encoded:
        """The caller's view, as the bytes of a ``GetTableResponse``
        (:mod:`service.wire.view_bytes`)."""
        rec = await self.tables.load(request.table_id)
        seat, _ = await self._open(seat_of, rec, _token(context))
        return wire.with_view(service_pb2.GetTableResponse, wire.view_bytes(rec, seat))

    async def SubmitAction(
        self, request: service_pb2.SubmitActionRequest, context: Any
    ) -> service_pb2.SubmitActionResponse | wire.Encoded:
        """The action applied: the response, with the caller's view as bytes unless it asks
        ``omit_view`` (:mod:`service.wire.view_bytes`)."""
        table_id = check_table_id(request.table_id)
        return await self._submit(
            table_id, request, _token(context), with_view=not request.omit_view
        )

    async def _submit(
        self,
        table_id: str,
        req: service_pb2.SubmitActionRequest,
        token: str | None,
        *,
        with_view: bool,
    ) -> service_pb2.SubmitActionResponse | wire.Encoded:
        """Apply one action of the seat ``token`` opens at ``table_id`` (SubmitAction and
        PlayTable's submits)."""
        tables = self.tables
        if not req.HasField("action"):
            raise InvalidArgument("action is required", field="action")
        try:
            action = wire.action_from_proto(req.action)
        except wire.BadField as exc:
            raise InvalidArgument(exc.description, field=exc.field) from None
        if len(req.request_id) > MAX_REQUEST_ID:
            raise InvalidArgument(
                f"request_id is at most {MAX_REQUEST_ID} characters", field="request_id"
            )
        # presence: for the view alone. The record this replica saw committed last, if it
        # knows it (no store read): the commit checks the table has not moved on since.
        rec, fresh = await tables.commits.load_recent(table_id, presence=with_view)
        try:
            seat, player_id = await self._open(require_seat, rec, token)
        except ServiceError:
            if fresh:
                raise
            rec, fresh = await tables.load(table_id, presence=with_view), True
            seat, player_id = await self._open(require_seat, rec, token)
        key = f"{seat}:{req.request_id}" if req.request_id else ""
        expect = req.expected_version if req.HasField("expected_version") else None
        now = tables.clock()

        def respond(
            r: TableRecord, events: list[wire.EventVariants]
        ) -> service_pb2.SubmitActionResponse | wire.Encoded:
            msg = service_pb2.SubmitActionResponse(
                table_version=r.version, events=[v.for_seat(seat) for v in events]
            )
            if not with_view:
                return msg
            # The view as bytes, after the rest.
            return wire.with_view(
                service_pb2.SubmitActionResponse, wire.view_bytes(r, seat), msg.SerializeToString()
            )

        kind = action_kind(action)
        try:
            done = await tables.commits.mutate_once(
                table_id,
                key,
                lambda r: changes.act(
                    r, still_seated(r, rec, token, player_id, seat), action, now=now
                ),
                respond,
                expect=expect,
                loaded=rec,
                fresh=fresh,
            )
        except ServiceError as exc:
            if isinstance(exc, FailedPrecondition) and exc.engine_reason:
                tables.metrics.actions.labels(kind, exc.engine_reason).inc()
            raise
        if isinstance(done, Repeated):
            return service_pb2.SubmitActionResponse.FromString(done.response)
        tables.metrics.child(tables.metrics.actions, kind, "applied").inc()
        assert done.response is not None
        return done.response

    async def GetMatchRecord(
        self, request: service_pb2.GetMatchRecordRequest, context: Any
    ) -> service_pb2.GetMatchRecordResponse:
        """The record of a finished match, to anyone (no token needed, any token ignored), and
        with ``include_replay`` the engine's re-run of it, step by step."""
        record = await self.tables.match_record(request.table_id)
        resp = service_pb2.GetMatchRecordResponse(record=wire.record_to_proto(record, ""))
        if request.include_replay:
            for index, events in wire.replay_to_proto(record):
                resp.replay.add(action_index=index, events=events)
        return resp

    async def WatchTable(
        self, request: service_pb2.WatchTableRequest, context: Any
    ) -> AsyncGenerator[WatchItem, None]:
        """The table's events for the caller: a snapshot as a message, events as the bytes
        of their ``WatchTableResponse`` (see "A watch stream's messages" below; the gRPC
        handler sends them as they are)."""
        self._caller(context)
        resume_after = request.resume_after if request.HasField("resume_after") else None
        batch = request.batch_events
        items = self.tables.streams.watch(
            request.table_id, _token(context), resume_after, self.identity.seat_player, batch=batch
        )
        async with contextlib.aclosing(items):
            # No name holds an item while the stream waits for the next one: a snapshot's
            # record is not kept alive for the stream's life (memory per open stream).
            while True:
                try:
                    item = await anext(items)
                except StopAsyncIteration:
                    return
                if isinstance(item, Snapshot):
                    yield _snapshot(item)
                elif batch:
                    yield batch_response(item)
                else:  # one event per list
                    yield event_response(item[0])
                del item

    async def PlayTable(
        self, requests: AsyncIterator[service_pb2.PlayTableRequest], context: Any
    ) -> None:
        """WatchTable and SubmitAction on one stream: the first message opens the watch, each
        later one is a submit answered by one ``result`` (see the proto)."""
        first = await anext(aiter(requests), None)
        if first is None:
            return  # the client closed its side before asking anything
        if first.WhichOneof("kind") != "watch":
            raise InvalidArgument("the first PlayTable message must be a watch", field="watch")
        table_id, token = first.watch.table_id, _token(context)
        writing = asyncio.Lock()  # one message at a time on the call

        async def write(message: service_pb2.PlayTableResponse | bytes) -> None:
            async with writing:
                await context.write(message)

        async def watch() -> None:
            async with contextlib.aclosing(self.WatchTable(first.watch, context)) as items:
                async for item in items:
                    await write(play_watch(item))

        async def submits() -> None:
            async for req in requests:
                request_id = req.submit.request_id
                try:
                    result = await self._play_submit(table_id, req, token)
                except Exception as exc:
                    err = as_service_error(exc)
                    if err is None:
                        raise  # a bug: the interceptor answers INTERNAL and logs it
                    log.info("rpc_error", code=err.code.name, reason=err.reason, field=err.field)
                    result = service_pb2.ActionResult(
                        request_id=request_id[:MAX_REQUEST_ID], rejected=_rejected(err)
                    )
                await write(service_pb2.PlayTableResponse(result=result))

        await _both(watch(), submits())

    async def _play_submit(
        self, table_id: str, req: service_pb2.PlayTableRequest, token: str | None
    ) -> service_pb2.ActionResult:
        """One later PlayTable message: a submit applied, or a ServiceError."""
        if req.WhichOneof("kind") != "submit":
            raise InvalidArgument(
                "after the first PlayTable message every message must be a submit",
                field="submit",
            )
        submit = req.submit
        if submit.table_id and submit.table_id != table_id:
            raise InvalidArgument(
                "submit.table_id must be empty or the stream's table", field="submit.table_id"
            )
        done = await self._submit(table_id, submit, token, with_view=False)
        assert not isinstance(done, wire.Encoded)  # without a view the response is a message
        return service_pb2.ActionResult(
            request_id=submit.request_id, table_version=done.table_version
        )

    async def FindMatch(
        self, request: service_pb2.FindMatchRequest, context: Any
    ) -> service_pb2.FindMatchResponse:
        self._caller(context)
        ticket, progress = await self.matchmaker.find_match(_token(context), request.mode)
        return service_pb2.FindMatchResponse(
            ticket_id=ticket.ticket_id, waiting=_waiting_to_proto(progress)
        )

    async def WatchTicket(
        self, request: service_pb2.WatchTicketRequest, context: Any
    ) -> AsyncGenerator[matchmaking_pb2.WatchTicketResponse, None]:
        self._caller(context)
        if self.tables.closing:
            raise Unavailable("the server is shutting down", reason=Reason.SHUTTING_DOWN)
        items = self.matchmaker.watch(request.ticket_id, _token(context))
        async with contextlib.aclosing(items):
            async for item in items:
                if isinstance(item, Matched):
                    yield matchmaking_pb2.WatchTicketResponse(
                        matched=matchmaking_pb2.TicketMatched(
                            table_id=item.table_id, seat=item.seat, bot_seats=item.bot_seats
                        )
                    )
                else:
                    yield matchmaking_pb2.WatchTicketResponse(waiting=_waiting_to_proto(item))

    # -- players ---------------------------------------------------------------------------

    async def CreatePlayer(
        self, request: service_pb2.CreatePlayerRequest, context: Any
    ) -> service_pb2.CreatePlayerResponse:
        self._caller(context)
        name = display_name(request.display_name)
        await self.tables.limits.create_table()
        player, token = await self.identity.create_guest(name)
        standings = await self.tables.players.standings(player.player_id)
        return service_pb2.CreatePlayerResponse(
            player=_player_to_proto(player, standings, []), player_token=token
        )

    async def GetPlayer(
        self, request: service_pb2.GetPlayerRequest, context: Any
    ) -> service_pb2.GetPlayerResponse:
        player, own = await self._player_and_viewer(request.player_id, context, own_if_empty=True)
        pid = player.player_id
        standings = await self.tables.players.standings(pid)
        recent = await self.tables.history.list_matches(
            pid, limit=RECENT_MATCHES, ranked_only=not own
        )
        return service_pb2.GetPlayerResponse(player=_player_to_proto(player, standings, recent))

    async def ListLeaderboard(
        self, request: service_pb2.ListLeaderboardRequest, context: Any
    ) -> service_pb2.ListLeaderboardResponse:
        req = request
        if req.mode not in RATED_MODES:
            raise InvalidArgument(
                "mode must be one of " + ", ".join(f'"{m}"' for m in RATED_MODES), field="mode"
            )
        size = _page_size(req.page_size)
        after, offset = None, 0
        if req.page_token:
            display, pid, offset = _parse_opaque(
                req.page_token, ("lb1", req.mode), (float, str, int), "ListLeaderboard"
            )
            after = (display, pid)
        rows = await self.tables.players.leaderboard(req.mode, after=after, limit=size + 1)
        resp = service_pb2.ListLeaderboardResponse(
            entries=[_board_row(offset + i + 1, row, req.mode) for i, row in enumerate(rows[:size])]
        )
        if len(rows) > size:
            last = rows[size - 1]
            resp.next_page_token = _opaque(
                ("lb1", req.mode, last.standing.display, last.player.player_id, offset + size)
            )
        return resp

    async def ListMatches(
        self, request: service_pb2.ListMatchesRequest, context: Any
    ) -> service_pb2.ListMatchesResponse:
        req = request
        size = _page_size(req.page_size)
        player, own = await self._player_and_viewer(req.player_id, context)
        pid = player.player_id
        before = None
        if req.page_token:
            finished, table_id = _parse_opaque(
                req.page_token, ("lm1", pid, own), (int, str), "ListMatches"
            )
            before = (finished, table_id)
        rows = await self.tables.history.list_matches(
            pid, before=before, limit=size + 1, ranked_only=not own
        )
        resp = service_pb2.ListMatchesResponse(matches=[_match_to_proto(m) for m in rows[:size]])
        if len(rows) > size:
            last = rows[size - 1]
            resp.next_page_token = _opaque(("lm1", pid, own, last.finished_at_ms, last.table_id))
        return resp

    async def _player_and_viewer(
        self, player_id: str, context: Any, *, own_if_empty: bool = False
    ) -> tuple[Player, bool]:
        """The player of ``player_id`` (INVALID_ARGUMENT, NOT_FOUND PLAYER_NOT_FOUND; empty:
        the caller's own, with ``own_if_empty``), and whether the caller's credential is that
        player's own."""
        if len(player_id) > MAX_ID or not (player_id or own_if_empty):
            raise InvalidArgument(
                f"player_id is required (at most {MAX_ID} characters)", field="player_id"
            )
        caller = await self.identity.optional_player(_token(context))
        if not player_id:
            if caller is None:
                raise InvalidArgument(
                    "player_id is required (empty: the caller's own, with its credential)",
                    field="player_id",
                )
            return caller, True
        player = await self.tables.players.get(player_id)
        if player is None or player.bot_level:
            raise NotFound("no player has this id", reason=Reason.PLAYER_NOT_FOUND)
        return player, caller is not None and caller.player_id == player.player_id


def _page_size(page_size: int) -> int:
    if page_size < 0:
        raise InvalidArgument("page_size must not be negative", field="page_size")
    return min(page_size or DEFAULT_PAGE, MAX_PAGE)


def _opaque(parts: tuple[object, ...]) -> str:
    """An opaque page token of JSON-able parts (the first ones name the list it pages)."""
    raw = json.dumps(list(parts), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _not_a_page_token(rpc: str) -> InvalidArgument:
    return InvalidArgument(
        f"page_token is not a page token from {rpc} for this request", field="page_token"
    )


def _parse_opaque(
    token: str, scope: tuple[object, ...], kinds: tuple[type, ...], rpc: str
) -> tuple[Any, ...]:
    """The parts after ``scope`` of a token :func:`_opaque` made for the same list, each of
    its kind; INVALID_ARGUMENT naming ``page_token`` otherwise."""
    bad = _not_a_page_token(rpc)
    if len(token) > MAX_PAGE_TOKEN:
        raise bad
    try:
        parts = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except ValueError:
        raise bad from None
    n = len(scope)
    if not isinstance(parts, list) or len(parts) != n + len(kinds) or parts[:n] != list(scope):
        raise bad
    rest = parts[n:]
    for value, kind in zip(rest, kinds, strict=True):
        ok = isinstance(value, kind) and not isinstance(value, bool)
        if kind is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            ok = ok and math.isfinite(value)
        if not ok or (kind is int and value < 0):
            raise bad
    return tuple(float(v) if k is float else v for v, k in zip(rest, kinds, strict=True))


def _rating_to_proto(mode: str, standing: Standing) -> player_pb2.ModeRating:
    return player_pb2.ModeRating(
        mode=mode,
        rating=round(standing.display),
        provisional=standing.provisional,
        games=standing.games,
        wins=standing.wins,
    )


def _timestamp(ms: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromMilliseconds(ms)
    return ts


def _match_to_proto(m: MatchSummary) -> player_pb2.MatchSummary:
    return player_pb2.MatchSummary(
        table_id=m.table_id,
        seat=m.seat,
        ranked=m.ranked,
        start_time=_timestamp(m.started_at_ms),
        end_time=_timestamp(m.finished_at_ms),
    )


def _player_to_proto(
    player: Player, standings: dict[str, Standing], recent: list[MatchSummary]
) -> player_pb2.Player:
    return player_pb2.Player(
        player_id=player.player_id,
        display_name=player.name,
        ratings=[_rating_to_proto(m, standings[m]) for m in RATED_MODES],
        recent_matches=[_match_to_proto(m) for m in recent],
    )


def _board_row(rank: int, row: LeaderboardEntry, mode: str) -> player_pb2.LeaderboardEntry:
    return player_pb2.LeaderboardEntry(
        rank=rank,
        player_id=row.player.player_id,
        display_name=row.player.name,
        rating=_rating_to_proto(mode, row.standing),
    )


# ---------------------------------------------------------------------------------------------
# A watch stream's messages, written straight from the events' stored bytes
# ---------------------------------------------------------------------------------------------
# An event reaches a watcher as the bytes the store keeps for its audience (StoredEvent). A
# WatchTableResponse carrying events is those bytes framed as protobuf embedded messages (a
# field key and a length each), so the stream writes the framing around them instead of
# parsing each event into a message, copying it into a response and serializing it again. The
# bytes are exactly what serializing the message gives (tests/service/test_stream_bytes.py);
# the gRPC handlers pass bytes through (interceptor.passing_bytes), and a transport that needs
# the message (Connect's JSON) parses them back (watch_message).

WatchItem = service_pb2.WatchTableResponse | bytes
"""What WatchTable yields: a message (a snapshot), or a serialized ``WatchTableResponse``."""


_EVENT = framing.key(service_pb2.WatchTableResponse, "event")
_EVENTS = framing.key(service_pb2.WatchTableResponse, "events")
_BATCH_EVENT = framing.key(service_pb2.EventBatch, "events")
_PLAY_WATCH = framing.key(service_pb2.PlayTableResponse, "watch")
_SHORT = framing.SHORT
_length = framing.length
_field = framing.field


def event_response(event: bytes) -> bytes:
    """``WatchTableResponse{event}`` of one serialized event."""
    return _field(_EVENT, event)


def batch_response(events: Sequence[bytes]) -> bytes:
    """``WatchTableResponse{events: EventBatch{events}}`` of serialized events, in order."""
    lengths, tag = framing.LENGTHS, _BATCH_EVENT
    body = b"".join(
        [tag + lengths[len(e)] + e if len(e) < _SHORT else _field(tag, e) for e in events]
    )
    return _EVENTS + _length(len(body)) + body


def play_watch(item: WatchItem) -> service_pb2.PlayTableResponse | bytes:
    """``PlayTableResponse{watch}`` of what WatchTable yielded (bytes stay bytes)."""
    if isinstance(item, bytes):
        return _field(_PLAY_WATCH, item)
    return service_pb2.PlayTableResponse(watch=item)


def watch_message(item: WatchItem) -> service_pb2.WatchTableResponse:
    """What WatchTable yielded, as the message."""
    if isinstance(item, bytes):
        return service_pb2.WatchTableResponse.FromString(item)
    return item


def _snapshot(item: Snapshot) -> service_pb2.WatchTableResponse:
    return service_pb2.WatchTableResponse(snapshot=wire.view_to_proto(item.record, item.seat))


def _waiting_to_proto(w: Waiting) -> matchmaking_pb2.TicketWaiting:
    return matchmaking_pb2.TicketWaiting(
        window=round(w.window), queued=w.queued, waited_s=w.waited_s, bots_in_s=w.bots_in_s
    )


def display_name(name: str) -> str:
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
        raise InvalidArgument(
            f"display_name is at most {MAX_NAME} characters", field="display_name"
        )
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


def _rejected(err: ServiceError) -> service_pb2.ActionRejected:
    """What PlayTable answers for a submit SubmitAction would have refused with ``err``."""
    return service_pb2.ActionRejected(
        code=err.code.value[0],
        reason=err.reason,
        message=err.message,
        metadata=err.metadata,
        field=err.field or "",
    )


async def _both(watching: Coroutine[Any, Any, None], submitting: Coroutine[Any, Any, None]) -> None:
    """Run a PlayTable's watch and its submits together until the watch ends (or either
    fails: the other is cancelled). The submits ending (the client closed its side) leaves the
    watch going."""
    watch = asyncio.ensure_future(watching)
    submits = asyncio.ensure_future(submitting)
    try:
        await asyncio.wait((watch, submits), return_when=asyncio.FIRST_COMPLETED)
        if submits.done() and not watch.done():
            submits.result()  # raises what the submits raised
            await watch
        else:
            watch.result()
    finally:
        for task in (watch, submits):
            if not task.done():
                task.cancel()
        await asyncio.gather(watch, submits, return_exceptions=True)
