"""Helpers for the client tests: comparing models with the server's views, short matches."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from google.protobuf import text_format

from tute.v1 import view_pb2

SHORT_2P = {"target_points": 1, "turn_time_s": 0}
"""Rule options for a 2-player match of one hand without a clock (with ``corriente-6``)."""
SHORT_4P = {"target_points": 1, "turn_time_s": 0}


def comparable(view: view_pb2.TableView) -> str:
    """A view without what no event reports (``Seat.connected``, a version raised by a change
    without events), as text for readable assertion failures."""
    out = view_pb2.TableView()
    out.CopyFrom(view)
    out.ClearField("version")
    for seat in out.seats:
        seat.connected = False
    return text_format.MessageToString(out)


class Gate:
    """An injected sleep for clients: records each backoff delay and returns at once while
    the gate is open; while it is closed (the server is down) it waits until it opens."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.open = asyncio.Event()
        self.open.set()

    async def sleep(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.wait_for(self.open.wait(), 30)


async def until(
    changed: asyncio.Event, predicate: Callable[[], bool], timeout: float = 15.0
) -> None:
    """Wait until ``predicate()`` holds, re-checking whenever ``changed`` is set."""
    async with asyncio.timeout(timeout):
        while not predicate():
            changed.clear()
            await changed.wait()
