"""Waiting for a condition with a bound, instead of sleeping for it to be true."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable


async def eventually(
    condition: Callable[[], bool | Awaitable[bool | None] | None],
    *,
    timeout: float = 10.0,
    what: str = "the condition",
) -> None:
    """Return once ``condition()`` (sync or async) holds; AssertionError after ``timeout``
    seconds. It holds when it returns true, or, for a check that asserts and returns None,
    when it returns without raising AssertionError (the last one is raised at the timeout).
    It yields to the event loop between checks (checking again each few ms)."""
    failed: AssertionError | None = None
    try:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    got = condition()
                    if inspect.isawaitable(got):
                        got = await got
                except AssertionError as exc:
                    failed = exc
                else:
                    if got or got is None:
                        return
                await asyncio.sleep(0.005)
    except TimeoutError:
        raise AssertionError(f"{what} did not hold within {timeout} s") from failed


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    why: Callable[[], str] = str,
) -> None:
    """The blocking form of :func:`eventually`, for an outside process that offers nothing to
    wait on (a server's readiness, a cluster's state): return once ``condition()`` holds,
    checking again each few ms; AssertionError naming ``what`` (and ``why()``) after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s ({why()})")
        time.sleep(0.02)
