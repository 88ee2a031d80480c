"""``TuteClient``: the Python SDK of a tute server (asyncio, over the generated gRPC stubs).

It keeps the plumbing out of the caller's way:

- one method per RPC, with keyword arguments, returning the typed response messages
  (``get_table`` returns the ``TableView`` itself);
- the seat token of each table it sat at (and the owner token of each table it created),
  sent on every later call about that table; :meth:`TuteClient.export_tokens` and
  :meth:`TuteClient.import_tokens` carry them over a restart of the process;
- :meth:`TuteClient.watch`: the table's events as an async iterator of :class:`Update`,
  each with a :class:`~clients.table.Table` model kept up to date from the stream. It
  reconnects after UNAVAILABLE or a dropped connection (to the next server of ``target``
  when several are given), with bounded exponential backoff and jitter, resumes after the
  last event it delivered, and replaces the model when the server sends a fresh snapshot:
  the caller sees every event once, in order, across server restarts and replica changes;
- :meth:`TuteClient.submit` with an automatic ``request_id``, retried on UNAVAILABLE with the
  same id, so it applies once;
- every refusal raised as a typed :mod:`clients.errors` exception with the status, the
  ``ErrorInfo`` reason and the ``BadRequest`` field.

Play a 2-player match against a bot, from the stream alone (``localhost:50051`` is
``make run``'s server):

>>> import asyncio
>>> from clients import TuteClient
>>> async def play() -> str:
...     async with TuteClient("localhost:50051") as client:
...         created = await client.create_table(
...             preset="corriente-6", options={"target_points": 1}, take_seat=True,
...             display_name="Ana")
...         await client.add_bot(table_id=created.table_id, level="random")
...         async for update in client.watch(created.table_id):
...             table = update.table
...             if table.finished:
...                 return f"over after event {table.last_sequence}"
...             if table.legal_actions:  # our turn: play the first legal action
...                 await client.submit(table_id=table.table_id, action=table.legal_actions[0])
...     return "the stream ended"
>>> asyncio.run(play()).startswith("over after event")
True

Errors are typed and carry the server's reason code and field:

>>> from clients import IllegalMove, InvalidArgument, NotFound
>>> async def mistakes() -> None:
...     async with TuteClient("localhost:50051") as client:
...         try:
...             await client.create_table(preset="no-such-preset")
...         except InvalidArgument as err:
...             print("bad field:", err.field)
...         try:
...             await client.get_table(table_id="no-such-table")
...         except NotFound as err:
...             print("not found:", err.reason)
...         created = await client.create_table(preset="corriente-6", take_seat=True,
...                                             display_name="Ana")
...         try:
...             await client.submit(table_id=created.table_id, action="1O")
...         except IllegalMove as err:
...             print("refused:", err.reason)
>>> asyncio.run(mistakes())
bad field: rules.preset
not found: TABLE_NOT_FOUND
refused: MATCH_NOT_STARTED
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, TypedDict

import grpc

from tute.v1 import (
    action_pb2,
    event_pb2,
    matchmaking_pb2,
    record_pb2,
    rules_pb2,
    service_pb2,
    service_pb2_grpc,
    table_pb2,
    view_pb2,
)

from .cards import parse_action
from .errors import InvalidArgument, TuteError, Unavailable, error_from_rpc
from .table import Table

DEFAULT_TARGET: Final = "localhost:50051"

CHANNEL_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    # Reconnect quickly after a server restart (gRPC's own default waits up to 2 minutes).
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.keepalive_time_ms", 30_000),
)
"""Channel options of :class:`TuteClient` unless ``channel_options`` says otherwise."""

TABLE_HEADER: Final = "tute-table-id"
"""The metadata every call about a table carries, its value the table's id. The servers ignore
it; a proxy in front of several (deploy/envoy) hashes on it, so that all of one table's calls
reach one server (docs/frontend.md, "Routing")."""

_STREAM_RETRY: Final = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED})
_SUBMIT_RETRY: Final = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


def _table_metadata(table_id: str, token: str | None = None) -> tuple[tuple[str, str], ...]:
    """The metadata of a call about ``table_id``: its routing header, and the token if any."""
    route = (TABLE_HEADER, table_id)
    return (route, ("authorization", f"Bearer {token}")) if token else (route,)


@dataclasses.dataclass(frozen=True)
class Backoff:
    """How long to wait before reconnecting: ``initial_s * multiplier ** attempt``, at most
    ``max_s``, less a random part of up to ``jitter`` of it (so that clients cut off together
    do not come back together). After ``give_up_after_s`` seconds of failures without a
    success, the last error is raised (``None``: never give up)."""

    initial_s: float = 0.1
    max_s: float = 5.0
    multiplier: float = 2.0
    jitter: float = 0.5
    give_up_after_s: float | None = 60.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The wait before retry number ``attempt`` (0 for the first)."""
        base = min(self.max_s, self.initial_s * self.multiplier ** min(attempt, 64))
        return base * (1.0 - self.jitter * rng.random())


