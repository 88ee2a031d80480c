"""Two replicas on one real Redis, when Redis goes back in time or a replica dies holding
claimed due items.

- Redis with an RDB snapshot, killed (-9) and restarted from it within the stream readers'
  grace: every open WatchTable stream, on either replica, gets a fresh snapshot of the
  restored table (then its new history), or ends with a documented status; none goes on
  silently with events of the new history as if they continued the old.
- A replica killed (-9) while it holds claimed turn deadlines: the other replica plays those
  timeouts once the short claim lease lapses, each exactly once.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import grpc
import redis

from tute.v1 import event_pb2, service_pb2, view_pb2

from ..store.redisproc import RedisProcess
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
            service_pb2.WatchTableRequest(table_id=self.table_id), metadata=auth(self.token))
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


async def play(failover: Failover, table_id: str, tokens: dict[int, str],
               rng: random.Random, until_seq: int) -> int:
    """Random legal moves until the table's last event is at least ``until_seq``."""
    while True:
        view = (await failover.call("GetTable", service_pb2.GetTableRequest(
            table_id=table_id), tokens[0])).view
        if view.last_event_sequence >= until_seq:
            return int(view.last_event_sequence)
        seat = view.turn_seat
        mine = (await failover.call("GetTable", service_pb2.GetTableRequest(
            table_id=table_id), tokens[seat])).view
        if not mine.legal_actions:
            continue
        await failover.call("SubmitAction", service_pb2.SubmitActionRequest(
            table_id=table_id, action=rng.choice(list(mine.legal_actions)),
            expected_version=mine.version), tokens[seat])


async def fresh(replica: Replica, table_id: str, token: str | None,
                resume_after: int | None = None, until: int = 0) -> list[Any]:
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
            recorders += [Recorder(r, table_id, None), Recorder(r, table_id, tokens[0]),
                          Recorder(r, table_id, tokens[1])]
        saved = await play(failover, table_id, tokens, rng, 12)
        with redis.Redis.from_url(proc.url) as client:
            client.save()
        old_last = await play(failover, table_id, tokens, rng, saved + 20)
        for rec in recorders:
            await rec.wait(lambda r: r.last_seq() >= old_last)
            assert rec.ended is None and rec.snapshots == [0]
        before = [len(rec.messages) for rec in recorders]
        proc.restart()  # kill -9, start from the snapshot
        view = (await failover.call("GetTable", service_pb2.GetTableRequest(
            table_id=table_id), tokens[0])).view
        assert view.last_event_sequence == saved  # the table went back in time
        for rec, n in zip(recorders, before, strict=True):
            await rec.wait(lambda r, n=n: r.ended is not None or any(
                i >= n for i in r.snapshots))
        # the table does not move: each resync snapshot is the restored table's view
        resynced = []
        for rec, n in zip(recorders, before, strict=True):
            if rec.ended is not None:
                assert rec.ended.code() in (grpc.StatusCode.UNAVAILABLE,
                                            grpc.StatusCode.PERMISSION_DENIED), rec.ended
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
            got = [m.event for m in rec.messages[n + 1:]]
            want = [m.event for m in await fresh(rec.replica, table_id, rec.token, 0, new_last)]
            assert got == want[saved:new_last], "the stream did not follow the new history"
        print(f"rewind: table back from {old_last} to {saved}; "
              f"{len(resynced)} of {len(recorders)} watchers got a fresh snapshot, "
              f"{len(recorders) - len(resynced)} ended: "
              f"{[r.ended.code().name for r in recorders if r.ended is not None]}")
    finally:
        for rec in recorders:
            await rec.close()
        for r in replicas:
            await r.stop()
        proc.stop()


def claimed(client: redis.Redis, table_ids: list[str]) -> list[str]:
    """Tables whose due-item is claimed and not yet acted on: its score in the due set is a
    claim's lease end, not the due time the table's last commit recorded."""
    pipe = client.pipeline(transaction=False)
    for t in table_ids:
        pipe.zscore("{tute:g}:due", t)
        pipe.hget(f"tute:{{{t}}}", "d")
    got = pipe.execute()
    return [t for i, t in enumerate(table_ids)
            if got[2 * i] is not None and got[2 * i + 1] is not None
            and float(got[2 * i]) != float(got[2 * i + 1])]


async def first_timeout(replica: Replica, table_id: str) -> tuple[float, float, int]:
    """(deadline of the first turn, time of its TurnTimedOut, how many TurnTimedOut that turn
    had), read from the table's events up to the next turn."""
    call = replica.stub.WatchTable(service_pb2.WatchTableRequest(
        table_id=table_id, resume_after=0))
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


async def test_turn_timeouts_held_by_a_killed_replica_fire_within_the_lease(
    tmp_path: Path,
) -> None:
    """Replica A claims the first due turn deadlines (B is stopped meanwhile) and is killed
    -9 holding them: B plays every timeout (those A held, and those due later) within 1.5 s
    of its deadline (a 0.5 s lease), each once. Lateness is measured from the events' own
    deadlines and timestamps."""
    proc = RedisProcess(tmp_path / "redis").start()
    a, b = replicas = await start_replicas(proc.url, tmp_path, 2, "--claim-lease-s", "0.5")
    stopped: list[Replica] = []
    try:
        failover = Failover(replicas)
        turn_time = 4
        # made at once, so that their deadlines are close together
        made = await asyncio.gather(*(create_seated_table(
            Failover(replicas, i), PRESET, turn_time_s=turn_time) for i in range(16)))
        tables = [t for t, _ in made]
        views = [(await failover.call("GetTable", service_pb2.GetTableRequest(
            table_id=t))).view for t in tables]
        deadlines = [v.turn_deadline.ToNanoseconds() / 1e9 for v in views]
        for r in replicas:
            os.kill(r.proc.pid, signal.SIGSTOP)
            stopped.append(r)
        assert time.time() < min(deadlines), "the tables took longer than a turn to set up"
        # the first deadlines pass while neither replica runs; then A alone claims them
        await asyncio.sleep(min(deadlines) + 0.05 - time.time())
        os.kill(a.proc.pid, signal.SIGCONT)
        stopped.remove(a)
        with redis.Redis.from_url(proc.url) as client:
            async with asyncio.timeout(10):
                while not claimed(client, tables):
                    await asyncio.sleep(0)
            a.kill9()
            held = claimed(client, tables)
        assert held, "A acted on every deadline before it was killed"
        os.kill(b.proc.pid, signal.SIGCONT)
        stopped.remove(b)
        results = await asyncio.wait_for(
            asyncio.gather(*(first_timeout(b, t) for t in tables)), 30)
        late = sorted(fired - deadline for deadline, fired, _ in results)
        assert [count for *_, count in results] == [1] * len(tables)  # each exactly once
        held_late = sorted(results[tables.index(t)][1] - results[tables.index(t)][0]
                           for t in held)
        p99 = late[min(len(late) - 1, int(0.99 * len(late)))]
        print(f"deadlines spread {max(deadlines) - min(deadlines):.3f} s; lateness min "
              f"{late[0]:.3f} s")
        print(f"timeouts after kill -9: {len(held)} of {len(tables)} held by the killed "
              f"replica; lateness p99 {p99:.3f} s, max {late[-1]:.3f} s (held: max "
              f"{held_late[-1]:.3f} s)")
        assert all(x >= 0 for x in late)
        assert late[-1] < 1.5
    finally:
        for r in stopped:
            os.kill(r.proc.pid, signal.SIGCONT)
        for r in replicas:
            await r.stop()
        proc.stop()
