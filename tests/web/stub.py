"""``tute.v1.TuteService`` stubs for every transport the server speaks, with grpc.aio's face.

:func:`open_stub` gives, for a running server, a stub of the native gRPC port (``grpc``) or of
the HTTP port over the Connect protocol (``connect``) or gRPC-Web (``grpcweb``), through
connectrpc's own Python client. The HTTP stubs behave like ``service_pb2_grpc.TuteServiceStub``
on grpc.aio as far as the tests use it: ``await stub.GetTable(request, metadata=..., timeout=...)``
for a unary call, and for WatchTable a call to iterate (``async for``), ``read()`` (``grpc.aio.EOF``
at its end) and ``cancel()``; a failed call raises a :class:`grpc.aio.AioRpcError` whose
``code()``, ``details()`` and ``trailing_metadata()`` (with the ``grpc-status-details-bin`` rich
status, so ``grpc_status.rpc_status.from_call`` reads its ``google.rpc`` details) are the
server's answer. So one test runs unchanged on every transport.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import grpc
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.protobuf import any_pb2
from google.rpc import status_pb2

from service.server import Server
from tute.v1 import service_connect, service_pb2_grpc

TRANSPORTS = ("grpc", "connect", "grpcweb")
_PROTOCOLS = {"connect": ProtocolType.CONNECT, "grpcweb": ProtocolType.GRPC_WEB}
_UNARY = {
    "CreateTable": "create_table",
    "ListTables": "list_tables",
    "JoinTable": "join_table",
    "AddBot": "add_bot",
    "LeaveTable": "leave_table",
    "GetTable": "get_table",
    "SubmitAction": "submit_action",
}
Metadata = Sequence[tuple[str, str]] | None


def as_rpc_error(exc: ConnectError) -> grpc.aio.AioRpcError:
    """The grpc.aio error of a Connect error: its code, message and rich status."""
    name = "CANCELLED" if exc.code.name == "CANCELED" else exc.code.name
    code = grpc.StatusCode[name]
    status = status_pb2.Status(code=code.value[0], message=exc.message)
    for detail in exc.details:
        status.details.append(
            any_pb2.Any(
                type_url=f"type.googleapis.com/{detail.type_name}", value=detail.message_bytes
            )
        )
    trailing = grpc.aio.Metadata(("grpc-status-details-bin", status.SerializeToString()))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailing, details=exc.message)  # type: ignore[call-arg]


def _headers(metadata: Metadata) -> dict[str, str] | None:
    return {k: v for k, v in metadata} if metadata else None


def _timeout_ms(timeout: float | None) -> int | None:
    return None if timeout is None else max(1, int(timeout * 1000))


_END = object()


class StreamCall:
    """A server stream read ahead by a task, as grpc.aio's UnaryStreamCall is used."""

    def __init__(self, stream: AsyncIterator[Any]) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._cancelled = False
        self._task = asyncio.create_task(self._pump(stream))

    async def _pump(self, stream: AsyncIterator[Any]) -> None:
        try:
            async for message in stream:
                await self._queue.put(message)
            await self._queue.put(_END)
        except ConnectError as exc:
            await self._queue.put(as_rpc_error(exc))
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]

    async def read(self) -> Any:
        if self._cancelled:
            raise asyncio.CancelledError
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            return grpc.aio.EOF  # type: ignore[attr-defined]
        if isinstance(item, grpc.aio.AioRpcError):
            self._queue.put_nowait(item)
            raise item
        return item

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        while True:
            item = await self.read()
            if item is grpc.aio.EOF:  # type: ignore[attr-defined]
                return
            yield item

    def cancel(self) -> bool:
        """Close the stream (the HTTP response), as a client that goes away."""
        if self._task.done():
            return False
        self._cancelled = True
        self._task.cancel()
        self._queue.put_nowait(_END)
        return True

    def done(self) -> bool:
        return self._task.done()


class HttpStub:
    """A TuteServiceStub's face over connectrpc's client for one protocol."""

    def __init__(self, client: service_connect.TuteServiceClient) -> None:
        self._client = client
        for name, method in _UNARY.items():
            setattr(self, name, self._unary(getattr(client, method)))

    @staticmethod
    def _unary(call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def invoke(
            request: Any, metadata: Metadata = None, timeout: float | None = None
        ) -> Any:
            try:
                return await call(
                    request, headers=_headers(metadata), timeout_ms=_timeout_ms(timeout)
                )
            except ConnectError as exc:
                raise as_rpc_error(exc) from None

        return invoke

    def WatchTable(
        self, request: Any, metadata: Metadata = None, timeout: float | None = None
    ) -> StreamCall:
        return StreamCall(
            self._client.watch_table(
                request, headers=_headers(metadata), timeout_ms=_timeout_ms(timeout)
            )
        )


@contextlib.asynccontextmanager
async def open_stub(server: Server, transport: str) -> AsyncIterator[Any]:
    """A stub of ``server`` over ``transport`` (one of :data:`TRANSPORTS`), closed after."""
    if transport == "grpc":
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield service_pb2_grpc.TuteServiceStub(channel)
        return
    client = service_connect.TuteServiceClient(
        f"http://127.0.0.1:{server.http_port}", protocol=_PROTOCOLS[transport]
    )
    async with client:
        yield HttpStub(client)
