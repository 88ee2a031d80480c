"""Server-side bots think in a pool of worker processes, never on the event loop.

:class:`BotPool` sends a bot level, the table's rules and the bot's seat view (never the
state) with a seed to a worker process and awaits the chosen action. A worker that dies
(killed, out of memory) breaks the pool: the pool is replaced and the move computed again.
A move that takes longer than its level's budget (plus a margin for a busy machine) is not
waited for: the caller gets ``None`` and plays the engine's cheapest legal card instead, so
no table waits on a bot beyond that bound. A move that starts late (it waited in the queue of
a busy pool) thinks only for what is left of that bound, and with nothing left it plays the
``easy`` rules of thumb at once. The workers run at a lower CPU priority than the server
(``WORKER_NICE``), so that bots thinking never slow the event loop's answers.

The ``random`` level is a single draw and is chosen in place.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import structlog

from engine import Rules, View
from engine.bots import BOTS, TIME_BUDGET_S, Bot, SearchBot, easy_bot

log = structlog.get_logger("tute.bots")

RETRIES = 3
"""Times a move is computed again after its worker died."""
SLACK_S = 2.0
"""Beyond its level's budget, how long a move may wait for a busy pool."""

WORKER_NICE = 10
"""How much lower the worker processes' CPU priority is than the server's."""
LATE_MARGIN_S = 0.25
"""A move that starts late stops thinking this long before its bound (to travel back)."""

_SCALED: dict[tuple[str, float], Bot] = {}


def level_bot(level: str, scale: float) -> Bot:
    """The bot of ``level`` with its search budget scaled by ``scale``."""
    bot = BOTS[level]
    if scale == 1.0 or not isinstance(bot, SearchBot):
        return bot
    key = (level, scale)
    if key not in _SCALED:
        _SCALED[key] = bot.remade(
            lambda b: b._replace(samples=max(1, round(b.samples * scale)), time_s=b.time_s * scale)
        )
    return _SCALED[key]


def think(
    level: str, options: dict[str, Any], v: View, seed: int, scale: float, deadline: float = 0.0
) -> int:
    """One move (runs in a worker process). ``deadline`` (``time.monotonic()``, 0: none): the
    search stops in time for it; past it, the ``easy`` rules of thumb choose."""
    rules = Rules.from_options(options)
    bot = level_bot(level, scale)
    if deadline > 0 and isinstance(bot, SearchBot):
        left = deadline - time.monotonic() - LATE_MARGIN_S
        if left <= 0:
            bot = easy_bot
        elif left < bot.budget_for(v.players).time_s:
            bot = bot.remade(lambda b: b._replace(time_s=min(b.time_s, left)))
    return bot(rules, v, random.Random(seed))


def _warm() -> int:
    return os.getpid()


def _lower_priority() -> None:
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)


class BotPool:
    """A pool of ``workers`` processes computing bot moves."""

    def __init__(self, workers: int, scale: float = 1.0) -> None:
        self.workers = max(1, workers)
        self.scale = scale
        self.restarts = 0
        """How many times a broken pool was replaced."""
        self.in_flight = 0
        self._executor: ProcessPoolExecutor | None = None
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["engine.bots"])

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=self._context, initializer=_lower_priority
            )
        return self._executor

    def pids(self) -> list[int]:
        """The worker processes now running (for tests and operators)."""
        ex = self._executor
        procs = getattr(ex, "_processes", None) or {}
        return [p.pid for p in procs.values() if p.pid is not None and p.is_alive()]

    def budget_s(self, level: str) -> float:
        """The longest ``level`` may think, waiting for a busy pool included."""
        return TIME_BUDGET_S.get(level, 0.0) * self.scale + SLACK_S

    async def choose(
        self, level: str, rules: Rules, v: View, seed: int
    ) -> tuple[int | None, float]:
        """The action of the bot of ``level`` for view ``v``, and the seconds it took.

        ``None`` when no answer came within :meth:`budget_s`.
        """
        start = time.perf_counter()
        if level == "random":
            return think(level, rules.options(), v, seed, self.scale), 0.0
        loop = asyncio.get_running_loop()
        deadline = start + self.budget_s(level)
        options = rules.options()
        self.in_flight += 1
        try:
            for attempt in range(RETRIES + 1):
                pool = self._pool()
                try:
                    fut = loop.run_in_executor(
                        pool,
                        think,
                        level,
                        options,
                        v,
                        seed,
                        self.scale,
                        time.monotonic() + deadline - time.perf_counter(),
                    )
                    left = deadline - time.perf_counter()
                    # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a
                    # cancel that comes as the move arrives
                    async with asyncio.timeout(max(0.001, left)):
                        action = await fut
                    return action, time.perf_counter() - start
                except BrokenProcessPool:
                    self._replace(pool)
                    log.warning("bot_worker_died", level=level, attempt=attempt + 1)
                except TimeoutError:
                    log.warning("bot_think_timed_out", level=level)
                    return None, time.perf_counter() - start
            return None, time.perf_counter() - start
        finally:
            self.in_flight -= 1

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        if self._executor is broken:
            self._executor = None
            self.restarts += 1
            broken.shutdown(wait=False, cancel_futures=True)

    def warm_up(self) -> None:
        """Start the workers now rather than at the first move."""
        pool = self._pool()
        for _ in range(self.workers):
            pool.submit(_warm)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
