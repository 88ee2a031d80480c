"""How the Redis store reaches Redis: the clients a store URL makes, the call gate, the
classification of "Redis cannot serve now" as :class:`StoreUnavailable`, and the scripts."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import importlib.resources
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisClusterException, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..base import StoreUnavailable
from .mux import Mux
from .options import URL_OPTIONS, RedisOptions

Client = aredis.Redis | RedisCluster

UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
"""The errors of a call that did not get an answer from Redis."""
_UNAVAILABLE_REPLIES = (
    "LOADING",
    "READONLY",
    "MASTERDOWN",
    "MISCONF",
    "NOREPLICAS",
    "CLUSTERDOWN",
    "TRYAGAIN",
)
_TRUE = ("1", "true", "yes", "on")


def unavailable(exc: BaseException) -> bool:
    """Is this reply one of "Redis cannot serve now" (loading, read-only, cluster down...)?"""
    if isinstance(exc, RedisClusterException):
        return True  # no node reachable, slot not covered: the cluster cannot be used now
    if not isinstance(exc, ResponseError):
        return False
    code = getattr(exc, "status_code", None) or str(exc).split(" ", 1)[0]
    return code in _UNAVAILABLE_REPLIES or str(exc).startswith(_UNAVAILABLE_REPLIES)


@contextlib.contextmanager
def guard(where: str) -> Iterator[None]:
    """Turn "Redis cannot be reached" into :class:`StoreUnavailable`."""
    try:
        yield
    except UNREACHABLE as exc:
        raise StoreUnavailable(f"{where}: {exc or type(exc).__name__}") from exc
    except (ResponseError, RedisClusterException) as exc:
        if unavailable(exc):
            raise StoreUnavailable(f"{where}: {exc or type(exc).__name__}") from exc
        raise
    except AttributeError as exc:
        # redis-py 8.1's Cluster client can close a node's connections (a topology refresh
        # after a connection error) under a call that is still connecting: its writer is
        # then None. The call never reached Redis; it is a transient connection failure.
        if _raised_in_redis_connection(exc):
            raise StoreUnavailable(f"{where}: connection reset while connecting") from exc
        raise


def _raised_in_redis_connection(exc: BaseException) -> bool:
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return last is not None and last.tb_frame.f_code.co_filename.endswith(
        ("redis/asyncio/connection.py", "redis\\asyncio\\connection.py")
    )


INCLUDE = "-- include:"
"""The first line of a script made of others (:func:`_load_scripts`)."""


def _load_scripts() -> dict[str, str]:
    """Every ``scripts/<name>.lua`` by name. A script whose first line is ``-- include: a, b``
    gets those scripts in front, each as a function ``<name>_step(KEYS, ARGV)`` it calls; a
    script that calls ``now_ms()`` (itself or through one it includes) gets the shared
    ``now_ms.lua`` in front."""
    folder = importlib.resources.files(__package__).joinpath("scripts")
    texts = {
        entry.name.removesuffix(".lua"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".lua")
    }
    now_ms = texts.pop("now_ms")
    out = {}
    for name, own in texts.items():
        first = own.split("\n", 1)[0]
        text = own
        if first.startswith(INCLUDE):
            steps = [
                f"local function {part}_step(KEYS, ARGV)\n{texts[part]}end\n"
                for part in (p.strip() for p in first.removeprefix(INCLUDE).split(","))
            ]
            text = "".join(steps) + own
        out[name] = now_ms + text if "now_ms()" in text else text
    return out


SCRIPTS = _load_scripts()
"""The store's Lua scripts by name, as sent to Redis."""


class Script:
    """A Lua script run with ``EVALSHA``, sent whole with ``EVAL`` the first time a node does
    not know it (``EVAL`` caches it there). Both route by the script's keys on a Cluster;
    redis-py's ``register_script`` would instead load an unknown script on every primary, so
    that one primary down would break the first use of a script on the others."""

    def __init__(self, client: Client, name: str, *, mux: Mux | None = None) -> None:
        self.client = client
        self.mux = mux
        """Where it is sent instead of through the client (:class:`.mux.Mux`), if anywhere."""
        self.text = SCRIPTS[name]
        self.sha = hashlib.sha1(self.text.encode()).hexdigest()

    async def __call__(self, keys: Sequence[str], args: Sequence[bytes | str | int]) -> Any:
        mux = self.mux
        if mux is not None:
            try:
                return await mux.call("EVALSHA", self.sha, len(keys), *keys, *args)
            except NoScriptError:
                return await mux.call("EVAL", self.text, len(keys), *keys, *args)
        try:
            return await self.client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self.client.eval(self.text, len(keys), *keys, *args)


