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
    http_port: int = 8080
    """The HTTP port for browsers: the API over Connect and gRPC-Web, and the web client's
    files (``web_dir``). 0: a free port (printed); -1: off."""
    cors_origins: str = "*"
    """Origins (comma-separated, such as ``https://tute.example``) whose pages may call the
    HTTP port; ``*``: any (tokens travel in a header, never in cookies)."""
    web_dir: str = ""
    """A directory of built web client files served on the HTTP port ('': none)."""
    store: str = "memory"
    """``memory``, ``redis://host:port/db`` or ``redis://node:port?cluster=1`` (Redis Cluster)."""
    store_index_shards: int = 1
    """Redis store: shards of the indexes across tables (lobby, due set, status counts), each
    in a slot of its own. 1 (a single Redis gains nothing from more: each shard is one more
    round trip for the lobby and the scheduler); on a Redis Cluster about its number of
    masters. Every replica must use the same; changing it rebuilds the indexes from the
    tables. An ``index_shards`` in the store URL wins."""
    history: str = "memory"
    """Where finished matches' records are kept (GetMatchRecord), after their tables expire:
    ``memory`` (SQLite in memory), ``sqlite:///path/history.db`` (a SQLite file) or
    ``postgresql://user@host:port/db`` (one history for every replica)."""
    players: str = ""
    """Where players, their ratings and ranked results are kept: a URL as for ``history``;
    '' (the default): the history's database (its own SQLite in memory when the history is
    ``memory``)."""
    history_casual_days: float = 0.0
    """Casual matches' records are deleted from the history this many days after the match
    ended (checked at start and hourly); 0: kept for ever."""
    history_ranked_days: float = 0.0
    """The same for ranked matches' records; 0: kept for ever."""
    event_loop: str = "auto"
    """``uvloop``, ``asyncio`` (the standard library's loop) or ``auto`` (uvloop where it is
    installed, else asyncio). The server costs about 18% fewer instructions per action on
    uvloop."""
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
    scheduler_poll_s: float = 0.5
    claim_lease_s: float = 1.0
    """How long a claimed due item (a turn deadline, a bot's turn) stays reserved for the
    replica that claimed it past its last renewal: the replica renews it every third of
    this while it works on the item, so a crashed replica's items are taken over this soon."""
    finished_ttl_s: float = 3600.0
    """How long a finished table is kept (views, resume) before it is dropped."""
    max_connection_age_s: float = 0.0
    """>0: close client connections after this long (spreads long-lived HTTP/2 connections
    across replicas behind a plain Kubernetes Service; clients reconnect and resume)."""
    disconnect_forfeit_s: float = 0.0
    """>0: during a match, a seated player with no open WatchTable stream (on any replica)
    for this many seconds forfeits it (RULES.md §11); 0: never (the turn clock still plays
    for an idle player). Clients that only poll GetTable should leave it at 0."""
    trusted_proxy_header: str = ""
    """A header in which proxies pass on the client's address, such as ``x-forwarded-for``
    (comma-separated, each proxy appending the address it saw). '' (default): no header is
    believed, and the per-caller limits count by the connection's peer address."""
    trusted_proxies: str = "127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"
    """With ``trusted_proxy_header``: the networks (comma-separated CIDRs) of the proxies
    whose header is believed (loopback and private networks by default; narrow it to your
    proxies: a client inside them can name its own address). The caller is the right-most
    address of the header not in them; a peer outside them is the caller itself."""
    create_rate_per_s: float = 0.2
    create_burst: int = 10
    """CreateTable per caller address: ``create_burst`` at once, then ``create_rate_per_s``
    per second (a token bucket in the store, shared by every replica; rate 0: no limit).
    Past it: RESOURCE_EXHAUSTED, reason RATE_LIMITED, with a RetryInfo."""
    watch_rate_per_s: float = 2.0
    watch_burst: int = 40
    """WatchTable stream opens per caller: by seat token when the stream opens a seat, else
    by address (rate 0: no limit)."""
    max_streams_per_caller: int = 32
    """Open WatchTable streams per caller (seat token, else address) on each replica, so that
    one client cannot take every stream slot (0: no limit). Past it: TOO_MANY_STREAMS."""
    bot_rate_per_s: float = 0.5
    bot_burst: int = 12
    """AddBot per caller address (rate 0: no limit)."""
    invite_rate_per_s: float = 0.1
    invite_burst: int = 10
    """JoinTable by invite code per caller address: each attempt holds a token, given back
    when the code exists, so only unknown codes use the bucket up (rate 0: no limit)."""
    max_bot_seats: int = 1000
    """Bot seats in waiting and playing tables across the store (every replica); AddBot past
    it: RESOURCE_EXHAUSTED, reason TOO_MANY_BOTS (0: no limit). Size it to the bots the
    replicas can play beside their players (``make bench-abuse`` with ``--botnet`` measures
    a player's latency with the budget full)."""
    bot_workers: int = os.cpu_count() or 1
    """Worker processes computing server-side bots' moves (default: the machine's cores)."""
    bot_budget_scale: float = 1.0
    """Scales every bot level's search budget (samples and think time); below 1 is quicker
    and weaker."""
    access_log: bool = True
    """Log one ``rpc`` line per call (method, code, duration_ms, peer; streams when they end)."""
    max_spectator_streams_per_table: int = 64
    """Spectator (token-less) WatchTable streams per table on this replica. Seated players'
    streams do not count here: spectators never lock a player out of its own table."""
    max_streams_per_seat: int = 4
    """WatchTable streams a seat's token may hold open per replica (a player's devices)."""
    matchmaking_deadline_s: float = 30.0
    """A matchmaking ticket that has waited this long is seated with the humans its window
    allows and bots of their level in the seats still missing."""
    matchmaking_poll_s: float = 1.0
    """How often each replica's matcher passes over the queues (and ticket streams look at
    their tickets)."""
    ticket_ttl_s: float = 10.0
    """A matchmaking ticket without an open WatchTicket stream is cancelled this long after
    FindMatch or the stream's last look (so a crashed replica's tickets fade out)."""
    ranked_turn_time_s: int = 30
    """The turn clock of ranked tables (seconds per turn)."""
    jwt_secret_file: str = ""
    """A file holding the HS256 secret of the frontend's login (at least 32 bytes; its
    surrounding whitespace is ignored): JWTs signed with it are player credentials."""
    jwt_secret: str = dataclasses.field(default="", repr=False)
    """The HS256 secret itself (prefer ``jwt_secret_file``, or set it only in the
    environment: a flag shows in the process list). Never in the settings' repr."""
    jwt_jwks_file: str = ""
    """A JWKS file (``{"keys": [...]}``) of the login's public keys: RSA keys verify RS256,
    P-256 EC keys ES256 (a key's ``kid`` is matched against the JWT header's)."""
    jwt_issuer: str = ""
    """With a JWT key: the ``iss`` every JWT must have (required)."""
    jwt_audience: str = ""
    """With a JWT key: the audience every JWT's ``aud`` must name (required)."""
    jwt_leeway_s: float = 30.0
    """The clock skew allowed when checking a JWT's ``exp``, ``nbf`` and ``iat`` (0 to 300)."""
    jwt_name_claim: str = "name"
    """The JWT claim that names a player seen for the first time (without one, or with a
    name that is no valid display name: "Player" and 4 hex digits)."""
    ranked_leave_cooldown_s: float = 300.0
    """A player who left a ranked match (LeaveTable, or forfeited away) may not FindMatch
    for this long after the match's rating is written (0: no cooldown)."""
    waiting_ttl_s: float = 600.0
    """A waiting table where no human sits (nobody took a seat, only bots did, or every human
    left) is deleted this long after its creation or after its last human left, and so stops
    counting towards ``max_tables``; 0: it is kept like any other table (the store drops a
    table 24 h after its last change). A table where a human sits waits."""


