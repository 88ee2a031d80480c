"""``tute-server``: run the gRPC server until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Sequence

import structlog

import engine.game

from .config import load_settings
from .logs import configure_logging
from .server import create_server

ENGINE_BUILD = "python" if engine.game.__file__.endswith(".py") else "mypyc"
"""Which build of the engine this process runs: ``mypyc`` (``make run``) or ``python``."""


async def _serve(argv: Sequence[str] | None) -> None:
    settings = load_settings(argv)
    configure_logging(settings.log_format, settings.log_level)
    log = structlog.get_logger("tute.server")
    server = await create_server(settings)
    if settings.metrics_port:
        server.metrics.serve(settings.metrics_port)
    log.info(
        "listening",
        grpc=f"{settings.host}:{server.port}",
        metrics=f"{settings.host}:{settings.metrics_port}" if settings.metrics_port else "off",
        store=settings.store.split("@")[-1],
        engine=ENGINE_BUILD,
    )
    print(
        f"tute-server listening on {settings.host}:{server.port} (gRPC)"
        + (f", metrics on :{settings.metrics_port}/metrics" if settings.metrics_port else "")
        + f", store {settings.store.split('@')[-1]}, engine {ENGINE_BUILD}",
        file=sys.stderr,
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.shutdown()


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(_serve(argv))


if __name__ == "__main__":
    main()
