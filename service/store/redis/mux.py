"""Calls pipelined on one connection to a single Redis, for the store's hot path (the commit
script of every move).

redis-py takes a connection from its pool for each call, encodes each argument in Python,
writes the command in a task of its own (its socket timeout) and gives the connection back:
about 80-100 µs of a replica's CPU per call here, more than Redis spends running the script. A
:class:`Mux` writes each call's command at once on its one connection (hiredis packs it) and
waits for its reply, which comes in the order the commands went (Redis answers a connection's
commands in order); one task reads the replies as they come, many a read, and hands each to
its call. The connection is made by redis-py from the store's pool settings (address, TLS,
password, database), so it is set up as the pool's are; after that redis-py does not touch
it.

Errors are redis-py's: a reply error is the exception redis-py would raise
(``NoScriptError``, ``ResponseError`` ...), a connection that breaks or a reply that takes
longer than the timeout is ``ConnectionError`` or ``TimeoutError`` for every call waiting on
it, and the connection is made again by the next call. A call whose connection broke is sent
once more on a new one, as the pool's retry does: the store's scripts are safe to run twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any, cast

import hiredis
from redis._parsers.base import BaseParser
from redis.asyncio import ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse
from redis.exceptions import TimeoutError as RedisTimeoutError

READ_SIZE = 1 << 16


def reply_parser() -> hiredis.Reader:
    """A parser of Redis replies whose error replies are the exceptions redis-py raises."""
    return hiredis.Reader(protocolError=InvalidResponse, replyError=BaseParser.parse_error)


def streams(conn: Any) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The streams of a connection redis-py made and set up (connected, authenticated, its
    database selected), for a caller that reads and writes them itself from then on."""
    return conn._reader, conn._writer  # noqa: SLF001


async def read_replies(
    stream: asyncio.StreamReader, parser: hiredis.Reader, timeout_s: float | None
) -> list[Any]:
    """The replies one read of ``stream`` completes (at least one; an error reply is
    returned as its exception). ConnectionError when the connection closed, TimeoutError
    after ``timeout_s`` without a whole reply."""
    replies: list[Any] = []
    try:
        async with asyncio.timeout(timeout_s):
            while not replies:
                data = await stream.read(READ_SIZE)
                if not data:
                    raise RedisConnectionError("Connection closed by server.")
                parser.feed(data)
                while (reply := parser.gets()) is not False:
                    replies.append(reply)
    except TimeoutError:
        raise RedisTimeoutError("Timeout reading from Redis") from None
    return replies


class _Pipe:
    """One connection and the calls waiting for its replies, in order."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.stream, self.writer = streams(conn)
        self.pending: deque[asyncio.Future[Any]] = deque()
        self.parser = reply_parser()
        self.task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None
        """Why it broke (None: it has not)."""


class Mux:
    """Redis calls pipelined on one connection (made when first needed, and again after it
    broke). ``timeout_s``: the longest a call waits for its reply."""

    def __init__(self, pool: ConnectionPool, timeout_s: float) -> None:
        self._pool = pool
        self._timeout_s = timeout_s
        self._pipe: _Pipe | None = None
        self._connecting = asyncio.Lock()
        self._closed = False

    async def call(self, *args: bytes | str | int | float) -> Any:
        """Send one command; its reply (an error reply raised as redis-py raises it)."""
        # (hiredis's stub types its argument as a 1-tuple: any tuple of these is packed)
        command = hiredis.pack_command(cast(Any, args))
        for attempt in (0, 1):
            pipe = self._pipe or await self._connect()
            future = asyncio.get_running_loop().create_future()
            pipe.pending.append(future)
            pipe.writer.write(command)
            try:
                async with asyncio.timeout(self._timeout_s):
                    return await future
            except TimeoutError:
                self._break(pipe, RedisTimeoutError("Timeout reading from Redis"))
                raise RedisTimeoutError("Timeout reading from Redis") from None
            except RedisConnectionError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _connect(self) -> _Pipe:
        async with self._connecting:
            if self._closed:
                raise RedisConnectionError("the store is closed")
            if self._pipe is not None:
                return self._pipe
            conn: Any = cast(Any, self._pool).make_connection()
            await conn.connect()
            pipe = _Pipe(conn)
            pipe.task = asyncio.create_task(self._read(pipe), name="redis-mux-read")
            self._pipe = pipe
            return pipe

    async def _read(self, pipe: _Pipe) -> None:
        pending = pipe.pending
        try:
            while True:
                for reply in await read_replies(pipe.stream, pipe.parser, None):
                    future = pending.popleft()
                    if future.done():
                        continue  # its call was cancelled or timed out
                    if isinstance(reply, Exception):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        except asyncio.CancelledError:
            raise
        except (OSError, RedisConnectionError, InvalidResponse, IndexError) as exc:
            error = exc if isinstance(exc, RedisConnectionError) else None
            self._break(pipe, error or RedisConnectionError(f"Error reading from Redis: {exc}"))

    def _break(self, pipe: _Pipe, error: BaseException) -> None:
        """The connection is done with: every call waiting on it fails with ``error``."""
        if pipe.error is not None:
            return
        pipe.error = error
        if self._pipe is pipe:
            self._pipe = None
        while pipe.pending:
            future = pipe.pending.popleft()
            if not future.done():
                # a fresh instance per call: one raised exception is not shared by many tasks
                future.set_exception(type(error)(*error.args))
        if pipe.task is not None and pipe.task is not asyncio.current_task():
            pipe.task.cancel()
        with contextlib.suppress(Exception):
            pipe.writer.close()

    async def close(self) -> None:
        self._closed = True
        pipe = self._pipe
        if pipe is not None:
            self._break(pipe, RedisConnectionError("the store is closed"))
            if pipe.task is not None:
                await asyncio.gather(pipe.task, return_exceptions=True)
            with contextlib.suppress(Exception):
                await pipe.conn.disconnect(nowait=True)
