"""Building and running the server: ``create_server`` for tests (port 0), ``serve`` for main.

Life cycle: on SIGTERM (``Server.shutdown``) health turns NOT_SERVING, the app refuses new
streams and ends open ones with UNAVAILABLE (clients resume on another replica), the gRPC
server stops taking calls and gives the others ``grace_s`` to finish, then the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from tute.v1 import service_pb2, service_pb2_grpc

from .app import TuteApp
from .config import Settings
from .interceptor import CallInterceptor
from .metrics import Metrics, TimedStore
from .servicer import TuteServicer
from .store import Store, StoreUnavailable, open_store

log = structlog.get_logger("tute.server")
DRAIN_S = 0.5
"""Seconds between NOT_SERVING and stopping the transport on shutdown (at most half the grace)."""
SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["TuteService"].full_name


@dataclasses.dataclass
class Server:
    """A running server: its gRPC port, app, metrics, and the tasks beside it."""

    grpc_server: grpc.aio.Server
    port: int
    app: TuteApp
    metrics: Metrics
    store: Store
    health: Any  # grpc_health.v1.health.aio.HealthServicer
    settings: Settings
    tasks: list[asyncio.Task[None]] = dataclasses.field(default_factory=list)

    async def shutdown(self) -> None:
        """Graceful stop (SIGTERM): NOT_SERVING, end streams with UNAVAILABLE, stop, close."""
        log.info("shutting_down", grace_s=self.settings.grace_s)
        await self.health.enter_graceful_shutdown()
        self.app.begin_shutdown()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # Drain: for a moment keep answering (new streams get UNAVAILABLE from the app) while
        # load balancers and clients see NOT_SERVING, so that calls arriving now are not cut
        # off by the transport (CANCELLED) but answered; then stop within the rest of the grace.
        drain = min(DRAIN_S, self.settings.grace_s / 2)
        await asyncio.sleep(drain)
        await self.grpc_server.stop(self.settings.grace_s - drain)
        await self.store.close()
        log.info("stopped")


async def _watch_health(server: Server) -> None:
    """Health follows the store: NOT_SERVING while it is unreachable."""
    serving: bool | None = None
    while not server.app.closing:  # (see TuteApp.run_scheduler)
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


async def create_server(settings: Settings, store: Store | None = None) -> Server:
    """Build and start a server (bind ``settings.host:settings.port``; port 0 picks one)."""
    metrics = Metrics()
    inner = (
        store
        if store is not None
        else open_store(settings.store, finished_ttl_s=settings.finished_ttl_s)
    )
    timed = TimedStore(inner, metrics)
    app = TuteApp(timed, settings, metrics)
    options: list[tuple[str, int]] = [
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ]
    if settings.max_connection_age_s > 0:
        options += [
            ("grpc.max_connection_age_ms", int(settings.max_connection_age_s * 1000)),
            ("grpc.max_connection_age_grace_ms", int(settings.grace_s * 1000)),
        ]
    grpc_server = grpc.aio.server(interceptors=[CallInterceptor(metrics)], options=options)
    service_pb2_grpc.add_TuteServiceServicer_to_server(TuteServicer(app), grpc_server)
    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, grpc_server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), grpc_server
    )
    port = grpc_server.add_insecure_port(f"{settings.host}:{settings.port}")
    if port == 0:
        raise OSError(f"cannot listen on {settings.host}:{settings.port}")
    await grpc_server.start()
    server = Server(grpc_server, port, app, metrics, timed, health_servicer, settings)
    server.tasks.append(asyncio.create_task(app.run_scheduler(), name="scheduler"))
    server.tasks.append(asyncio.create_task(_watch_health(server), name="health"))
    return server
