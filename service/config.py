"""Server configuration: ``TUTE_*`` environment variables, overridden by command-line flags.

Run ``tute-server --help`` for the list; every flag ``--some-name`` has the environment
variable ``TUTE_SOME_NAME``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping, Sequence


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything the server can be told. Defaults suit ``make run`` on one machine."""

    host: str = "0.0.0.0"
    port: int = 50051
    metrics_port: int = 9464
    """0 disables the metrics endpoint."""
    store: str = "memory"
    """``memory``, ``redis://host:port/db`` or ``redis://node:port?cluster=1`` (Redis Cluster)."""
    log_format: str = "auto"
    """``json``, ``console`` or ``auto`` (console on a terminal, JSON otherwise)."""
    log_level: str = "info"
    max_tables: int = 10_000
    max_streams: int = 10_000
    """Spectator WatchTable streams are refused once this replica holds this many streams
    (seated players' streams are bounded by ``max_streams_per_seat`` instead)."""
    grace_s: float = 5.0
    """On SIGTERM: how long open calls get to finish before streams end with UNAVAILABLE."""
    bot_delay_s: float = 0.5
    """How long a server-side bot waits before it plays (0 in tests)."""
    scheduler_poll_s: float = 0.05
    claim_lease_s: float = 5.0
    finished_ttl_s: float = 3600.0
    """How long a finished table is kept (views, resume) before it is dropped."""
    max_connection_age_s: float = 0.0
    """>0: close client connections after this long (spreads long-lived HTTP/2 connections
    across replicas behind a plain Kubernetes Service; clients reconnect and resume)."""
    disconnect_forfeit_s: float = 0.0
    """>0: during a match, a seated player with no open WatchTable stream (on any replica)
    for this many seconds forfeits it (RULES.md §11); 0: never (the turn clock still plays
    for an idle player). Clients that only poll GetTable should leave it at 0."""
    max_spectator_streams_per_table: int = 64
    """Spectator (token-less) WatchTable streams per table on this replica. Seated players'
    streams do not count here: spectators never lock a player out of its own table."""
    max_streams_per_seat: int = 4
    """WatchTable streams a seat's token may hold open per replica (a player's devices)."""
    waiting_ttl_s: float = 600.0
    """A waiting table where no human sits (nobody took a seat, only bots did, or every human
    left) is deleted this long after its creation or after its last human left, and so stops
    counting towards ``max_tables``; 0: it is kept like any other table (the store drops a
    table 24 h after its last change). A table where a human sits waits."""


_HELP = {
    "host": "interface to listen on",
    "port": "gRPC port (0: pick a free one and print it)",
    "metrics_port": "Prometheus metrics port (0: off)",
    "store": "'memory', redis://host:port/db, or redis://node:port?cluster=1 for Redis Cluster",
    "log_format": "json, console or auto",
    "log_level": "debug, info, warning or error",
    "max_tables": "refuse new tables past this many (RESOURCE_EXHAUSTED)",
    "max_streams": "refuse spectator WatchTable streams once this replica holds this many streams",
    "grace_s": "seconds open calls get on SIGTERM before streams end with UNAVAILABLE",
    "bot_delay_s": "seconds a server-side bot waits before playing",
    "scheduler_poll_s": "how often the scheduler looks for due turns",
    "claim_lease_s": "seconds a claimed due item is reserved for the replica that claimed it",
    "finished_ttl_s": "seconds a finished table is kept",
    "max_connection_age_s": "close client connections after this many seconds (0: never)",
    "disconnect_forfeit_s": "seconds a seated player may go without a WatchTable stream during "
    "a match before forfeiting it (0: never)",
    "max_spectator_streams_per_table": "refuse spectator WatchTable streams past this many per "
    "table on this replica (seated players' streams do not count)",
    "max_streams_per_seat": "refuse a seat's WatchTable streams past this many per seat on this "
    "replica",
    "waiting_ttl_s": "seconds a waiting table where no human sits is kept before it is deleted "
    "(0: kept like any table)",
}


def _convert(field: dataclasses.Field[object], text: str) -> object:
    default = field.default
    if isinstance(default, bool):
        return text.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Settings from the environment, then flags; ``--help`` lists them."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in dataclasses.fields(Settings):
        key = "TUTE_" + f.name.upper()
        if key in env:
            try:
                values[f.name] = _convert(f, env[key])
            except ValueError:
                raise SystemExit(f"{key}: not a valid {type(f.default).__name__}") from None
    parser = argparse.ArgumentParser(
        prog="tute-server",
        description="tute: the authoritative Tute game server (gRPC). "
        "Each flag may also be set as TUTE_<NAME> in the environment.",
    )
    for f in dataclasses.fields(Settings):
        default = values.get(f.name, f.default)
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=type(f.default) if not isinstance(f.default, bool) else str,
            default=default,
            help=f"{_HELP[f.name]} (env TUTE_{f.name.upper()}; default {default})",
        )
    ns = parser.parse_args(argv)
    return Settings(**vars(ns))