@dataclasses.dataclass(frozen=True, slots=True)
class Update:
    """One message of :meth:`TuteClient.watch`: an event, or a snapshot that replaced the
    model. ``table`` is the model after it (the same object, changed by later updates)."""

    table: Table
    event: event_pb2.Event | None = None
    snapshot: view_pb2.TableView | None = None

    @property
    def kind(self) -> str:
        """``snapshot`` or the event's kind (``card_played``, ``turn_started`` ...)."""
        if self.event is None:
            return "snapshot"
        return self.event.WhichOneof("kind") or "unknown"


class SavedSeat(TypedDict, total=False):
    """What :meth:`TuteClient.export_tokens` keeps about one table (JSON-friendly)."""

    seat: int
    seat_token: str
    owner_token: str


@dataclasses.dataclass
class _Failures:
    attempts: int = 0
    since: float | None = None


Sleep = Callable[[float], Awaitable[None]]


class TuteClient:
    """A client of one tute server (or of several replicas of it: ``target`` may be a list,
    tried in turn when one is unavailable).

    ``tls``: a TLS channel (``root_certificates``: PEM bytes, default the system's roots).
    ``timeout``: seconds per unary call (``None``: none). ``backoff``: the reconnect policy.
    ``connect_timeout_s``: how long a reconnect waits for the connection to be ready.
    ``sleep``, ``clock`` and ``rng`` are injectable (tests).
    """

    def __init__(
        self,
        target: str | Sequence[str] = DEFAULT_TARGET,
        *,
        tls: bool = False,
        root_certificates: bytes | None = None,
        timeout: float | None = 10.0,
        backoff: Backoff = Backoff(),
        connect_timeout_s: float = 5.0,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        channel_options: Sequence[tuple[str, Any]] = CHANNEL_OPTIONS,
    ) -> None:
        self.targets = [target] if isinstance(target, str) else list(target)
        if not self.targets:
            raise ValueError("no server address given")
        self.tls = tls
        self.root_certificates = root_certificates
        self.timeout = timeout
        self.backoff = backoff
        self.connect_timeout_s = connect_timeout_s
        self._sleep = sleep
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._options = list(channel_options)
        self._channels: dict[int, grpc.aio.Channel] = {}
        self._stubs: dict[int, Any] = {}
        self._index = 0
        self.seat_tokens: dict[str, str] = {}
        """Seat token per table id."""
        self.owner_tokens: dict[str, str] = {}
        """Owner token per table id (tables this client created, where the server gives one)."""
        self.seats: dict[str, int] = {}
        """The caller's seat per table id."""
        self.tables: dict[str, Table] = {}
        """The model of each table :meth:`watch` follows (or followed last)."""
        self.reconnects = 0
        """How many times a stream was resumed after it failed or ended."""
        self.on_retry: Callable[[TuteError, float], None] | None = None
        """Called with the error and the delay before each retry (to tell a user)."""
        self.player_token: str | None = None
        """The player's credential for ranked play (:meth:`find_match`): a guest's player
        token (:meth:`create_player` sets it) or a JWT of the frontend's login. A secret,
        like a seat token. A seat the matchmaker gives is bound to its player."""

    # -- life cycle ------------------------------------------------------------------------
    async def __aenter__(self) -> TuteClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections (open streams end)."""
        channels, self._channels = list(self._channels.values()), {}
        self._stubs = {}
        for channel in channels:
            await channel.close(None)

    @property
    def target(self) -> str:
        """The server calls go to now."""
        return self.targets[self._index]

    def _channel(self) -> grpc.aio.Channel:
        channel = self._channels.get(self._index)
        if channel is None:
            if self.tls:
                creds = grpc.ssl_channel_credentials(self.root_certificates)
                channel = grpc.aio.secure_channel(self.target, creds, options=self._options)
            else:
                channel = grpc.aio.insecure_channel(self.target, options=self._options)
            self._channels[self._index] = channel
        return channel

    def _stub(self) -> Any:
        stub = self._stubs.get(self._index)
        if stub is None:
            stub = service_pb2_grpc.TuteServiceStub(self._channel())  # type: ignore[no-untyped-call]
            self._stubs[self._index] = stub
        return stub

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until the connection to the server is up; :class:`Unavailable` after
        ``timeout`` seconds (default ``connect_timeout_s``)."""
        limit = self.connect_timeout_s if timeout is None else timeout
        try:
            await asyncio.wait_for(self._channel().channel_ready(), limit)
        except TimeoutError:
            raise Unavailable(f"cannot reach the server at {self.target}") from None

    # -- tokens ----------------------------------------------------------------------------
    def export_tokens(self) -> dict[str, SavedSeat]:
        """Seats and tokens per table id, to save (they are secrets: keep them private)."""
        out: dict[str, SavedSeat] = {}
        for table_id in sorted({*self.seat_tokens, *self.owner_tokens}):
            saved: SavedSeat = {}
            if table_id in self.seats:
                saved["seat"] = self.seats[table_id]
            if table_id in self.seat_tokens:
                saved["seat_token"] = self.seat_tokens[table_id]
            if table_id in self.owner_tokens:
                saved["owner_token"] = self.owner_tokens[table_id]
            out[table_id] = saved
        return out

    def import_tokens(self, saved: Mapping[str, SavedSeat]) -> None:
        """Take back what :meth:`export_tokens` returned (for example in a new process)."""
        for table_id, entry in saved.items():
            if "seat" in entry:
                self.seats[table_id] = int(entry["seat"])
            if entry.get("seat_token"):
                self.seat_tokens[table_id] = entry["seat_token"]
            if entry.get("owner_token"):
                self.owner_tokens[table_id] = entry["owner_token"]

    def _auth(self, table_id: str, *, spectator: bool = False) -> tuple[tuple[str, str], ...]:
        """A call about ``table_id``: its routing header, and the seat token held there
        (none for a spectator)."""
        token = None if spectator else self.seat_tokens.get(table_id)
        return _table_metadata(table_id, token)

    # -- calls -----------------------------------------------------------------------------
    async def _call(
        self,
        method: str,
        request: Any,
        metadata: tuple[tuple[str, str], ...] = (),
        *,
        retry_on: frozenset[grpc.StatusCode] = frozenset(),
    ) -> Any:
        """One unary call; with ``retry_on``, sent again (same request) after those codes."""
        failures = _Failures()
        while True:
            server = self._index
            try:
                return await getattr(self._stub(), method)(
                    request, metadata=metadata, timeout=self.timeout
                )
            except grpc.aio.AioRpcError as exc:
                err = error_from_rpc(exc, method)
                if err.code not in retry_on:
                    raise err from None
                await self._pause(failures, err, server)

    async def _pause(self, failures: _Failures, err: TuteError, server: int) -> None:
        """After a failure on server number ``server``: give up (raise ``err``) or wait, move
        on to the next server (unless another call already did), and wait (bounded) for its
        connection."""
        now = self._clock()
        if failures.since is None:
            failures.since = now
        elif (
            self.backoff.give_up_after_s is not None
            and now - failures.since >= self.backoff.give_up_after_s
        ):
            raise err
        delay = self.backoff.delay(failures.attempts, self._rng)
        failures.attempts += 1
        if self.on_retry is not None:
            self.on_retry(err, delay)
        await self._sleep(delay)
        if len(self.targets) > 1 and self._index == server:
            self._index = (server + 1) % len(self.targets)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._channel().channel_ready(), self.connect_timeout_s)

    async def create_table(
        self,
        *,
        preset: str = "",
        options: rules_pb2.RuleOptions | Mapping[str, Any] | None = None,
        private: bool = False,
        take_seat: bool = False,
        seat: int | None = None,
        display_name: str = "",
        client_seed: str = "",
    ) -> service_pb2.CreateTableResponse:
        """CreateTable. ``options`` overrides the preset's (``{"players": 2}`` or a
        ``RuleOptions``). With ``take_seat`` the client keeps the seat token; ``client_seed``
        (with ``take_seat``) enters every hand's shuffle (docs/fair-deals.md)."""
        rules = rules_pb2.Rules(preset=preset)
        if options is not None:
            rules.options.CopyFrom(
                options
                if isinstance(options, rules_pb2.RuleOptions)
                else rules_pb2.RuleOptions(**options)
            )
        req = service_pb2.CreateTableRequest(
            rules=rules,
            visibility=table_pb2.VISIBILITY_PRIVATE if private else table_pb2.VISIBILITY_PUBLIC,
            take_seat=take_seat,
            display_name=display_name,
            client_seed=client_seed,
        )
        if seat is not None:
            req.seat = seat
        resp: service_pb2.CreateTableResponse = await self._call("CreateTable", req)
        if resp.seat_token:
            self.seat_tokens[resp.table_id] = resp.seat_token
            self.seats[resp.table_id] = resp.seat
        owner = getattr(resp, "owner_token", "")
        if owner:
            self.owner_tokens[resp.table_id] = owner
        return resp

    async def list_tables(
        self, *, preset: str = "", players: int = 0, page_size: int = 0, page_token: str = ""
    ) -> service_pb2.ListTablesResponse:
        """ListTables: one page of the lobby (retried when the server is unavailable)."""
        req = service_pb2.ListTablesRequest(
            preset=preset, players=players, page_size=page_size, page_token=page_token
        )
        resp: service_pb2.ListTablesResponse = await self._call(
            "ListTables", req, retry_on=_STREAM_RETRY
        )
        return resp

    async def lobby(self, *, preset: str = "", players: int = 0) -> list[table_pb2.Table]:
        """Every page of ListTables."""
        tables: list[table_pb2.Table] = []
        token = ""
        while True:
            page = await self.list_tables(preset=preset, players=players, page_token=token)
            tables.extend(page.tables)
            token = page.next_page_token
            if not token:
                return tables

    async def join_table(
        self,
        *,
        table_id: str = "",
        invite_code: str = "",
        seat: int | None = None,
        display_name: str,
        client_seed: str = "",
    ) -> service_pb2.JoinTableResponse:
        """JoinTable by ``table_id`` (public tables) or ``invite_code`` as ``display_name``
        (required: 1 to 32 characters, one visible at least); the client keeps the seat
        token. ``client_seed`` enters every hand's shuffle (docs/fair-deals.md)."""
        req = service_pb2.JoinTableRequest(display_name=display_name, client_seed=client_seed)
        if invite_code:
            req.invite_code = invite_code
        else:
            req.table_id = table_id
        if seat is not None:
            req.seat = seat
        resp: service_pb2.JoinTableResponse = await self._call(
            "JoinTable", req, _table_metadata(table_id) if table_id else ()
        )
        self.seat_tokens[resp.table_id] = resp.seat_token
        self.seats[resp.table_id] = resp.seat
        return resp

    async def add_bot(
        self, *, table_id: str, seat: int | None = None, level: str = ""
    ) -> service_pb2.AddBotResponse:
        """AddBot (a server-side bot). Sends the table's owner token when this client created
        the table, else its seat token there, else none."""
        req = service_pb2.AddBotRequest(table_id=table_id, level=level)
        if seat is not None:
            req.seat = seat
        token = self.owner_tokens.get(table_id) or self.seat_tokens.get(table_id)
        metadata = _table_metadata(table_id, token)
        resp: service_pb2.AddBotResponse = await self._call("AddBot", req, metadata)
        return resp

    async def leave_table(self, *, table_id: str) -> service_pb2.LeaveTableResponse:
        """LeaveTable (during a match this forfeits it); the client forgets the seat token."""
        req = service_pb2.LeaveTableRequest(table_id=table_id)
        resp: service_pb2.LeaveTableResponse = await self._call(
            "LeaveTable", req, self._auth(table_id)
        )
        self.seat_tokens.pop(table_id, None)
        self.seats.pop(table_id, None)
        return resp

    async def get_table(self, *, table_id: str, spectator: bool = False) -> view_pb2.TableView:
        """GetTable: the caller's view (a spectator's with ``spectator`` or without a seat
        here). Retried when the server is unavailable."""
        req = service_pb2.GetTableRequest(table_id=table_id)
        resp: service_pb2.GetTableResponse = await self._call(
            "GetTable", req, self._auth(table_id, spectator=spectator), retry_on=_STREAM_RETRY
        )
        return resp.view

    async def get_match_record(self, *, table_id: str) -> record_pb2.MatchRecord:
        """GetMatchRecord: the record of the table's finished match (``FailedPrecondition``
        ``MATCH_NOT_OVER`` before it ends). Needs no token. Retried when the server is
        unavailable."""
        req = service_pb2.GetMatchRecordRequest(table_id=table_id)
        resp: service_pb2.GetMatchRecordResponse = await self._call(
            "GetMatchRecord", req, _table_metadata(table_id), retry_on=_STREAM_RETRY
        )
        return resp.record

    # -- players ---------------------------------------------------------------------------
    def _player_auth(self) -> tuple[tuple[str, str], ...]:
        token = self.player_token
        return (("authorization", f"Bearer {token}"),) if token else ()

    async def create_player(self, display_name: str) -> service_pb2.CreatePlayerResponse:
        """CreatePlayer: a new guest player; its token becomes :attr:`player_token` (keep it
        to play as the same player later: it is shown only once)."""
        resp: service_pb2.CreatePlayerResponse = await self._call(
            "CreatePlayer", service_pb2.CreatePlayerRequest(display_name=display_name)
        )
        self.player_token = resp.player_token
        return resp

    async def get_player(self, player_id: str = "") -> service_pb2.GetPlayerResponse:
        """GetPlayer: a player's profile (ratings per mode, recent matches); ``player_id``
        empty: this client's own (:attr:`player_token`'s). Sends :attr:`player_token` when
        set (the player sees all its own matches)."""
        resp: service_pb2.GetPlayerResponse = await self._call(
            "GetPlayer",
            service_pb2.GetPlayerRequest(player_id=player_id),
            self._player_auth(),
            retry_on=_STREAM_RETRY,
        )
        return resp

    async def list_leaderboard(
        self, mode: str = "4p", *, page_size: int = 0, page_token: str = ""
    ) -> service_pb2.ListLeaderboardResponse:
        """ListLeaderboard: one page of a ranked mode's leaderboard, best first."""
        resp: service_pb2.ListLeaderboardResponse = await self._call(
            "ListLeaderboard",
            service_pb2.ListLeaderboardRequest(
                mode=mode, page_size=page_size, page_token=page_token
            ),
            retry_on=_STREAM_RETRY,
        )
        return resp

    async def list_matches(
        self, player_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> service_pb2.ListMatchesResponse:
        """ListMatches: one page of a player's finished matches, newest first (all of them
        for this client's own player, its ranked ones for anyone else)."""
        resp: service_pb2.ListMatchesResponse = await self._call(
            "ListMatches",
            service_pb2.ListMatchesRequest(
                player_id=player_id, page_size=page_size, page_token=page_token
            ),
            self._player_auth(),
            retry_on=_STREAM_RETRY,
        )
        return resp

    async def find_match(
        self,
        mode: str = "4p",
        *,
        on_progress: Callable[[matchmaking_pb2.TicketWaiting], None] | None = None,
    ) -> matchmaking_pb2.TicketMatched:
        """Ranked play: FindMatch in ``mode`` ("2p", "3p" or "4p") with :attr:`player_token`,
        then WatchTicket until the matchmaker seats the player (``on_progress`` gets each
        TicketWaiting). The seat is bound to the player token: the client keeps it as the
        table's seat token, so :meth:`watch` and :meth:`submit` play it. Leaving early (a
        cancelled task) closes the stream, which cancels the ticket."""
        if not self.player_token:
            raise ValueError("find_match needs a player token (create_player, or set player_token)")
        metadata = (("authorization", f"Bearer {self.player_token}"),)
        found: service_pb2.FindMatchResponse = await self._call(
            "FindMatch", service_pb2.FindMatchRequest(mode=mode), metadata
        )
        if on_progress is not None:
            on_progress(found.waiting)
        call = self._stub().WatchTicket(
            service_pb2.WatchTicketRequest(ticket_id=found.ticket_id), metadata=metadata
        )
        try:
            async for item in call:
                if item.WhichOneof("progress") == "matched":
                    m: matchmaking_pb2.TicketMatched = item.matched
                    self.seat_tokens[m.table_id] = m.seat_token or self.player_token
                    self.seats[m.table_id] = m.seat
                    return m
                if on_progress is not None:
                    on_progress(item.waiting)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, "WatchTicket") from None
        finally:
            call.cancel()
        raise Unavailable("the ticket's stream ended before a match; call find_match again")

    async def submit(
        self,
        *,
        table_id: str,
        action: action_pb2.Action | str,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> service_pb2.SubmitActionResponse:
        """SubmitAction for the client's seat. ``action``: an ``Action`` (one of the legal
        ones, as received) or its text (``"3E"``, ``"sing O"``, ``"tute 12"``,
        ``"exchange"``). ``request_id`` defaults to a fresh UUID; the call is retried with it
        when the server is unavailable or slow, so the action applies once."""
        if isinstance(action, str):
            try:
                action = parse_action(action)
            except ValueError as exc:
                raise InvalidArgument(str(exc), fields=("action",), method="SubmitAction") from None
        req = service_pb2.SubmitActionRequest(
            table_id=table_id, action=action, request_id=request_id or uuid.uuid4().hex
        )
        if expected_version is not None:
            req.expected_version = expected_version
        resp: service_pb2.SubmitActionResponse = await self._call(
            "SubmitAction", req, self._auth(table_id), retry_on=_SUBMIT_RETRY
        )
        return resp

    async def watch(  # noqa: C901 - the resume loop: each branch is one way a stream ends
        self,
        table_id: str,
        *,
        spectator: bool = False,
        table: Table | None = None,
        resume_after: int | None = None,
    ) -> AsyncIterator[Update]:
        """WatchTable, resumed for as long as it takes: a snapshot, then every event once,
        in order, each applied to the model (``update.table``, also ``self.tables[id]``).

        ``table``: a model to continue (kept from an earlier watch, or
        ``Table.from_view(saved_view)``): the stream resumes after its last event.
        ``resume_after``: resume after this sequence number without a model of the events
        before it (the model is complete only from a snapshot, or from 0).
        The iterator ends when the server closes the stream after the match ended; stop
        earlier with ``break``. Errors other than unavailability are raised as
        :mod:`clients.errors` exceptions (``SeatLost`` when the seat was lost).
        """
        if table is None:
            table = Table(table_id, None if spectator else self.seats.get(table_id))
            last = resume_after
        else:
            last = resume_after if resume_after is not None else table.last_sequence
        self.tables[table_id] = table
        metadata = self._auth(table_id, spectator=spectator)
        failures = _Failures()
        while True:
            # batch_events: the events of one commit come in one message
            req = service_pb2.WatchTableRequest(table_id=table_id, batch_events=True)
            if last is not None:
                req.resume_after = last
            server = self._index
            call = self._stub().WatchTable(req, metadata=metadata)
            try:
                gap = False
                async for msg in call:
                    if msg.HasField("snapshot"):
                        table.reset(msg.snapshot)
                        last = msg.snapshot.last_event_sequence
                        failures = _Failures()
                        yield Update(table, snapshot=msg.snapshot)
                        continue
                    for ev in msg.events.events if msg.HasField("events") else (msg.event,):
                        if last is not None and ev.sequence <= last:
                            continue  # already delivered
                        if last is not None and ev.sequence != last + 1:
                            gap = True  # resume after the last one delivered
                            break
                        table.apply(ev)
                        last = ev.sequence
                        failures = _Failures()
                        if table.needs_legal_actions():
                            table.set_legal_actions(await self.get_table(table_id=table_id))
                        yield Update(table, event=ev)
                    if gap:
                        break
                else:
                    if table.finished:
                        return  # the server closed the stream after the match
                    ended = Unavailable("the stream ended", method="WatchTable")
                    await self._pause(failures, ended, server)
            except grpc.aio.AioRpcError as exc:
                err = error_from_rpc(exc, "WatchTable")
                if isinstance(err, InvalidArgument) and err.field == "resume_after":
                    last = None  # the table went back in time (a store restored): start afresh
                elif err.code in _STREAM_RETRY:
                    await self._pause(failures, err, server)
                else:
                    raise err from None
            finally:
                call.cancel()
            self.reconnects += 1
