"""The API for browsers: ``tute.v1.TuteService`` over the Connect protocol and gRPC-Web, with
CORS, on an HTTP port beside the native gRPC one (``Settings.http_port``), and the built web
client's files on the same port (``Settings.web_dir``).

The official ``connectrpc`` ASGI application runs on uvicorn in the server's own event loop and
calls the same :class:`service.servicer.TuteServicer` as the gRPC port, through a context that
offers the two things the servicer asks of one: ``invocation_metadata()`` (the HTTP headers, so
``authorization: Bearer <token>`` works the same) and ``peer()`` (the client's address, so the
per-caller limits count the same caller). Errors become the same status code and
``google.rpc`` details (:func:`service.interceptor.status_of`): Connect's error JSON carries
them in ``details``, gRPC-Web in its ``grpc-status-details-bin`` trailer. Calls are logged and
counted as on the gRPC port (:class:`service.interceptor.CallRecorder`), the metrics labelled
``protocol="connect"`` or ``"grpcweb"``. A stream whose client goes away is cancelled (its
watcher ends); on shutdown the app ends open streams with UNAVAILABLE and uvicorn stops taking
connections and gives the others the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import uvicorn
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.request import RequestContext
from google.rpc import status_pb2
from protobuf.wkt import Any as WireAny

from tute.v1 import service_connect

from .config import Settings
from .errors import InvalidArgument
from .interceptor import CallRecorder, status_of, to_status
from .metrics import Metrics
from .reasons import Reason
from .servicer import TuteServicer, watch_message
from .wire import Encoded

SERVICE = "tute.v1.TuteService"
PREFIX = f"/{SERVICE}/"
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The largest request message read (gRPC's default receive limit on the native port)."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CORS_ALLOW_HEADERS = (
    "authorization, tute-table-id, content-type, connect-protocol-version, connect-timeout-ms, "
    "connect-accept-encoding, connect-content-encoding, grpc-timeout, grpc-accept-encoding, "
    "grpc-encoding, x-grpc-web, x-user-agent"
)
CORS_EXPOSE_HEADERS = (
    "grpc-status, grpc-message, grpc-status-details-bin, grpc-encoding, grpc-accept-encoding, "
    "connect-content-encoding, connect-accept-encoding"
)


def connect_error(code: str, status: status_pb2.Status) -> ConnectError:
    """The Connect error of a status (``code`` a ``grpc.StatusCode`` name), details and all."""
    name = "CANCELED" if code == "CANCELLED" else code
    details = [ErrorDetail(WireAny(type_url=d.type_url, value=d.value)) for d in status.details]
    return ConnectError(Code[name], status.message, details)


_CODE_NAMES = {code: ("CANCELLED" if code is Code.CANCELED else code.name) for code in Code}


def protocol_of(ctx: RequestContext[Any, Any]) -> str:
    """``grpcweb`` or ``connect``: the protocol a call came in on (by its content type)."""
    content_type = ctx.request_headers.get("content-type", "")
    return "grpcweb" if content_type.startswith("application/grpc-web") else "connect"


def grpc_peer(client_address: str | None) -> str:
    """A client's ``host:port`` written as a gRPC peer (``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``)."""
    if not client_address:
        return "unknown:"
    host, _, port = client_address.rpartition(":")
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


class HttpContext:
    """What the servicer asks of a call's context, from an HTTP request."""

    def __init__(self, ctx: RequestContext[Any, Any]) -> None:
        self._ctx = ctx

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple((k.lower(), v) for k, v in self._ctx.request_headers.allitems())

    def peer(self) -> str:
        return grpc_peer(self._ctx.client_address)


