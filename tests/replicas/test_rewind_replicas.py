"""Two replicas on one real Redis, when Redis goes back in time or a replica dies holding
claimed due items.

- Redis with an RDB snapshot, killed (-9) and restarted from it within the stream readers'
  grace: every open WatchTable stream, on either replica, gets a fresh snapshot of the
  restored table (then its new history), or ends with a documented status; none goes on
  silently with events of the new history as if they continued the old.
- A replica gone while it holds claimed turn deadlines: the other replica plays those
  timeouts once the short claim lease lapses, each exactly once (in this process, on a fake
  clock).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import grpc
import redis

from service.store.redis import RedisStore
from tests.support.clock import FakeClock
from tests.support.redis import RedisProcess
from tests.support.replicas import inprocess_stubs
from tests.support.wait import eventually
from tute.v1 import event_pb2, service_pb2, view_pb2

from ..service.helpers import Stub, table_with_humans
from ..support.replicas import Replica, start_replicas
from .cluster import Failover, auth, create_seated_table, kind

PRESET = "corriente-8"


class Recorder:
    """One WatchTable stream, never resumed: every message it got, and how it ended."""

    def __init__(self, replica: Replica, table_id: str, token: str | None) -> None:
        self.table_id = table_id
        self.token = token
        self.replica = replica
        self.messages: list[service_pb2.WatchTableResponse] = []
        self.ended: grpc.aio.AioRpcError | None = None
        self.changed = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        call = self.replica.stub.WatchTable(
            service_pb2.WatchTableRequest(table_id=self.table_id), metadata=auth(self.token)
        )
        try:
            async for msg in call:
                self.messages.append(msg)
                self.changed.set()
        except grpc.aio.AioRpcError as exc:
            self.ended = exc
        finally:
            self.changed.set()

    @property
    def snapshots(self) -> list[int]:
        """Indexes of the snapshots among the messages."""
        return [i for i, m in enumerate(self.messages) if m.HasField("snapshot")]

    def last_seq(self) -> int:
        for m in reversed(self.messages):
            if m.HasField("snapshot"):
                return m.snapshot.last_event_sequence
            return m.event.sequence
        return -1

    async def wait(self, predicate: object, timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self):  # type: ignore[operator]
                if self.task.done():
                    return
                self.changed.clear()
                await self.changed.wait()

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def play(
    failover: Failover, table_id: str, tokens: dict[int, str], rng: random.Random, until_seq: int
) -> int:
    """Random legal moves until the table's last event is at least ``until_seq``."""
    while True:
        view = (
            await failover.call(
                "GetTable", service_pb2.GetTableRequest(table_id=table_id), tokens[0]
            )
        ).view
        if view.last_event_sequence >= until_seq:
            return int(view.last_event_sequence)
        seat = view.turn_seat
        mine = (
            await failover.call(
                "GetTable", service_pb2.GetTableRequest(table_id=table_id), tokens[seat]
            )
        ).view
        if not mine.legal_actions:
            continue
        await failover.call(
            "SubmitAction",
            service_pb2.SubmitActionRequest(
                table_id=table_id,
                action=rng.choice(list(mine.legal_actions)),
                expected_version=mine.version,
            ),
            tokens[seat],
        )


async def fresh(
    replica: Replica,
    table_id: str,
    token: str | None,
    resume_after: int | None = None,
    until: int = 0,
) -> list[Any]:
    """A new stream's messages (resume_after: its events up to ``until``)."""
    req = service_pb2.WatchTableRequest(table_id=table_id)
    if resume_after is not None:
        req.resume_after = resume_after
    call = replica.stub.WatchTable(req, metadata=auth(token))
    out = []
    async for msg in call:
        out.append(msg)
        if resume_after is None or msg.event.sequence >= until:
            break
    call.cancel()
    return out


def comparable(view: view_pb2.TableView) -> view_pb2.TableView:
    """A view without what changes with the watchers' presence (Seat.connected)."""
    v = view_pb2.TableView()
    v.CopyFrom(view)
    for seat in v.seats:
        seat.ClearField("connected")
    return v


