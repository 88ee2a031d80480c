"""The one server interceptor: per-request log context, gRPC metrics, and errors to statuses.

The log context of a call holds its method and peer and, once the request is read, its
``table_id`` (the service adds the caller's ``seat`` once it knows it), so every line the call
logs names them; with ``access_log`` on, the call ends with one ``rpc`` line (method, code,
duration_ms, peer; a stream's when it ends).

Every service error (and any engine error that slips through) becomes a status with its code
and ``google.rpc`` details: ``ErrorInfo`` (domain ``tute.v1``, the reason code, metadata) and,
for malformed requests, ``BadRequest`` naming the field; for a per-caller limit, ``RetryInfo``
(when to try again). Anything unexpected is logged and
answered INTERNAL (reason ``INTERNAL``) without its text. Every reason sent is a member of
:class:`service.reasons.Reason` with its status code (:data:`service.reasons.STATUS`); an
error that breaks that (a bug) is logged and answered INTERNAL too.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

import engine

from .errors import (
    Internal,
    InvalidArgument,
    ServiceError,
    Unavailable,
    from_engine_error,
)
from .metrics import GO_CODES, Metrics
from .reasons import STATUS, Reason
from .store.base import StoreUnavailable
from .wire import Encoded

log = structlog.get_logger("tute.rpc")
DOMAIN = "tute.v1"
_TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a table id looks like (the service checks it again); only such a value is logged."""


def registered(exc: ServiceError) -> bool:
    """Whether the error's reason is a registered one, with its own status code."""
    try:
        reason = Reason(exc.reason)
    except ValueError:
        return False
    return STATUS[reason] == exc.code


def to_status(exc: ServiceError) -> status_pb2.Status:
    """The rich status of a service error (whose reason is :func:`registered`)."""
    status = status_pb2.Status(code=exc.code.value[0], message=exc.message)
    info = error_details_pb2.ErrorInfo(reason=exc.reason, domain=DOMAIN)
    info.metadata.update(exc.metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status.details.append(detail)
    if exc.field:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=exc.field, description=exc.message
                )
            ]
        )
        detail = any_pb2.Any()
        detail.Pack(bad)
        status.details.append(detail)
    if exc.retry_after_s is not None:
        retry = error_details_pb2.RetryInfo()
        retry.retry_delay.FromMilliseconds(max(1, math.ceil(exc.retry_after_s * 1000)))
        detail = any_pb2.Any()
        detail.Pack(retry)
        status.details.append(detail)
    return status


def as_service_error(exc: BaseException) -> ServiceError | None:
    """The service error an exception is sent as; None for one answered INTERNAL (an
    unexpected error, or one whose reason is not registered)."""
    err: ServiceError
    if isinstance(exc, ServiceError):
        err = exc
    elif isinstance(exc, StoreUnavailable):
        err = Unavailable(f"the table store is unreachable: {exc}", reason=Reason.STORE_UNAVAILABLE)
    elif isinstance(exc, engine.TuteError):
        try:
            err = from_engine_error(exc)
        except LookupError:
            return None
    else:
        return None
    return err if registered(err) else None


def status_of(exc: BaseException) -> tuple[str, status_pb2.Status]:
    """The status code name (``grpc.StatusCode``'s) and rich status an exception raised by a
    call is answered with, on every transport; logs it (``rpc_error``, or ``internal_error``
    with its traceback for an unexpected one)."""
    err = as_service_error(exc)
    if err is None:
        # an unexpected exception, or an error whose reason is not registered (a bug)
        log.exception("internal_error", reason=str(getattr(exc, "reason", "")))
        return "INTERNAL", to_status(
            Internal("internal error; it has been logged", reason=Reason.INTERNAL)
        )
    log.info("rpc_error", code=err.code.name, reason=err.reason, field=err.field)
    return err.code.name, to_status(err)