class _Codec:
    """A codec whose malformed request is the native port's INVALID_ARGUMENT MALFORMED_REQUEST."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def name(self) -> str:
        return str(self._inner.name())

    def encode(self, message: Any) -> bytes:
        return bytes(self._inner.encode(message))

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        try:
            return self._inner.decode(data, message_class)
        except Exception:
            err = InvalidArgument(
                "the request body is not a valid message for this method",
                reason=Reason.MALFORMED_REQUEST,
            )
            raise connect_error("INVALID_ARGUMENT", to_status(err)) from None


class ConnectService:
    """``tute.v1.TuteService`` for connectrpc (its snake_case methods) over the servicer."""

    def __init__(self, servicer: TuteServicer, metrics: Metrics, *, access_log: bool) -> None:
        self.servicer = servicer
        self.recorders = {
            p: CallRecorder(metrics, access_log=access_log, protocol=p)
            for p in ("connect", "grpcweb")
        }

    @contextlib.contextmanager
    def _call(self, kind: str, method: str, request: Any, ctx: Any) -> Iterator[CallRecorder]:
        recorder = self.recorders[protocol_of(ctx)]
        t0 = recorder.begin(kind, SERVICE, method, grpc_peer(ctx.client_address))
        code = "OK"
        try:
            recorder.received(kind, SERVICE, method, request)
            yield recorder
        except (asyncio.CancelledError, GeneratorExit):
            code = "CANCELLED"
            raise
        except ConnectError as exc:
            code = _CODE_NAMES[exc.code]
            raise
        except Exception as exc:  # every error becomes a status here
            code, status = status_of(exc)
            raise connect_error(code, status) from None
        finally:
            recorder.end(kind, SERVICE, method, t0, code)

    async def _unary(self, method: str, request: Any, ctx: Any) -> Any:
        with self._call("unary", method, request, ctx) as recorder:
            response = await getattr(self.servicer, method)(request, HttpContext(ctx))
            recorder.sent("unary", SERVICE, method).inc()
            if isinstance(response, Encoded):
                return response.message()  # the codec may be JSON
            return response

    async def create_table(self, request: Any, ctx: Any) -> Any:
        return await self._unary("CreateTable", request, ctx)

    async def list_tables(self, request: Any, ctx: Any) -> Any:
        return await self._unary("ListTables", request, ctx)

    async def join_table(self, request: Any, ctx: Any) -> Any:
        return await self._unary("JoinTable", request, ctx)

    async def add_bot(self, request: Any, ctx: Any) -> Any:
        return await self._unary("AddBot", request, ctx)

    async def leave_table(self, request: Any, ctx: Any) -> Any:
        return await self._unary("LeaveTable", request, ctx)

    async def get_table(self, request: Any, ctx: Any) -> Any:
        return await self._unary("GetTable", request, ctx)

    async def submit_action(self, request: Any, ctx: Any) -> Any:
        return await self._unary("SubmitAction", request, ctx)

    async def get_match_record(self, request: Any, ctx: Any) -> Any:
        return await self._unary("GetMatchRecord", request, ctx)

    async def find_match(self, request: Any, ctx: Any) -> Any:
        return await self._unary("FindMatch", request, ctx)

    async def create_player(self, request: Any, ctx: Any) -> Any:
        return await self._unary("CreatePlayer", request, ctx)

    async def get_player(self, request: Any, ctx: Any) -> Any:
        return await self._unary("GetPlayer", request, ctx)

    async def list_leaderboard(self, request: Any, ctx: Any) -> Any:
        return await self._unary("ListLeaderboard", request, ctx)

    async def list_matches(self, request: Any, ctx: Any) -> Any:
        return await self._unary("ListMatches", request, ctx)

    def watch_table(self, request: Any, ctx: Any) -> AsyncIterator[Any]:
        return self._server_stream("WatchTable", request, ctx)

    def watch_ticket(self, request: Any, ctx: Any) -> AsyncIterator[Any]:
        return self._server_stream("WatchTicket", request, ctx)

    def play_table(self, request: AsyncIterator[Any], ctx: Any) -> AsyncIterator[Any]:
        """Not over HTTP: a bidirectional stream needs HTTP/2 end to end, which browsers'
        fetch does not offer; they use WatchTable and SubmitAction."""
        raise ConnectError(
            Code.UNIMPLEMENTED,
            "PlayTable is served on the gRPC port only; use WatchTable and SubmitAction",
        )

    async def _server_stream(self, method: str, request: Any, ctx: Any) -> AsyncIterator[Any]:
        with self._call("server_stream", method, request, ctx) as recorder:
            sent = recorder.sent("server_stream", SERVICE, method)
            stream = getattr(self.servicer, method)(request, HttpContext(ctx))
            try:
                async for item in stream:
                    # Connect encodes messages (its JSON from their fields): a response the
                    # servicer yields already serialized is parsed back
                    yield watch_message(item) if isinstance(item, bytes) else item
                    sent.inc()
            finally:
                close = getattr(stream, "aclose", None)  # the servicer's async generator
                if close is not None:
                    await close()


def cors(app: ASGIApp, origins: str) -> ASGIApp:
    """``app`` answering CORS preflights and marking its answers for the allowed ``origins``
    (comma-separated; ``*``: any)."""
    allowed = {o.strip() for o in origins.split(",") if o.strip()}

    def allow(origin: str) -> bool:
        return "*" in allowed or origin in allowed

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", ())}
        origin = headers.get("origin")
        if origin is None or not allow(origin):
            if scope["method"] == "OPTIONS" and origin is not None:
                await _respond(send, 403, b"origin not allowed", [(b"vary", b"origin")])
                return
            await app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await _respond(
                send,
                204,
                b"",
                [
                    (b"access-control-allow-origin", origin.encode()),
                    (b"access-control-allow-methods", b"POST, GET, OPTIONS"),
                    (b"access-control-allow-headers", CORS_ALLOW_HEADERS.encode()),
                    (b"access-control-max-age", b"7200"),
                    (
                        b"vary",
                        b"origin, access-control-request-method, access-control-request-headers",
                    ),
                ],
            )
            return

        async def send_with_cors(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", ()),
                    (b"access-control-allow-origin", origin.encode()),
                    (b"access-control-expose-headers", CORS_EXPOSE_HEADERS.encode()),
                    (b"vary", b"origin"),
                ]
            await send(message)

        await app(scope, receive, send_with_cors)

    return middleware


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def static_files(root: Path | None) -> ASGIApp:
    """GET of the web client's built files under ``root`` (``index.html`` for any path that
    names no file, the single-page client's own routes); 404 without a ``root``."""

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD") or root is None:
            await _respond(send, 404, b"not found", [(b"content-type", b"text/plain")])
            return
        rel = os.path.normpath(scope["path"]).lstrip("/")
        path = (root / rel).resolve() if rel and rel != "." else root / "index.html"
        if root.resolve() not in path.parents and path != root.resolve() / "index.html":
            path = root / "index.html"
        if not path.is_file():
            path = root / "index.html"
        if not path.is_file():
            await _respond(send, 404, b"not found", [(b"content-type", b"text/plain")])
            return
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        cache = b"no-cache" if path.name == "index.html" else b"max-age=3600"
        body = path.read_bytes() if scope["method"] == "GET" else b""
        await _respond(
            send,
            200,
            body,
            [
                (b"content-type", kind.encode()),
                (b"cache-control", cache),
                (b"content-length", str(path.stat().st_size).encode()),
            ],
        )

    return serve