async def test_a_redis_restored_from_an_older_snapshot_resyncs_every_watcher(
    tmp_path: Path,
) -> None:
    proc = RedisProcess(tmp_path / "redis").start()  # no automatic saves; SAVE writes dump.rdb
    replicas = await start_replicas(proc.url, tmp_path)
    recorders: list[Recorder] = []
    try:
        rng = random.Random(17)
        failover = Failover(replicas)
        table_id, tokens = await create_seated_table(failover, PRESET, turn_time_s=600)
        for r in replicas:
            recorders += [
                Recorder(r, table_id, None),
                Recorder(r, table_id, tokens[0]),
                Recorder(r, table_id, tokens[1]),
            ]
        saved = await play(failover, table_id, tokens, rng, 12)
        with redis.Redis.from_url(proc.url) as client:
            client.save()
        old_last = await play(failover, table_id, tokens, rng, saved + 20)
        for rec in recorders:
            await rec.wait(lambda r: r.last_seq() >= old_last)
            assert rec.ended is None and rec.snapshots == [0]
        before = [len(rec.messages) for rec in recorders]
        proc.restart()  # kill -9, start from the snapshot
        view = (
            await failover.call(
                "GetTable", service_pb2.GetTableRequest(table_id=table_id), tokens[0]
            )
        ).view
        assert view.last_event_sequence == saved  # the table went back in time
        for rec, n in zip(recorders, before, strict=True):
            await rec.wait(lambda r, n=n: r.ended is not None or any(i >= n for i in r.snapshots))
        # the table does not move: each resync snapshot is the restored table's view
        resynced = []
        for rec, n in zip(recorders, before, strict=True):
            if rec.ended is not None:
                assert rec.ended.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.PERMISSION_DENIED,
                ), rec.ended
                continue
            again = [i for i in rec.snapshots if i >= n]
            assert again == [n], "events after the restart before the snapshot"
            snap = rec.messages[n].snapshot
            now = (await fresh(rec.replica, table_id, rec.token))[0].snapshot
            assert comparable(snap) == comparable(now)
            resynced.append(rec)
        # play past the old position: the new history reaches the watchers, gap-free
        new_last = await play(failover, table_id, tokens, rng, old_last + 10)
        for rec in resynced:
            await rec.wait(lambda r: r.last_seq() >= new_last)
            n = rec.snapshots[-1]
            got = [m.event for m in rec.messages[n + 1 :]]
            want = [m.event for m in await fresh(rec.replica, table_id, rec.token, 0, new_last)]
            assert got == want[saved:new_last], "the stream did not follow the new history"
        print(
            f"rewind: table back from {old_last} to {saved}; "
            f"{len(resynced)} of {len(recorders)} watchers got a fresh snapshot, "
            f"{len(recorders) - len(resynced)} ended: "
            f"{[r.ended.code().name for r in recorders if r.ended is not None]}"
        )
    finally:
        for rec in recorders:
            await rec.close()
        for r in replicas:
            await r.stop()
        proc.stop()


async def first_timeout(stub: Stub, table_id: str) -> tuple[float, float, int]:
    """(deadline of the first turn, time of its TurnTimedOut, how many TurnTimedOut that turn
    had), read from the table's events up to the next turn."""
    call = stub.WatchTable(service_pb2.WatchTableRequest(table_id=table_id, resume_after=0))
    deadline, fired, count = 0.0, 0.0, 0
    async for msg in call:
        ev: event_pb2.Event = msg.event
        if kind(ev) == "turn_started":
            if deadline:
                break  # the next turn
            deadline = ev.turn_started.deadline.ToNanoseconds() / 1e9
        elif kind(ev) == "turn_timed_out" and deadline:
            count += 1
            fired = fired or ev.time.ToNanoseconds() / 1e9
    call.cancel()
    return deadline, fired, count


async def version(stub: Stub, table_id: str) -> int:
    view = (await stub.GetTable(service_pb2.GetTableRequest(table_id=table_id))).view
    return int(view.version)


async def test_turn_timeouts_held_by_a_crashed_replica_fire_after_the_lease(
    redis_proc: RedisProcess,
) -> None:
    """Replica A claims half of the due turn deadlines and dies holding them (it never acts
    on them nor renews them): replica B plays the others at once and A's when the 0.5 s lease
    lapses, each exactly once. Everything runs on one fake clock, so the lateness of each
    timeout is exactly what the clock was moved by."""
    clock = FakeClock()
    lease, turn_time, tick = 0.5, 4, 0.05
    async with inprocess_stubs(1, clock=clock, store_url=redis_proc.url) as (maker,):
        made = await asyncio.gather(
            *(table_with_humans(maker, PRESET, turn_time_s=turn_time) for _ in range(16))
        )
        tables = [m.table_id for m in made]
        first_turn = {t: await version(maker, t) for t in tables}
    deadline = clock.now() + turn_time
    clock.advance(turn_time + tick)
    # replica A: its scheduler claims 8 due items, then the process is gone
    a = RedisStore.from_url(redis_proc.url, clock=clock)
    try:
        held = {item.table_id for item in await a.claim_due(clock.now(), lease, 8)}
    finally:
        await a.close()
    assert len(held) == 8 and held <= set(tables)
    async with inprocess_stubs(1, clock=clock, store_url=redis_proc.url, claim_lease_s=lease) as (
        b,
    ):
        free = [t for t in tables if t not in held]

        async def timed_out(ids: list[str]) -> list[bool]:
            return [await version(b, t) > first_turn[t] for t in ids]

        async def all_timed_out(ids: list[str]) -> bool:
            return all(await timed_out(ids))

        await eventually(lambda: all_timed_out(free), what="B playing the unclaimed timeouts")
        assert not any(await timed_out(sorted(held))), "a claim was taken before its lease"
        clock.advance(lease)
        await eventually(lambda: all_timed_out(sorted(held)), what="B playing A's timeouts")
        results = {t: await first_timeout(b, t) for t in tables}
    assert [count for *_, count in results.values()] == [1] * len(tables)  # each exactly once
    assert {t: d for t, (d, _, _) in results.items()} == dict.fromkeys(tables, deadline)
    late = {t: fired - d for t, (d, fired, _) in results.items()}
    assert all(abs(late[t] - tick) < 1e-6 for t in free), late
    assert all(abs(late[t] - (tick + lease)) < 1e-6 for t in held), late