_HELP = {
    "host": "interface to listen on",
    "port": "gRPC port (0: pick a free one and print it)",
    "metrics_port": "Prometheus metrics port (0: off)",
    "http_port": "HTTP port for browsers: Connect and gRPC-Web API and the web client "
    "(0: pick a free one and print it; -1: off)",
    "cors_origins": "comma-separated origins whose pages may call the HTTP port ('*': any)",
    "web_dir": "directory of built web client files served on the HTTP port ('': none)",
    "store": "'memory', redis://host:port/db, or redis://node:port?cluster=1 for Redis Cluster",
    "store_index_shards": "Redis store: shards of the lobby, due set and status indexes (about "
    "the number of masters of a Redis Cluster; the same on every replica)",
    "history": "where finished match records are kept: 'memory', sqlite:///path/history.db or "
    "postgresql://user@host:port/db",
    "players": "where players and ratings are kept: a URL as for history ('': the history's "
    "database)",
    "history_casual_days": "days a casual match's record is kept in the history (0: for ever)",
    "history_ranked_days": "days a ranked match's record is kept in the history (0: for ever)",
    "event_loop": "uvloop, asyncio, or auto (uvloop where installed)",
    "log_format": "json, console or auto",
    "log_level": "debug, info, warning or error",
    "max_tables": "refuse new tables past this many (RESOURCE_EXHAUSTED)",
    "max_streams": "refuse spectator WatchTable streams once this replica holds this many streams",
    "grace_s": "seconds open calls get on SIGTERM before streams end with UNAVAILABLE",
    "bot_delay_s": "seconds a server-side bot waits before playing",
    "scheduler_poll_s": "how often the scheduler looks for due turns at the latest (a commit on "
    "this replica that makes a turn due sooner wakes it)",
    "claim_lease_s": "seconds a claimed due item stays reserved for the replica that claimed it "
    "past its last renewal (renewed while it works on it)",
    "finished_ttl_s": "seconds a finished table is kept",
    "max_connection_age_s": "close client connections after this many seconds (0: never)",
    "disconnect_forfeit_s": "seconds a seated player may go without a WatchTable stream during "
    "a match before forfeiting it (0: never)",
    "trusted_proxy_header": "header in which trusted proxies pass the client's address, such as "
    "x-forwarded-for ('': believe none; limits count by peer address)",
    "trusted_proxies": "CIDRs of the proxies whose trusted_proxy_header is believed; the caller is "
    "the right-most address of the header not in them",
    "create_rate_per_s": "CreateTable calls per second per caller address (0: no limit)",
    "create_burst": "CreateTable calls a caller address may make at once",
    "watch_rate_per_s": "WatchTable stream opens per second per caller: seat token, else address "
    "(0: no limit)",
    "watch_burst": "WatchTable stream opens a caller may make at once",
    "max_streams_per_caller": "open WatchTable streams per caller on this replica (0: no limit)",
    "bot_rate_per_s": "AddBot calls per second per caller address (0: no limit)",
    "bot_burst": "AddBot calls a caller address may make at once",
    "invite_rate_per_s": "JoinTable attempts with an unknown invite code per second per caller "
    "address (0: no limit)",
    "invite_burst": "JoinTable attempts with an unknown invite code a caller address may make at "
    "once",
    "max_bot_seats": "bot seats in waiting and playing tables across every replica; AddBot past "
    "it is refused (0: no limit)",
    "bot_workers": "worker processes computing server-side bots' moves",
    "bot_budget_scale": "scale of every bot level's search budget (samples and think time)",
    "access_log": "log one 'rpc' line per call: method, code, duration_ms, peer (true/false)",
    "max_spectator_streams_per_table": "refuse spectator WatchTable streams past this many per "
    "table on this replica (seated players' streams do not count)",
    "max_streams_per_seat": "refuse a seat's WatchTable streams past this many per seat on this "
    "replica",
    "matchmaking_deadline_s": "seconds a matchmaking ticket waits before bots of the humans' "
    "level fill the seats still missing",
    "matchmaking_poll_s": "how often the matcher passes over the queues (seconds)",
    "ticket_ttl_s": "seconds a matchmaking ticket lives without an open WatchTicket stream",
    "ranked_turn_time_s": "seconds per turn at ranked tables",
    "jwt_secret_file": "file holding the HS256 secret of the frontend's login JWTs ('': none)",
    "jwt_secret": "the HS256 secret itself (prefer jwt_secret_file or the environment)",
    "jwt_jwks_file": "JWKS file of the login's RS256/ES256 public keys ('': none)",
    "jwt_issuer": "the 'iss' every JWT must have (required with a JWT key)",
    "jwt_audience": "the audience every JWT's 'aud' must name (required with a JWT key)",
    "jwt_leeway_s": "clock skew allowed on a JWT's exp, nbf and iat (seconds, 0 to 300)",
    "jwt_name_claim": "JWT claim naming a player seen for the first time",
    "ranked_leave_cooldown_s": "seconds a player who left a ranked match may not queue for "
    "ranked play (0: no cooldown)",
    "waiting_ttl_s": "seconds a waiting table where no human sits is kept before it is deleted "
    "(0: kept like any table)",
}


def boolean(text: str) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); ValueError for anything else."""
    word = text.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _convert(field: dataclasses.Field[object], text: str) -> object:
    default = field.default
    if isinstance(default, bool):
        return boolean(text)
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
            type=type(f.default) if not isinstance(f.default, bool) else boolean,
            default=default,
            help=f"{_HELP[f.name]} (env TUTE_{f.name.upper()}; default {default})",
        )
    ns = parser.parse_args(argv)
    return Settings(**vars(ns))