def web_app(servicer: TuteServicer, metrics: Metrics, settings: Settings) -> ASGIApp:
    """The ASGI application of the HTTP port: the API under ``/tute.v1.TuteService/``, the
    web client's files everywhere else, CORS around both."""
    codecs = [_Codec(google_protobuf_binary_codec()), _Codec(google_protobuf_json_codec())]
    api: ASGIApp = service_connect.TuteServiceASGIApplication(
        ConnectService(servicer, metrics, access_log=settings.access_log),
        codecs=codecs,
        read_max_bytes=MAX_MESSAGE_BYTES,
    )
    files = static_files(Path(settings.web_dir) if settings.web_dir else None)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PREFIX):
            await api(scope, receive, send)
        elif scope["type"] == "http":
            await files(scope, receive, send)

    return cors(route, settings.cors_origins)


class _Uvicorn(uvicorn.Server):
    """uvicorn that leaves the signals to the tute server (which stops it in ``shutdown``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class WebServer:
    """The HTTP port, served by uvicorn as a task of the running event loop."""

    def __init__(self, app: ASGIApp, sock: socket.socket, grace_s: float) -> None:
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_config=None,
            log_level="warning",
            access_log=False,
            ws="none",
            http="h11",
            timeout_graceful_shutdown=max(1, round(grace_s)),
        )
        self.app = app
        self.port = int(sock.getsockname()[1])
        self._sock = sock
        self._server = _Uvicorn(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(sockets=[self._sock]), name="http")
        while not self._server.started:
            if self._task.done():
                await self._task  # its error
                raise RuntimeError("the HTTP server did not start")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Stop taking connections; open ones get the grace period, then are cancelled."""
        self._server.should_exit = True
        if self._task is not None:
            await self._task


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one); OSError when taken.

    The socket names its protocol (TCP): asyncio turns Nagle's algorithm off (TCP_NODELAY) only
    on connections whose socket says it is TCP, and with Nagle on, a response written as a head
    then a body waits for the client's delayed acknowledgement of the head on every call of a
    kept-alive connection.
    """
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
