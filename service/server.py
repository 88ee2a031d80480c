"""Building and running the server: ``create_server`` for tests (port 0), ``serve`` for main.

A port that is taken fails the start (:class:`StartupError`): gRPC's ``SO_REUSEPORT`` is off,
so a second server cannot share the first one's port (and split the in-memory store with it).

Beside the gRPC port, ``settings.http_port`` serves the same servicer to browsers over Connect
and gRPC-Web (:mod:`service.web`).

Life cycle: on SIGTERM (``Server.shutdown``) health turns NOT_SERVING, the app refuses new
streams and ends open ones with UNAVAILABLE (clients resume on another replica), the gRPC and
HTTP servers stop taking calls and give the others ``grace_s`` to finish, then the process
exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from tute.v1 import service_pb2, service_pb2_grpc

from .clock import SYSTEM_CLOCK, Clock
from .config import Settings
from .durable import HistoryUnavailable
from .identity import Identity, jwt_verifier
from .interceptor import CallInterceptor
from .matchmaking.entrants import PlayerDirectory, StoreDirectory
from .matchmaking.service import Matchmaker
from .metrics import Metrics
from .players import PlayerStore
from .reflection import enable_server_reflection
from .servicer import TuteServicer, display_name
from .store import Store, StoreUnavailable, open_store
from .store.timed import TimedStore
from .tables.service import TableService
from .web import WebServer, bind, web_app

log = structlog.get_logger("tute.server")
DRAIN_S = 0.5
"""Seconds between NOT_SERVING and stopping the transport on shutdown (at most half the grace)."""
SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["TuteService"].full_name
LIVENESS_SERVICE = "tute.liveness"
"""A health name that stays SERVING while the process answers, drain included (liveness probes
check it; readiness probes check "" or SERVICE_NAME, which turn NOT_SERVING on drain)."""


_AioHealthServicer: Any = health.aio.HealthServicer  # type: ignore[attr-defined]


class _HealthServicer(_AioHealthServicer):  # type: ignore[misc]
    """The asyncio health servicer, except that graceful shutdown leaves LIVENESS_SERVICE be."""

    _gracefully_shutting_down: bool

    async def enter_graceful_shutdown(self) -> None:
        """Every other name NOT_SERVING, for good (later ``set`` calls are ignored)."""
        if self._gracefully_shutting_down:
            return
        self._gracefully_shutting_down = True
        for service in list(self._server_status):
            if service != LIVENESS_SERVICE:
                await self._set(service, health_pb2.HealthCheckResponse.NOT_SERVING)


class StartupError(Exception):
    """The server cannot start: a port it must listen on is taken or not available."""


def server_options(settings: Settings) -> list[tuple[str, int]]:
    """The gRPC server's channel options."""
    options: list[tuple[str, int]] = [
        ("grpc.so_reuseport", 0),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ]
    if settings.max_connection_age_s > 0:
        options += [
            ("grpc.max_connection_age_ms", int(settings.max_connection_age_s * 1000)),
            ("grpc.max_connection_age_grace_ms", int(settings.grace_s * 1000)),
        ]
    return options


