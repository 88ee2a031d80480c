"""``tute-server``: run the gRPC server until SIGTERM or SIGINT.

It writes where it listens as its first line (an event ``listening`` in JSON mode), whatever the
log level; a port that is taken ends it at once with one line (``cannot_start``) and exit
status 1.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence

from .config import load_settings
from .logs import announce, configure_logging
from .metrics import ENGINE_BUILD
from .server import StartupError, create_server

__all__ = ["ENGINE_BUILD", "main"]


async def _serve(argv: Sequence[str] | None) -> int:
    settings = load_settings(argv)
    configure_logging(settings.log_format, settings.log_level)
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
        + f", store {store}, engine {ENGINE_BUILD}",
        grpc=f"{settings.host}:{server.port}",
        http=f"{settings.host}:{server.http_port}" if server.web else "off",
        metrics=f"{settings.host}:{settings.metrics_port}" if settings.metrics_port else "off",
        store=store,
        engine=ENGINE_BUILD,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.shutdown()
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    code = asyncio.run(_serve(argv))
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