class CallRecorder:
    """A call's log context, metrics and access line, for every transport (``protocol``
    labels the metrics: ``grpc``, ``connect`` or ``grpcweb``)."""

    def __init__(self, metrics: Metrics, *, access_log: bool = True, protocol: str = "grpc"):
        self.metrics = metrics
        self.access_log = access_log
        self.protocol = protocol

    def begin(self, kind: str, service: str, method: str, peer: str) -> float:
        """A call starts: a fresh log context naming it; its start time."""
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(method=method, peer=peer)
        self.metrics.child(self.metrics.started, kind, service, method, self.protocol).inc()
        return time.perf_counter()

    def end(self, kind: str, service: str, method: str, t0: float, code: str) -> None:
        """A call ended with ``code`` (a ``grpc.StatusCode`` name)."""
        elapsed = time.perf_counter() - t0
        labels = (kind, service, method, self.protocol)
        self.metrics.child(self.metrics.handled, *labels, GO_CODES.get(code, code)).inc()
        self.metrics.child(self.metrics.handling, *labels).observe(elapsed)
        if self.access_log:
            log.info("rpc", service=service, code=code, duration_ms=round(elapsed * 1000, 3))

    def received(self, kind: str, service: str, method: str, request: Any) -> None:
        """A request message arrived; a table call's ``table_id`` joins the log context, so
        that every line of the call (its errors and its access line) names the table."""
        self.metrics.child(self.metrics.msg_received, kind, service, method, self.protocol).inc()
        table_id = getattr(request, "table_id", None)
        if isinstance(table_id, str) and _TABLE_ID.fullmatch(table_id):
            structlog.contextvars.bind_contextvars(table_id=table_id)

    def sent(self, kind: str, service: str, method: str) -> Any:
        """The counter of the messages a call sends."""
        return self.metrics.child(self.metrics.msg_sent, kind, service, method, self.protocol)