class Link:
    """The store's way to Redis: the client of its calls, the client of its stream readers
    (no silent retries: each reader sees its connection break), where Redis is (for error
    messages), and the gate of at most ``max_calls`` calls at once (0: none)."""

    def __init__(
        self,
        client: Client,
        readers: Client,
        *,
        where: str = "Redis",
        max_calls: int = 0,
        timeout_s: float = 1.0,
        mux: Mux | None = None,
    ) -> None:
        self.client = client
        self.readers = readers
        self.mux = mux
        """The pipelined connection of a single Redis, for the hot path (None: a Cluster)."""
        self.where = where
        self.cluster = isinstance(client, RedisCluster)
        self._gate = asyncio.Semaphore(max_calls) if max_calls > 0 else None
        self._gate_timeout_s = timeout_s

    async def command(self, *args: bytes | str | int | float) -> Any:
        """One command's reply as Redis sends it: on the pipelined connection of a single
        Redis, else through the client (a Cluster routes it by its first key)."""
        if self.mux is not None:
            return await self.mux.call(*args)
        return await self.client.execute_command(*args)

    @contextlib.asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """Around every call: "cannot be reached" becomes StoreUnavailable; on a Cluster, at
        most ``max_calls`` calls at once (the others wait up to the timeout, as for a free
        connection of the single-node pool)."""
        with guard(self.where):
            if self._gate is None:
                yield
                return
            try:
                async with asyncio.timeout(self._gate_timeout_s):
                    await self._gate.acquire()
            except TimeoutError:
                raise StoreUnavailable(f"{self.where}: no connection free") from None
            try:
                if isinstance(self.client, RedisCluster):
                    # Learn the layout first (once, and again after the client dropped it):
                    # redis-py routes a call made before then as keyless, to any node.
                    await self.client.initialize()
                yield
            finally:
                self._gate.release()

    async def replicated(self, key: str, replicas: int, wait_ms: int) -> None:
        """Return once ``replicas`` replicas of ``key``'s node have every write made there so
        far (``WAIT``); else raise :class:`StoreUnavailable`.

        ``WAIT`` counts the writes of its own connection, so it goes in one pipeline after a
        write of its own to ``key`` (a small key of the same slot that expires): a replica
        that has that write has every earlier one of the node."""
        async with self.call():
            pipe = self.client.pipeline(transaction=False)
            pipe.set(key, b"", px=60_000)
            if isinstance(self.client, RedisCluster):
                node = self.client.get_node_from_key(key)
                pipe.execute_command("WAIT", replicas, wait_ms, target_nodes=node)
            else:
                pipe.execute_command("WAIT", replicas, wait_ms)
            _, acked = await pipe.execute()
        if int(acked) < replicas:
            raise StoreUnavailable(
                f"{self.where}: {int(acked)} of {replicas} replicas "
                f"acknowledged a write within {wait_ms} ms"
            )

    async def close(self) -> None:
        if self.mux is not None:
            await self.mux.close()
        for client in (self.client, self.readers):
            with contextlib.suppress(Exception):
                await client.aclose()


def open_link(
    url: str, options: RedisOptions, *, max_connections: int = 64
) -> tuple[Link, RedisOptions]:
    """The link a store URL names (``?cluster=1``: the Redis Cluster that node belongs to),
    and ``options`` with the store options of its query string (which are removed before
    redis-py sees the rest)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    ours = {name: query.pop(name) for name in (*URL_OPTIONS, "cluster") if name in query}
    cluster = ours.pop("cluster", "").lower() in _TRUE
    options = options.with_url_options(ours)
    clean = urlunsplit(parts._replace(query=urlencode(query)))
    timeout = options.timeout_s
    options = dataclasses.replace(options, reader_grace_s=max(options.reader_grace_s, 2 * timeout))
    reader_timeout = options.block_ms / 1000 + timeout + 1.0
    host = parts.hostname or parts.path or "localhost"
    if cluster:
        if parts.scheme not in ("redis", "rediss") or not parts.hostname:
            raise ValueError(
                f"a Redis Cluster store URL is redis://host:port?cluster=1 (or rediss://),"
                f" not {url!r}"
            )
        if parts.path.strip("/") not in ("", "0"):
            raise ValueError("a Redis Cluster has database 0 only")

        def cluster_client(retries: int = 1, **kw: Any) -> RedisCluster:
            # One retry at once (as below); a node that cannot be reached makes the client
            # look the cluster's layout up again before it. A MOVED reply moves its slot
            # alone (reinitialize_steps=0): redis-py's default closes every connection of
            # every node on each fifth MOVED, under the calls running on them, which then
            # fail or are sent again. A layout look-up asked for by a failed call runs at
            # once (topology_refresh_min_interval=0; one at a time, the calls meanwhile
            # keep the layout they have): redis-py 8.2's default waits a second between
            # two, longer after look-ups that failed during the outage, and every call
            # until then goes on to the dead master although its replica has taken over.
            return RedisCluster.from_url(
                clean,
                socket_connect_timeout=timeout,
                decode_responses=False,
                retry=Retry(NoBackoff(), retries),
                reinitialize_steps=0,
                topology_refresh_min_interval=0.0,
                **kw,
            )

        link = Link(
            cluster_client(max_connections=max_connections, socket_timeout=timeout),
            # the readers see every broken connection (they check the table after it)
            cluster_client(0, max_connections=1_000_000, socket_timeout=reader_timeout),
            where=f"Redis Cluster at {host}:{parts.port or 6379}",
            max_calls=max_connections,
            timeout_s=timeout,
        )
        return link, options
    common: dict[str, Any] = {
        "socket_connect_timeout": timeout,
        # One immediate retry on a broken connection (a pooled connection is stale after a
        # Redis restart); commits and creates are safe to send twice.
        "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        "decode_responses": False,
        "health_check_interval": 0,
    }
    pool = aredis.BlockingConnectionPool.from_url(
        clean,
        max_connections=max_connections,
        timeout=timeout,
        socket_timeout=timeout,
        **common,
    )
    # No retry for the readers: each sees its connection break (a Redis restart) and checks
    # its table's history before it reads on.
    readers_pool = aredis.ConnectionPool.from_url(
        clean, socket_timeout=reader_timeout, **{**common, "retry": Retry(NoBackoff(), 0)}
    )
    where = f"Redis at {host}:{parts.port or 6379}{parts.path if parts.hostname else ''}"
    link = Link(
        aredis.Redis.from_pool(pool),
        aredis.Redis.from_pool(readers_pool),
        where=where,
        timeout_s=timeout,
        mux=Mux(pool, timeout),
    )
    return link, options
