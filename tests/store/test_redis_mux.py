"""The pipelined connection of a single Redis (service.store.redis.mux), against a real
redis-server: each call gets its own reply whatever the calls at once, on one connection;
errors are redis-py's; a broken connection is made again (a call on it is sent once more); a
reply too slow fails every call waiting on that connection, and the next call has a new one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis.asyncio as aredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from service.store.redis.connect import Script, open_link
from service.store.redis.mux import Mux, ReplyProtocol, streams
from service.store.redis.options import RedisOptions
from tests.support.redis import running_redis


def _mux(url: str, timeout_s: float = 5.0) -> Mux:
    return Mux(aredis.ConnectionPool.from_url(url), timeout_s)


@pytest.fixture
async def admin(redis_url: str) -> AsyncIterator[aredis.Redis]:
    client = aredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


async def _connections(admin: aredis.Redis) -> int:
    return len(await admin.client_list())


async def test_calls_at_once_get_their_own_replies_on_one_connection(
    redis_url: str, admin: aredis.Redis
) -> None:
    mux = _mux(redis_url)
    try:
        before = await _connections(admin)
        big = bytes(range(256)) * 400  # replies split over many reads
        replies = await asyncio.gather(
            *(mux.call("ECHO", big + b"%d" % i if i % 7 == 0 else b"%d" % i) for i in range(300))
        )
        assert replies == [big + b"%d" % i if i % 7 == 0 else b"%d" % i for i in range(300)]
        assert await mux.call("INCRBY", "n", 5) == 5
        assert await _connections(admin) == before + 1
    finally:
        await mux.close()


async def test_error_replies_are_redis_py_errors(redis_url: str, admin: aredis.Redis) -> None:
    mux = _mux(redis_url)
    try:
        await admin.set("s", "text")
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            await mux.call("LPUSH", "s", "x")
        assert await mux.call("GET", "s") == b"text"  # the connection goes on
        # a script Redis does not know yet is sent whole once, then by its hash
        link, _ = open_link(redis_url, RedisOptions())
        assert link.mux is not None
        script = Script(link.client, "at", mux=link.mux)
        await admin.script_flush()
        await admin.hset("t", mapping={"v": "3", "q": "1"})
        await admin.xadd("x", {"p": "1"}, id="1-0")
        assert await script(["t", "x"], ["1-0"]) == [b"3", b"1", [[b"1-0", [b"p", b"1"]]]]
        assert await admin.script_exists(script.sha) == [True]
        await link.close()
    finally:
        await mux.close()


async def test_a_call_whose_reply_is_cancelled_leaves_the_others_theirs(redis_url: str) -> None:
    mux = _mux(redis_url)
    try:
        assert await mux.call("PING") == b"PONG"  # connected: a call writes in its first step
        slow = asyncio.create_task(mux.call("BLPOP", "empty", 0.2))
        quick = asyncio.create_task(mux.call("ECHO", "after"))
        await asyncio.sleep(0)  # both sent, in this order
        slow.cancel()
        assert await quick == b"after"  # BLPOP's nil reply went to nobody
        assert await mux.call("ECHO", "next") == b"next"
    finally:
        await mux.close()


async def test_a_killed_connection_is_made_again(redis_url: str, admin: aredis.Redis) -> None:
    mux = _mux(redis_url)
    try:
        assert await mux.call("CLIENT", "SETNAME", "mux") == b"OK"
        ids = [c["id"] for c in await admin.client_list() if c.get("name") == "mux"]
        assert len(ids) == 1
        await admin.client_kill_filter(_id=ids[0])
        assert await mux.call("ECHO", "again") == b"again"  # sent once more, on a new one
        assert [c for c in await admin.client_list() if c.get("name") == "mux"] == []
    finally:
        await mux.close()


async def test_a_slow_reply_fails_the_calls_waiting_on_its_connection(redis_url: str) -> None:
    mux = _mux(redis_url, timeout_s=0.2)
    try:
        assert await mux.call("PING") == b"PONG"  # connected: a call writes in its first step
        blocked = asyncio.create_task(mux.call("BLPOP", "empty", 5))
        behind = asyncio.create_task(mux.call("ECHO", "behind"))
        with pytest.raises(RedisTimeoutError):
            await blocked
        with pytest.raises(RedisTimeoutError):
            await behind
        assert await mux.call("ECHO", "new") == b"new"
    finally:
        await mux.close()


async def test_redis_away_is_a_connection_error_then_it_comes_back(tmp_path: Path) -> None:
    with running_redis(tmp_path / "r") as proc:
        mux = _mux(proc.url, timeout_s=2.0)
        try:
            assert await mux.call("SET", "k", "v") == b"OK"
            proc.stop()
            with pytest.raises(RedisConnectionError):
                await mux.call("GET", "k")
            proc.start(same_port=True)
            assert await mux.call("PING") == b"PONG"
        finally:
            await mux.close()
        with pytest.raises(RedisConnectionError, match="closed"):
            await mux.call("PING")


async def _taken_over(
    url: str, idle_s: float | None
) -> tuple[ReplyProtocol, Any, list[Any], asyncio.Future[Exception]]:
    """A connection redis-py made, then read by a ReplyProtocol: what it parsed, and the
    future its end sets."""
    pool = aredis.ConnectionPool.from_url(url)
    conn = pool.make_connection()
    await conn.connect()
    got: list[Any] = []
    lost: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()

    def end(error: Exception) -> None:
        if not lost.done():
            lost.set_result(error)

    protocol = ReplyProtocol(got.extend, end, idle_s)
    return protocol, conn, got, lost


async def test_a_taken_over_connection_keeps_what_redis_py_had_read(redis_url: str) -> None:
    protocol, conn, got, lost = await _taken_over(redis_url, None)
    try:
        await conn.send_command("ECHO", "before")
        reader = streams(conn)[0]
        async with asyncio.timeout(10):
            while not cast(Any, reader)._buffer:  # the reply, read by redis-py
                await asyncio.sleep(0)
        transport = protocol.take_over(conn)
        assert got == [b"before"]
        transport.write(b"*2\r\n$4\r\nECHO\r\n$5\r\nafter\r\n")
        async with asyncio.timeout(10):
            while len(got) < 2:
                await asyncio.sleep(0)
        assert got == [b"before", b"after"]
        assert not lost.done()
    finally:
        await conn.disconnect(nowait=True)
    error = await asyncio.wait_for(lost, 10)
    assert isinstance(error, RedisConnectionError)


async def test_a_silent_connection_ends_after_its_idle_time(redis_url: str) -> None:
    """No byte for ``idle_s`` (checked every ``idle_s``) ends it with TimeoutError."""
    protocol, conn, got, lost = await _taken_over(redis_url, 0.05)
    try:
        protocol.take_over(conn)
        error = await asyncio.wait_for(lost, 10)
        assert isinstance(error, RedisTimeoutError)
        assert protocol.transport is not None and protocol.transport.is_closing()
        assert got == []
    finally:
        await conn.disconnect(nowait=True)
