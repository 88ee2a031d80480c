"""structlog set-up: JSON lines (console rendering on a terminal), with the per-request context
(method, peer, table id, seat) bound by the interceptor through context variables. In JSON mode
every line the server writes is one JSON object.

Nothing logged may hold a hidden card: the service logs ids, seats, reasons and counts only,
never hands, actions' cards or tokens.
"""

from __future__ import annotations

import logging
import sys

import structlog

_FORMAT = "json"
"""The format :func:`configure_logging` chose (``json`` or ``console``)."""


def configure_logging(fmt: str = "auto", level: str = "info") -> None:
    """Configure structlog once for the process."""
    global _FORMAT  # noqa: PLW0603 - the process has one logging configuration, set at start
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() else "json"
    _FORMAT = "console" if fmt == "console" else "json"
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer() if fmt == "console" else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[*_processors(), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        # WriteLogger: the same line as PrintLogger's without print's work (a quarter of an
        # access line's cost).
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    # What libraries log through the standard library (asyncio, grpc) is rendered the same way.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_logger_name,
                structlog.stdlib.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.getLevelNamesMapping().get(level.upper(), logging.INFO))


def _processors() -> list[structlog.types.Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
    ]


def announce(event: str, text: str, *, level: str = "info", **fields: object) -> None:
    """A line written whatever the log level (the server's address, a failure to start): the
    event and its fields as JSON in JSON mode, ``text`` for a person in console mode."""
    if _FORMAT == "console":
        print(text, file=sys.stderr, flush=True)
        return
    logger = structlog.wrap_logger(
        structlog.WriteLogger(file=sys.stderr),
        processors=[*_processors(), structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
    )
    getattr(logger, level)(event, **fields)
