"""Server replicas as subprocesses on one Redis, and clients that survive losing a replica.

- :class:`Replica` and :func:`start_replicas` (tests/support/replicas.py) run
  ``python -m service.main`` subprocesses.
- :class:`Failover` holds one channel per replica; a call that fails with UNAVAILABLE is sent
  again to the next replica (with the same ``request_id``, so a submission applies once).
- :class:`ResumingWatcher` is one WatchTable stream that moves to the next replica when its
  own fails, resuming after the last sequence number it handled, and records any gap or
  repeated event.
- :class:`Player` plays one seat: when a TurnStarted for its seat arrives it reads the view
  and submits random legal actions while it is on turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from tute.v1 import event_pb2, rules_pb2, service_pb2, service_pb2_grpc, view_pb2

from ..support.replicas import Replica

FINISHED = 3  # TABLE_STATUS_FINISHED


def kind(ev: event_pb2.Event) -> str:
    return ev.WhichOneof("kind") or ""


def auth(token: str | None) -> tuple[tuple[str, str], ...] | None:
    return (("authorization", f"Bearer {token}"),) if token else None


class Failover:
    """Calls that go to a preferred replica and move on to the next when it is unavailable."""

    def __init__(self, replicas: Sequence[Replica], first: int = 0) -> None:
        self.replicas = list(replicas)
        self.index = first % len(self.replicas)
        self.failovers = 0

    @property
    def stub(self) -> service_pb2_grpc.TuteServiceStub:
        return self.replicas[self.index].stub

    def next(self) -> None:
        self.index = (self.index + 1) % len(self.replicas)
        self.failovers += 1

    async def call(
        self, method: str, request: Any, token: str | None = None, timeout: float = 30.0
    ) -> Any:
        """``stub.<method>(request)`` on this replica, else on the next ones."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await getattr(self.stub, method)(request, metadata=auth(token))
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                self.next()
                await asyncio.sleep(0.02)


class ResumingWatcher:
    """One WatchTable stream from the first event, resumed on the next replica when its own
    fails. ``events`` holds each event once, in order; ``faults`` any gap or repeat seen."""

    def __init__(
        self, replicas: Sequence[Replica], first: int, table_id: str, token: str | None = None
    ) -> None:
        self.failover = Failover(replicas, first)
        self.table_id = table_id
        self.token = token
        self.events: list[event_pb2.Event] = []
        self.faults: list[str] = []
        self.resumes = 0
        self.error: BaseException | None = None
        self.changed = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    @property
    def last_seq(self) -> int:
        return self.events[-1].sequence if self.events else 0

    @property
    def ended(self) -> bool:
        return bool(self.events) and kind(self.events[-1]) == "match_ended"

    async def _run(self) -> None:
        try:
            while not self.ended:
                req = service_pb2.WatchTableRequest(
                    table_id=self.table_id, resume_after=self.last_seq
                )
                call = self.failover.stub.WatchTable(req, metadata=auth(self.token))
                try:
                    async for msg in call:
                        if msg.HasField("snapshot"):
                            self.faults.append(f"snapshot after {self.last_seq}")
                            continue
                        ev = msg.event
                        if ev.sequence != self.last_seq + 1:
                            self.faults.append(f"got {ev.sequence} after {self.last_seq}")
                            if ev.sequence <= self.last_seq:
                                continue
                        self.events.append(ev)
                        self.changed.set()
                        if self.ended:
                            call.cancel()
                            break
                except grpc.aio.AioRpcError as exc:
                    if exc.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                    self.failover.next()
                    self.resumes += 1
                    await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # reported by wait_until()
            self.error = exc
        finally:
            self.changed.set()

    async def wait_until(
        self, predicate: Callable[[ResumingWatcher], bool], timeout: float = 60.0
    ) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self):
                if self.task.done():
                    raise AssertionError(f"the watcher stopped: {self.error!r}")
                self.changed.clear()
                await self.changed.wait()

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


class Player:
    """Plays one seat with random legal actions whenever its watcher shows its turn."""

    def __init__(
        self,
        replicas: Sequence[Replica],
        first: int,
        table_id: str,
        seat: int,
        token: str,
        watcher: ResumingWatcher,
        rng: random.Random,
    ) -> None:
        self.failover = Failover(replicas, first)
        self.table_id = table_id
        self.seat = seat
        self.token = token
        self.watcher = watcher
        self.rng = rng
        self.actions = 0
        self.go = asyncio.Event()
        """Set: the player plays; cleared, it waits before its next action (a test pausing
        the match)."""
        self.go.set()
        self.task = asyncio.create_task(self._run())

    def _turn_after(self, seq: int) -> int:
        """The sequence number of a TurnStarted for this seat after ``seq`` (0: none)."""
        for ev in reversed(self.watcher.events):
            if ev.sequence <= seq:
                break
            if kind(ev) == "turn_started" and ev.turn_started.seat == self.seat:
                return ev.sequence
        return 0

    async def _view(self) -> view_pb2.TableView:
        req = service_pb2.GetTableRequest(table_id=self.table_id)
        resp = await self.failover.call("GetTable", req, self.token)
        return resp.view

    async def _run(self) -> None:
        handled = 0
        while True:
            await self.watcher.wait_until(
                lambda w, h=handled: w.ended or self._turn_after(h) > 0  # type: ignore[misc]
            )
            if self.watcher.ended:
                return
            handled = self._turn_after(handled)
            await self.go.wait()
            view = await self._view()
            while (
                view.status != FINISHED
                and view.HasField("turn_seat")
                and view.turn_seat == self.seat
                and view.legal_actions
            ):
                action = self.rng.choice(list(view.legal_actions))
                req = service_pb2.SubmitActionRequest(
                    table_id=self.table_id,
                    action=action,
                    request_id=f"{self.seat}-{self.actions}",
                )
                try:
                    resp = await self.failover.call("SubmitAction", req, self.token)
                except grpc.aio.AioRpcError as exc:
                    if exc.code() != grpc.StatusCode.FAILED_PRECONDITION:
                        raise
                    break  # the view was stale; the next TurnStarted wakes us
                self.actions += 1
                view = resp.view


async def create_seated_table(
    failover: Failover, preset: str, **options: Any
) -> tuple[str, dict[int, str]]:
    """A public table with every seat taken by a test client (the match starts)."""
    rules = rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(**options))
    created = await failover.call(
        "CreateTable",
        service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="p0"),
    )
    tokens = {created.seat: created.seat_token}
    for i in range(1, len(created.table.seats)):
        joined = await failover.call(
            "JoinTable",
            service_pb2.JoinTableRequest(table_id=created.table_id, display_name=f"p{i}"),
        )
        tokens[joined.seat] = joined.seat_token
    return created.table_id, tokens
