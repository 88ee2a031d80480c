"""The one clock of a server: what the app, the stores, presence and the limits read the time
from. Tests pass a clock they move by hand (tests/support/clock.py) instead of
:data:`SYSTEM_CLOCK`.

A clock tells two times: :meth:`Clock.now`, Unix time in seconds (turn deadlines, expiries,
presence, token buckets: times that replicas and stores compare), and :meth:`Clock.monotonic`,
for intervals measured on this process only. Calling a clock is :meth:`Clock.now`, so a clock
serves wherever a function of the time is wanted.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Where the time comes from."""

    def now(self) -> float:
        """Unix time, in seconds."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, never going back."""
        ...

    def __call__(self) -> float:
        """The same as :meth:`now`."""
        ...


class SystemClock:
    """The machine's clocks: the time module's functions themselves (a reading is a C call,
    not a Python one; the server reads the clock some 20 times per action)."""

    now = staticmethod(time.time)
    monotonic = staticmethod(time.monotonic)
    __call__ = staticmethod(time.time)


SYSTEM_CLOCK: Clock = SystemClock()
"""The clock of a server that nobody drives."""
