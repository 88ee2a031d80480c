"""Calls pipelined on one connection to a single Redis, for the store's hot path (the commit
script of every move).

redis-py takes a connection from its pool for each call, encodes each argument in Python,
writes the command in a task of its own (its socket timeout) and gives the connection back:
about 80-100 µs of a replica's CPU per call here, more than Redis spends running the script. A
:class:`Mux` writes each call's command at once on its one connection (hiredis packs it) and
waits for its reply, which comes in the order the commands went (Redis answers a connection's
commands in order). The replies are parsed in the event loop's own callback as their bytes
arrive (:class:`ReplyProtocol`, which the subscriber connection of the live events uses too),
many a read, and each goes straight to its call's future: no task wakes up to read, and no
timer is set per call (one check, armed for the oldest call's due time, fails the connection
when a reply is late). The connection is made by redis-py from the store's pool settings
(address, TLS, password, database), so it is set up as the pool's are; after that redis-py
does not touch it.

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
from collections.abc import Callable
from typing import Any, cast

import hiredis
from redis._parsers.base import BaseParser
from redis.asyncio import ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse
from redis.exceptions import TimeoutError as RedisTimeoutError


def reply_parser() -> hiredis.Reader:
    """A parser of Redis replies whose error replies are the exceptions redis-py raises."""
    return hiredis.Reader(protocolError=InvalidResponse, replyError=BaseParser.parse_error)


def streams(conn: Any) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The streams of a connection redis-py made and set up (connected, authenticated, its
    database selected), for a caller that reads and writes them itself from then on."""
    return conn._reader, conn._writer  # noqa: SLF001


class ReplyProtocol(asyncio.Protocol):
    """Takes over a connection redis-py made (:meth:`take_over`): the replies each read
    completes are parsed as the bytes arrive and handed, in order, to ``on_replies``, from the
    event loop's own callback (no task wakes up to read them, no timeout is set per read); the
    connection's end (closed, broken, a reply that is not Redis's protocol, or, with
    ``idle_s``, no byte between two checks ``idle_s`` apart: silent for ``idle_s`` to twice
    that) goes to ``on_lost``, once, as redis-py's ``ConnectionError`` or ``TimeoutError``.
    redis-py may still write on the connection."""

    def __init__(
        self,
        on_replies: Callable[[list[Any]], None],
        on_lost: Callable[[Exception], None],
        idle_s: float | None = None,
    ) -> None:
        self.parser = reply_parser()
        self.on_replies = on_replies
        self.on_lost = on_lost
        self.idle_s = idle_s
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._received = 0
        """Reads so far (the idle check compares it with what it saw last time)."""
        self._idle: asyncio.TimerHandle | None = None

    def take_over(self, conn: Any) -> asyncio.Transport:
        """From now on the connection's bytes come here (any redis-py had read and not
        parsed first)."""
        reader, writer = streams(conn)
        transport = cast(asyncio.Transport, writer.transport)
        pending: bytearray = cast(Any, reader)._buffer  # noqa: SLF001 - read, not parsed
        buffered = bytes(pending)
        pending.clear()
        transport.set_protocol(self)
        self.transport = transport
        if self.idle_s is not None:
            self._check_idle(-1)
        if buffered:
            self.data_received(buffered)
        return transport

    def data_received(self, data: bytes) -> None:
        if self.lost:
            return
        self._received += 1
        parser = self.parser
        parser.feed(data)
        replies: list[Any] = []
        try:
            while (reply := parser.gets()) is not False:
                replies.append(reply)
        except InvalidResponse as exc:
            self.fail(RedisConnectionError(f"Error reading from Redis: {exc}"))
            return
        if replies:
            self.on_replies(replies)

    def eof_received(self) -> None:
        return None  # the transport closes: connection_lost

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None:
            self._lose(RedisConnectionError("Connection closed by server."))
        else:
            self._lose(RedisConnectionError(f"Error reading from Redis: {exc}"))

    def fail(self, error: Exception) -> None:
        """End the connection with ``error`` (what ``on_lost`` is told)."""
        self._lose(error)
        if self.transport is not None:
            self.transport.close()

    def _lose(self, error: Exception) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if not self.lost:
            self.lost = True
            self.on_lost(error)

    def _check_idle(self, seen: int) -> None:
        """Every ``idle_s``: no read since the last check ends the connection."""
        if self.lost:
            return
        if seen == self._received:
            self.fail(RedisTimeoutError("Timeout reading from Redis"))
            return
        assert self.idle_s is not None
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(self.idle_s, self._check_idle, self._received)


class _Pipe:
    """One connection and the calls waiting for its replies, in order, each with the loop
    time by which its reply is due."""

    def __init__(self, conn: Any, mux: Mux) -> None:
        self.conn = conn
        self.pending: deque[tuple[asyncio.Future[Any], float]] = deque()
        self.error: BaseException | None = None
        """Why it broke (None: it has not)."""
        self.loop = asyncio.get_running_loop()
        self.watch: asyncio.TimerHandle | None = None
        """The check of the oldest call's due time (None: none armed)."""
        self.protocol = ReplyProtocol(self.replies, lambda error: mux.drop(self, error))
        self.transport = self.protocol.take_over(conn)

    def replies(self, replies: list[Any]) -> None:
        pending = self.pending
        for reply in replies:
            if not pending:
                self.protocol.fail(RedisConnectionError("Error reading from Redis: extra reply"))
                return
            future = pending.popleft()[0]
            if future.done():
                continue  # its call was cancelled
            if isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)

    def check(self) -> None:
        """A reply overdue fails every call on the connection; else look again when the
        oldest call's reply falls due."""
        self.watch = None
        pending = self.pending
        if not pending or self.error is not None:
            return
        due = pending[0][1]  # the oldest reply not come yet (a cancelled call's too)
        if self.loop.time() >= due:
            self.protocol.fail(RedisTimeoutError("Timeout reading from Redis"))
        else:
            self.watch = self.loop.call_at(due, self.check)


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
            future = pipe.loop.create_future()
            pipe.pending.append((future, pipe.loop.time() + self._timeout_s))
            pipe.transport.write(command)
            if pipe.watch is None:
                pipe.watch = pipe.loop.call_later(self._timeout_s, pipe.check)
            try:
                return await future
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
            pipe = _Pipe(conn, self)
            if pipe.error is not None:  # what it had read on connecting was no reply of ours
                raise type(pipe.error)(*pipe.error.args)
            self._pipe = pipe
            return pipe

    def drop(self, pipe: _Pipe, error: BaseException) -> None:
        """The connection is done with: every call waiting on it fails with ``error``."""
        if pipe.error is not None:
            return
        pipe.error = error
        if self._pipe is pipe:
            self._pipe = None
        if pipe.watch is not None:
            pipe.watch.cancel()
            pipe.watch = None
        while pipe.pending:
            future = pipe.pending.popleft()[0]
            if not future.done():
                # a fresh instance per call: one raised exception is not shared by many tasks
                future.set_exception(type(error)(*error.args))
        pipe.protocol.fail(RedisConnectionError("the connection is done with"))

    async def close(self) -> None:
        self._closed = True
        pipe = self._pipe
        if pipe is not None:
            self.drop(pipe, RedisConnectionError("the store is closed"))
            with contextlib.suppress(Exception):
                await pipe.conn.disconnect(nowait=True)