def check_port_free(host: str, port: int, what: str) -> None:
    """StartupError when ``host:port`` cannot be bound (taken, or not this machine's address).

    Checked before gRPC binds, whose own failure says nothing of the cause (and logs a line of
    its own on stderr)."""
    if port == 0:
        return
    where = f"{host}:{port} ({what})"
    try:
        addresses = socket.getaddrinfo(
            host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise StartupError(f"cannot listen on {where}: {exc.strerror}") from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                raise StartupError(f"cannot listen on {where}: {exc.strerror}") from None


@dataclasses.dataclass
class Server:
    """A running server: its gRPC port, app, metrics, and the tasks beside it."""

    grpc_server: grpc.aio.Server
    port: int
    app: TableService
    metrics: Metrics
    store: Store
    health: Any  # grpc_health.v1.health.aio.HealthServicer
    settings: Settings
    tasks: list[asyncio.Task[None]] = dataclasses.field(default_factory=list)
    web: WebServer | None = None
    """The HTTP port for browsers (None when ``settings.http_port`` is -1)."""
    matchmaker: Matchmaker | None = None
    """FindMatch, WatchTicket and this replica's matcher loop."""

    @property
    def http_port(self) -> int:
        """The HTTP port's number (0 when it is off)."""
        return self.web.port if self.web is not None else 0

    async def shutdown(self) -> None:
        """Graceful stop (SIGTERM): NOT_SERVING, end streams with UNAVAILABLE, stop, close."""
        log.info("shutting_down", grace_s=self.settings.grace_s)
        await self.health.enter_graceful_shutdown()
        self.app.begin_shutdown()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            # Python 3.11's wait_for drops a cancellation that lands as its awaitable
            # finishes (the scheduler's wake-up set by a bot's move): cancel until done.
            while not task.done():
                await asyncio.wait({task}, timeout=0.05)
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.app.close_bots()
        # Drain: for a moment keep answering (new streams get UNAVAILABLE from the app) while
        # load balancers and clients see NOT_SERVING, so that calls arriving now are not cut
        # off by the transport (CANCELLED) but answered; then stop within the rest of the grace.
        drain = min(DRAIN_S, self.settings.grace_s / 2)
        await asyncio.sleep(drain)
        stops = [self.grpc_server.stop(self.settings.grace_s - drain)]
        if self.web is not None:
            stops.append(self.web.stop())
        await asyncio.gather(*stops)
        await self.store.close()
        await self.app.close_history()
        log.info("stopped")


class GenericOnly:
    """A server as the generated ``add_*Servicer_to_server`` functions see it: their services
    are added as generic handlers only, not also as registered methods.

    A grpc.aio server keeps one pending request per registered method and, for every call
    that arrives, waits on all of them at once (``asyncio.wait`` over some 20 tasks, each
    getting and losing a done-callback): 7% of the server's instructions per SubmitAction
    (benchmarks.instructions). A generic handler is found by one dictionary lookup of
    the method's path; the bare grpc.aio baseline registers its service the same way."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: Any) -> None:
        """Not registered: the generic handler added with them serves these methods."""


async def _watch_health(server: Server) -> None:
    """Health follows the store: NOT_SERVING while it is unreachable."""
    serving: bool | None = None
    while not server.app.closing:  # (see Scheduler.run)
        try:
            await server.store.ping()
            ok = True
        except StoreUnavailable:
            ok = False
        if ok != serving:
            serving = ok
            status = (
                health_pb2.HealthCheckResponse.SERVING
                if ok
                else health_pb2.HealthCheckResponse.NOT_SERVING
            )
            await server.health.set("", status)
            await server.health.set(SERVICE_NAME, status)
            if not ok:
                log.warning("store_unreachable_not_serving")
            else:
                log.info("serving")
        await asyncio.sleep(0.5 if ok else 0.2)


async def create_server(
    settings: Settings,
    store: Store | None = None,
    *,
    clock: Clock = SYSTEM_CLOCK,
    directory: PlayerDirectory | None = None,
    players: PlayerStore | None = None,
) -> Server:
    """Build and start a server (bind ``settings.host:settings.port``; port 0 picks one) and,
    with ``settings.metrics_port``, its ``/metrics`` endpoint; StartupError if a port is taken.
    The server and the store it opens run on ``clock`` (a ``store`` given has its own).
    ``directory``: who the matchmaker's callers are (default: the player store's players, by
    player token or JWT: :mod:`service.identity`); ``players``: the player store (default:
    ``settings.players``; servers in one process may share one)."""
    try:
        verifier = jwt_verifier(settings)
    except ValueError as exc:
        raise StartupError(f"JWT settings: {exc}") from None
    metrics = Metrics()
    inner = (
        store
        if store is not None
        else open_store(
            settings.store,
            finished_ttl_s=settings.finished_ttl_s,
            index_shards=settings.store_index_shards,
            clock=clock,
        )
    )
    timed = TimedStore(inner, metrics)
    app = TableService(timed, settings, metrics, clock=clock, players=players)
    await app.start_history()
    await app.prune_history()
    interceptor = CallInterceptor(metrics, access_log=settings.access_log)
    grpc_server = grpc.aio.server(interceptors=[interceptor], options=server_options(settings))
    identity = Identity(app.players, verifier, app.now, check_name=display_name)
    matchmaker = Matchmaker(app, directory or StoreDirectory(identity))
    servicer = TuteServicer(app, matchmaker, identity)
    service_pb2_grpc.add_TuteServiceServicer_to_server(servicer, GenericOnly(grpc_server))
    health_servicer = _HealthServicer()
    await health_servicer.set(LIVENESS_SERVICE, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, GenericOnly(grpc_server))
    enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME), grpc_server)
    check_port_free(settings.host, settings.port, "gRPC")
    try:
        port = grpc_server.add_insecure_port(f"{settings.host}:{settings.port}")
    except RuntimeError:
        port = 0
    if port == 0:
        raise StartupError(f"cannot listen on {settings.host}:{settings.port} (gRPC)")
    web: WebServer | None = None
    if settings.http_port >= 0:
        try:
            sock = bind(settings.host, settings.http_port)
        except OSError as exc:
            raise StartupError(
                f"cannot listen on {settings.host}:{settings.http_port} (HTTP): "
                f"{exc.strerror or exc}"
            ) from None
        web = WebServer(web_app(servicer, metrics, settings), sock, settings.grace_s)
    if settings.metrics_port:
        try:
            metrics.serve(settings.metrics_port, addr=settings.host)
        except OSError as exc:
            raise StartupError(
                f"cannot listen on {settings.host}:{settings.metrics_port} (metrics): "
                f"{exc.strerror or exc}"
            ) from None
    await grpc_server.start()
    if web is not None:
        await web.start()
    server = Server(
        grpc_server,
        port,
        app,
        metrics,
        timed,
        health_servicer,
        settings,
        web=web,
        matchmaker=matchmaker,
    )
    server.tasks.append(asyncio.create_task(app.run_scheduler(), name="scheduler"))
    server.tasks.append(asyncio.create_task(matchmaker.run(), name="matcher"))
    server.tasks.append(asyncio.create_task(_watch_health(server), name="health"))
    if settings.history_casual_days > 0 or settings.history_ranked_days > 0:
        server.tasks.append(asyncio.create_task(_prune_history(app), name="history"))
    return server


async def _prune_history(app: TableService) -> None:
    """The history's retention: an hourly pass (the first ran at start)."""
    while True:
        await asyncio.sleep(3600)
        try:
            gone = await app.prune_history()
        except HistoryUnavailable as exc:
            log.warning("history_prune_failed", error=str(exc))
        else:
            log.info("history_pruned", records=gone)