class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    def __init__(self, metrics: Metrics, *, access_log: bool = True) -> None:
        self.metrics = metrics
        self.recorder = CallRecorder(metrics, access_log=access_log)
        self._wrapped: dict[str, tuple[Any, Any]] = {}
        """By method: the handler grpc found and its wrapped form (built once per handler)."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        if handler is None:
            return handler
        full = details.method  # "/tute.v1.TuteService/CreateTable"
        cached = self._wrapped.get(full)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(handler, full)
        self._wrapped[full] = (handler, wrapped)
        return wrapped

    def _wrap(self, handler: Any, full: str) -> Any:
        service, _, method = full.lstrip("/").rpartition("/")
        # The wrappers parse the request themselves, inside the guard: a body that is not a
        # valid message is INVALID_ARGUMENT there (grpc's own deserializer answers UNKNOWN).
        decode = handler.request_deserializer
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(handler.unary_unary, decode, service, method),
                response_serializer=passing_bytes(handler.response_serializer),
            )
        # A stream's handler may yield a message already serialized (WatchTable's events):
        # its bytes are sent as they are. The wrappers serialize the rest themselves (grpc
        # then has no serializer to call per message).
        encode = handler.response_serializer
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(handler.unary_stream, decode, service, method, encode),
                response_serializer=None,
            )
        # Client and bidirectional streams (server reflection): grpc parses their messages.
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap_request_stream(handler.stream_unary, "client_stream", service, method),
                request_deserializer=decode,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            writes = not inspect.isasyncgenfunction(handler.stream_stream)  # PlayTable
            return grpc.stream_stream_rpc_method_handler(
                self._wrap_request_stream(
                    handler.stream_stream, "bidi_stream", service, method, encode
                ),
                request_deserializer=decode,
                response_serializer=None if writes else passing_bytes(encode),
            )
        return handler

    def _received(self, kind: str, service: str, method: str, request: Any) -> None:
        self.recorder.received(kind, service, method, request)

    def _guard(self, kind: str, service: str, method: str, context: Any) -> _Guard:
        """Around one call: log context, metrics, and every error turned into a status."""
        return _Guard(self.recorder, kind, service, method, context)

    def _wrap_unary(
        self,
        behavior: Callable[[Any, Any], Awaitable[Any]],
        decode: Callable[[bytes], Any] | None,
        service: str,
        method: str,
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        sent = self.recorder.sent("unary", service, method)

        async def wrapper(raw: Any, context: Any) -> Any:
            async with self._guard("unary", service, method, context):
                request = _decode(decode, raw)
                self._received("unary", service, method, request)
                response = await behavior(request, context)
                sent.inc()
                return response

        return wrapper

    def _wrap_stream(
        self,
        behavior: Callable[[Any, Any], Any],
        decode: Callable[[bytes], Any] | None,
        service: str,
        method: str,
        encode: Callable[[Any], bytes] | None,
    ) -> Callable[[Any, Any], Any]:
        """A server stream, whose messages (or their bytes) it serializes with ``encode``."""
        sent = self.recorder.sent("server_stream", service, method)
        if not inspect.isasyncgenfunction(behavior):
            # a coroutine that sends with context.write (grpc.health.v1.Health/Watch)
            async def writer(raw: Any, context: Any) -> None:
                async with self._guard("server_stream", service, method, context):
                    request = _decode(decode, raw)
                    self._received("server_stream", service, method, request)
                    await behavior(request, _CountingContext(context, sent, encode))

            return writer

        # The handler's messages are written here (grpc's reader/writer form) rather than
        # yielded on: what grpc does with a generator's items, without one more generator
        # step per message.
        async def wrapper(raw: Any, context: Any) -> None:
            async with self._guard("server_stream", service, method, context):
                request = _decode(decode, raw)
                self._received("server_stream", service, method, request)
                write, count = context.write, sent.inc
                async with contextlib.aclosing(behavior(request, context)) as items:
                    async for item in items:
                        await write(item if encode is None or type(item) is bytes else encode(item))
                        count()

        return wrapper

    def _wrap_request_stream(
        self,
        behavior: Callable[[Any, Any], Any],
        kind: str,
        service: str,
        method: str,
        encode: Callable[[Any], bytes] | None = None,
    ) -> Callable[[Any, Any], Any]:
        """A client or bidirectional stream: metrics, log context and errors as for the rest.
        A bidirectional stream that writes (a coroutine) has its messages serialized with
        ``encode`` as it writes them."""
        sent = self.recorder.sent(kind, service, method)
        writes_with = encode if kind == "bidi_stream" else None

        async def requests(iterator: AsyncIterator[Any]) -> AsyncIterator[Any]:
            async for request in iterator:
                self._received(kind, service, method, request)
                yield request

        if not inspect.isasyncgenfunction(behavior):

            async def call(iterator: AsyncIterator[Any], context: Any) -> Any:
                async with self._guard(kind, service, method, context):
                    counting = _CountingContext(context, sent, writes_with)
                    result = await behavior(requests(iterator), counting)
                    if kind == "client_stream":
                        sent.inc()
                    return result

            return call

        async def stream(iterator: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async with self._guard(kind, service, method, context):
                async for item in behavior(requests(iterator), context):
                    yield item
                    sent.inc()

        return stream


class _Guard:
    """:meth:`CallInterceptor._guard`: what an ``asynccontextmanager`` would do, as a class (it
    runs around every call, and a generator-based one costs more)."""

    __slots__ = ("_call", "_context", "_recorder", "_t0")

    def __init__(
        self, recorder: CallRecorder, kind: str, service: str, method: str, context: Any
    ) -> None:
        self._recorder = recorder
        self._call = (kind, service, method)
        self._context = context
        self._t0 = 0.0

    async def __aenter__(self) -> None:
        self._t0 = self._recorder.begin(*self._call, self._context.peer())

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        code = "OK"
        try:
            if isinstance(exc, asyncio.CancelledError | GeneratorExit):
                # a stream the client cancelled is cancelled or closed where it waits or sends
                code = "CANCELLED"
            elif isinstance(exc, grpc.aio.AbortError):
                found = self._context.code()
                code = found.name if found else "UNKNOWN"
            elif isinstance(exc, Exception):  # every error becomes a status here
                err = as_service_error(exc)
                code = err.code.name if err is not None else "INTERNAL"
                await _abort(exc, self._context)
                return True  # pragma: no cover - _abort raises
            return False
        finally:
            self._recorder.end(*self._call, self._t0, code)


async def _abort(exc: BaseException, context: Any) -> None:
    """End the call with the status of ``exc`` (raises, as ``abort_with_status`` does)."""
    code, err_status = status_of(exc)
    context.set_code(grpc.StatusCode[code])
    await context.abort_with_status(rpc_status.to_status(err_status))


class _CountingContext:
    """A call's context whose ``write`` counts the messages sent (``grpc_server_msg_sent``)
    and, with ``encode``, serializes them (bytes are sent as they are)."""

    def __init__(
        self, context: Any, sent: Any, encode: Callable[[Any], bytes] | None = None
    ) -> None:
        self._context = context
        self._sent = sent
        self._encode = encode

    async def write(self, message: Any) -> None:
        encode = self._encode
        if encode is not None and type(message) is not bytes:
            message = encode(message)
        await self._context.write(message)
        self._sent.inc()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def passing_bytes(serialize: Callable[[Any], bytes] | None) -> Callable[[Any], bytes] | None:
    """A gRPC response serializer that sends bytes as they are (a message already
    serialized, plain or as :class:`~service.wire.Encoded`) and serializes anything else
    with ``serialize``."""
    if serialize is None:
        return None
    encode = serialize

    def serializer(message: Any) -> bytes:
        kind = type(message)
        if kind is bytes:
            return message  # type: ignore[no-any-return]
        if kind is Encoded:
            return message.data  # type: ignore[no-any-return]
        return encode(message)

    return serializer


def _decode(decode: Callable[[bytes], Any] | None, raw: Any) -> Any:
    """The request message of a call's body; a body that does not parse is INVALID_ARGUMENT."""
    if decode is None:
        return raw
    try:
        return decode(raw)
    except DecodeError:
        raise InvalidArgument(
            "the request body is not a valid message for this method",
            reason=Reason.MALFORMED_REQUEST,
        ) from None
