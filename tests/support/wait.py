"""Waiting for a condition with a bound, instead of sleeping for it to be true."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]],
    *,
    timeout: float = 10.0,
    what: str = "the condition",
) -> None:
    """Return once ``condition()`` (sync or async) is true; AssertionError after ``timeout``
    seconds. It yields to the event loop between checks (checking again each few ms)."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                got = condition()
                if inspect.isawaitable(got):
                    got = await got
                if got:
                    return
                await asyncio.sleep(0.005)
    except TimeoutError:
        raise AssertionError(f"{what} did not hold within {timeout} s") from None
