"""Prometheus metrics: gRPC server metrics by method and code, and the game's own.

All metrics live in one :class:`Metrics` with its own registry, so several servers can run in
one process (tests) and the page shows only tute's series (and the process's).

The gRPC series are go-grpc-prometheus's: the same names (``grpc_server_started_total``,
``grpc_server_handled_total``, ``grpc_server_msg_received_total``,
``grpc_server_msg_sent_total``, ``grpc_server_handling_seconds``) and label values
(``grpc_type`` ``unary``/``client_stream``/``server_stream``/``bidi_stream``, ``grpc_code`` in
Go's spelling ``OK``, ``FailedPrecondition``, ...), so stock gRPC dashboards work, plus a
``protocol`` label: ``grpc`` (the native port), ``connect`` or ``grpcweb`` (the HTTP port for
browsers, :mod:`service.web`). Counters and histograms carry no ``_created`` series.
"""

from __future__ import annotations

import importlib.metadata
import platform
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    start_http_server,
)

import engine.game

disable_created_metrics()  # type: ignore[no-untyped-call]

ENGINE_BUILD = "python" if engine.game.__file__.endswith(".py") else "mypyc"
"""Which build of the engine this process runs: ``mypyc`` (``make run``) or ``python``."""

GO_CODES = {
    "OK": "OK",
    "CANCELLED": "Canceled",
    "UNKNOWN": "Unknown",
    "INVALID_ARGUMENT": "InvalidArgument",
    "DEADLINE_EXCEEDED": "DeadlineExceeded",
    "NOT_FOUND": "NotFound",
    "ALREADY_EXISTS": "AlreadyExists",
    "PERMISSION_DENIED": "PermissionDenied",
    "RESOURCE_EXHAUSTED": "ResourceExhausted",
    "FAILED_PRECONDITION": "FailedPrecondition",
    "ABORTED": "Aborted",
    "OUT_OF_RANGE": "OutOfRange",
    "UNIMPLEMENTED": "Unimplemented",
    "INTERNAL": "Internal",
    "UNAVAILABLE": "Unavailable",
    "DATA_LOSS": "DataLoss",
    "UNAUTHENTICATED": "Unauthenticated",
}
"""``grpc.StatusCode`` names to the ``grpc_code`` label values of go-grpc-prometheus."""


def version() -> str:
    """The installed package's version ("unknown" when running from a bare source tree)."""
    try:
        return importlib.metadata.version("tute")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self._children: dict[tuple[object, ...], Any] = {}
        """The metrics' children by their labels (:meth:`child`)."""
        # process_* (CPU, memory, file descriptors), python_info and python_gc_* beside tute's
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        Info(
            "tute_build",
            "The running build: package version, engine build, Python version.",
            registry=r,
        ).info({"version": version(), "engine": ENGINE_BUILD, "python": platform.python_version()})
        labels = ("grpc_type", "grpc_service", "grpc_method", "protocol")
        self.started = Counter(
            "grpc_server_started_total", "RPCs started on the server.", labels, registry=r
        )
        self.msg_received = Counter(
            "grpc_server_msg_received_total",
            "Messages received from clients (a unary call's request counts one).",
            labels,
            registry=r,
        )
        self.msg_sent = Counter(
            "grpc_server_msg_sent_total",
            "Messages sent to clients (a stream's every message; a unary call's response).",
            labels,
            registry=r,
        )
        self.handled = Counter(
            "grpc_server_handled_total",
            "RPCs completed on the server, by status code.",
            (*labels, "grpc_code"),
            registry=r,
        )
        self.handling = Histogram(
            "grpc_server_handling_seconds",
            "Time to complete an RPC (streams: their whole life).",
            labels,
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.tables = Gauge("tute_tables", "Tables in the store, by state.", ("state",), registry=r)
        self.actions = Counter(
            "tute_actions_total",
            "Actions submitted, by kind (card, sing, tute, exchange, timeout, forfeit, bot) and "
            "result (applied, or the rejection reason).",
            ("kind", "result"),
            registry=r,
        )
        self.watch_streams = Gauge("tute_watch_streams", "Open WatchTable streams.", registry=r)
        self.publish = Histogram(
            "tute_event_publish_seconds",
            "From an event's commit to its delivery to a watcher on this replica.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.store_seconds = Histogram(
            "tute_store_seconds",
            "Store operation latency.",
            ("op",),
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.timeouts = Counter(
            "tute_timeouts_total", "Turns that timed out (the server played).", registry=r
        )
        self.bot_moves = Counter("tute_bot_moves_total", "Moves made by server bots.", registry=r)
        self.bot_think = Histogram(
            "tute_bot_think_seconds",
            "Time a bot took to choose its move.",
            ("level",),
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.store_errors = Counter(
            "tute_store_errors_total", "Store calls that failed (store unreachable).", registry=r
        )
        self.rate_limited = Counter(
            "tute_rate_limited_total",
            "Calls refused by a per-caller limit, by limit.",
            ("limit",),
            registry=r,
        )

    def child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once per metric and labels (``labels()`` costs
        a lock and a tuple per call, and some run on every call or action)."""
        key = (id(metric), *labels)  # the metrics live as long as this object
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Serve ``/metrics`` on its own port (a daemon thread); OSError if it cannot listen."""
        start_http_server(port, addr=addr, registry=self.registry)
