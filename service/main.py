"""``tute-server``: run the gRPC server until SIGTERM or SIGINT.

It writes where it listens as its first line (an event ``listening`` in JSON mode, naming the
engine build and the event loop), whatever the log level; a port that is taken ends it at once
with one line (``cannot_start``) and exit status 1.

The server runs on uvloop (``event_loop``: ``auto`` where uvloop is installed, or ``uvloop``)
or on the standard library's loop (``asyncio``, or ``auto`` without uvloop). grpc.aio runs on
either; on uvloop the loop's own steps (callbacks, futures' wake-ups, the poll) are C rather
than Python, and an action costs the server about 18% fewer instructions
(``benchmarks.instructions``).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Sequence

from .config import Settings, load_settings
from .logs import announce, configure_logging
from .metrics import ENGINE_BUILD
from .server import StartupError, create_server

__all__ = ["ENGINE_BUILD", "main"]


EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def loop_factory(choice: str) -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The event loop ``choice`` (of :data:`EVENT_LOOPS`) names, and what makes one;
    ``StartupError`` for an unknown choice, or ``uvloop`` where uvloop is not installed."""
    if choice not in EVENT_LOOPS:
        raise StartupError(f"event_loop must be one of {', '.join(EVENT_LOOPS)}, not {choice!r}")
    if choice != "asyncio":
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise StartupError("event_loop uvloop: uvloop is not installed") from None
        else:
            return "uvloop", uvloop.new_event_loop
    return "asyncio", asyncio.new_event_loop


async def _serve(settings: Settings, loop_name: str) -> int:
    try:
        server = await create_server(settings)
    except StartupError as exc:
        announce("cannot_start", f"tute-server: {exc}", level="error", error=str(exc))
        return 1
    store = settings.store.split("@")[-1]  # a Redis URL without its credentials
    announce(
        "listening",
        f"tute-server listening on {settings.host}:{server.port} (gRPC)"
        + (f", HTTP (Connect, gRPC-Web) on :{server.http_port}" if server.web else "")
        + (f", metrics on :{settings.metrics_port}/metrics" if settings.metrics_port else "")
        + f", store {store}, engine {ENGINE_BUILD}, loop {loop_name}",
        grpc=f"{settings.host}:{server.port}",
        http=f"{settings.host}:{server.http_port}" if server.web else "off",
        metrics=f"{settings.host}:{settings.metrics_port}" if settings.metrics_port else "off",
        store=store,
        engine=ENGINE_BUILD,
        loop=loop_name,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.shutdown()
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    settings = load_settings(argv)
    configure_logging(settings.log_format, settings.log_level)
    try:
        loop_name, factory = loop_factory(settings.event_loop)
    except StartupError as exc:
        announce("cannot_start", f"tute-server: {exc}", level="error", error=str(exc))
        raise SystemExit(1) from None
    with asyncio.Runner(loop_factory=factory) as runner:
        code = runner.run(_serve(settings, loop_name))
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
