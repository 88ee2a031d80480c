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
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    GCCollector,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

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


class _Family:
    """A labelled metric family updated by one thread without locks, read by the scrape.

    prometheus_client's ``Counter`` and ``Histogram`` take a lock per increment and check
    their state on every call: about 0.5 µs an increment and 1.1 µs an observation here, and
    the server makes some 34 increments and 13 observations per action (the gRPC series of
    its calls and stream messages, the publish latency of each event for each watcher). These
    families keep plain numbers instead (0.05 and 0.2 µs): every update runs on the server's
    event loop thread; the scrape, on the metrics thread, copies them under the GIL, so it
    may see an observation's bucket without its sum (as prometheus_client's own may)."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], Any] = {}
        registry.register(self)  # type: ignore[arg-type]

    def _start(self) -> None:
        """An unlabelled family shows its zero from the start (as prometheus_client's do)."""
        if not self.labelnames:
            self._unlabelled()

    def _new(self) -> Any:
        raise NotImplementedError

    def labels(self, *values: object) -> Any:
        """The child of these label values (one per distinct values, kept)."""
        key = tuple(str(v) for v in values)
        if len(key) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {key}")
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = self._new()
        return found

    def _unlabelled(self) -> Any:
        if self.labelnames:
            raise ValueError(f"{self.name} has labels {self.labelnames}: use labels()")
        found = self._children.get(())
        if found is None:
            found = self._children[()] = self._new()
        return found

    def _items(self) -> list[tuple[tuple[str, ...], Any]]:
        return list(self._children.items())  # one C call: safe against the loop's inserts

    def describe(self) -> list[Metric]:
        return []  # registered without a describe() call into collect()


class _CounterChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self.value += amount


class FastCounter(_Family):
    """A counter family (``name`` ends in ``_total``); an unlabelled one increments itself."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: CollectorRegistry,
    ) -> None:
        super().__init__(name, documentation, labelnames, registry)
        self._start()

    def inc(self, amount: float = 1.0) -> None:
        """Increment an unlabelled counter."""
        self._unlabelled().inc(amount)

    def _new(self) -> _CounterChild:
        return _CounterChild()

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in self._items():
            family.add_metric(list(values), child.value)
        yield family


class _HistogramChild:
    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        """Observations per bucket (not cumulative); the last: above every bound."""
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount


class FastHistogram(_Family):
    """A histogram family with fixed bucket bounds (``le``, +Inf added); an unlabelled one
    observes itself."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self.bounds = tuple(float(b) for b in buckets)
        if list(self.bounds) != sorted(set(self.bounds)):
            raise ValueError("bucket bounds must increase")
        super().__init__(name, documentation, labelnames, registry)
        self._start()

    def observe(self, amount: float) -> None:
        """Observe a value in an unlabelled histogram."""
        self._unlabelled().observe(amount)

    def observe_many(self, amounts: Sequence[float]) -> None:
        """Observe each of ``amounts`` in an unlabelled histogram (one call for a batch)."""
        only: _HistogramChild = self._unlabelled()
        counts, bounds = only.counts, only.bounds
        for amount in amounts:
            counts[bisect_left(bounds, amount)] += 1
        only.sum += sum(amounts)

    def _new(self) -> _HistogramChild:
        return _HistogramChild(self.bounds)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in self._items():
            counts, total = list(child.counts), child.sum
            cumulative, buckets = 0, []
            for bound, n in zip((*self.bounds, float("inf")), counts, strict=True):
                cumulative += n
                buckets.append((_bound(bound), float(cumulative)))
            family.add_metric(list(values), buckets, total)
        yield family


def _bound(b: float) -> str:
    """A bucket's ``le`` label as prometheus_client writes it (``0.005``, ``1.0``, ``+Inf``)."""
    return str(floatToGoString(b))  # type: ignore[no-untyped-call]


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
        self.started = FastCounter(
            "grpc_server_started_total", "RPCs started on the server.", labels, registry=r
        )
        self.msg_received = FastCounter(
            "grpc_server_msg_received_total",
            "Messages received from clients (a unary call's request counts one).",
            labels,
            registry=r,
        )
        self.msg_sent = FastCounter(
            "grpc_server_msg_sent_total",
            "Messages sent to clients (a stream's every message; a unary call's response).",
            labels,
            registry=r,
        )
        self.handled = FastCounter(
            "grpc_server_handled_total",
            "RPCs completed on the server, by status code.",
            (*labels, "grpc_code"),
            registry=r,
        )
        self.handling = FastHistogram(
            "grpc_server_handling_seconds",
            "Time to complete an RPC (streams: their whole life).",
            labels,
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.tables = Gauge("tute_tables", "Tables in the store, by state.", ("state",), registry=r)
        self.actions = FastCounter(
            "tute_actions_total",
            "Actions submitted, by kind (card, sing, tute, exchange, timeout, forfeit, bot) and "
            "result (applied, or the rejection reason).",
            ("kind", "result"),
            registry=r,
        )
        self.watch_streams = Gauge("tute_watch_streams", "Open WatchTable streams.", registry=r)
        self.publish = FastHistogram(
            "tute_event_publish_seconds",
            "From an event's commit to its delivery to a watcher on this replica.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.store_seconds = FastHistogram(
            "tute_store_seconds",
            "Store operation latency.",
            ("op",),
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.timeouts = FastCounter(
            "tute_timeouts_total", "Turns that timed out (the server played).", registry=r
        )
        self.bot_moves = FastCounter(
            "tute_bot_moves_total", "Moves made by server bots.", registry=r
        )
        self.bot_think = FastHistogram(
            "tute_bot_think_seconds",
            "Time a bot took to choose its move.",
            ("level",),
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.store_errors = FastCounter(
            "tute_store_errors_total", "Store calls that failed (store unreachable).", registry=r
        )
        self.rate_limited = FastCounter(
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
