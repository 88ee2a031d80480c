"""A clock that moves only when the test moves it (a :class:`service.clock.Clock`)."""

from __future__ import annotations

import time


class FakeClock:
    """``now()`` starts at the wall time of the clock's creation, in whole seconds (or at
    ``start``), and stays there until :meth:`advance`; ``monotonic()`` moves with it. Pass it
    to ``create_server`` (``clock=``) and to the store, so the app, the store's expiries,
    presence and the limits all read it. The scheduler polls on the event loop's real time,
    so a deadline passed by :meth:`advance` is acted on at its next poll: wait for the
    resulting event (bounded), or run the pass yourself (``app.run_due``)."""

    def __init__(self, start: float | None = None) -> None:
        self.start = float(int(time.time())) if start is None else start
        self._now = self.start

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now - self.start

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the time forward by ``seconds`` (never back)."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += seconds

    def advance_to(self, offset: float) -> None:
        """Move the time to ``offset`` seconds after :attr:`start` (never back)."""
        self.advance(self.start + offset - self._now)
