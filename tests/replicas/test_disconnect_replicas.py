"""Abandonment by disconnection across replicas on one Redis (RULES.md §11).

Two servers in this process, each with a Redis store of its own on one real ``redis-server``
(as two replicas in separate processes have), all on one fake clock, with
``disconnect_forfeit_s``: a player's presence is whatever stream it has on any replica, so
moving from one replica to the other within the grace period is not a disconnection, and a
player gone from both forfeits once (whichever replica's scheduler takes the table).
"""

from __future__ import annotations

import redis

from tests.support.clock import FakeClock
from tests.support.redis import RedisProcess
from tests.support.replicas import InProcessReplicas, inprocess_replicas
from tests.support.wait import eventually
from tute.v1 import event_pb2, rules_pb2, service_pb2

from ..service.matchplay import Watcher, kind

GRACE = 1.0
PLAYING = 2  # TABLE_STATUS_PLAYING


def forfeits(w: Watcher) -> list[event_pb2.PlayerForfeited]:
    return [e.player_forfeited for e in w.events if kind(e) == "player_forfeited"]


async def marked(r: InProcessReplicas, table_id: str, seat: int, *, away: bool) -> None:
    """Wait (bounded) until the table records ``seat`` away (or back)."""

    async def recorded() -> bool:
        rec = await r.servers[0].app.load(table_id, presence=False)
        return (seat in rec.away) == away

    await eventually(recorded, what=f"seat {seat} {'away' if away else 'back'}")


async def test_moving_replicas_is_not_leaving_and_leaving_both_forfeits_once(
    redis_proc: RedisProcess,
) -> None:
    clock = FakeClock()
    async with inprocess_replicas(
        2, clock=clock, store_url=redis_proc.url, disconnect_forfeit_s=GRACE
    ) as r:
        one, two = r.stubs
        rules = rules_pb2.Rules(preset="corriente-6", options=rules_pb2.RuleOptions(turn_time_s=0))
        created = await one.CreateTable(
            service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="ana")
        )
        tid = created.table_id
        with redis.Redis.from_url(redis_proc.url) as client:
            assert client.exists(f"tute:{{{tid}}}"), "the table is in Redis"
        stay = Watcher(one, tid, created.seat_token)
        await stay.wait_until(lambda w: bool(w.snapshots))
        joined = await two.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="p"))
        mover = Watcher(two, tid, joined.seat_token)
        await mover.wait_until(lambda w: bool(w.snapshots))
        await marked(r, tid, joined.seat, away=False)
        # The joiner hops: its stream on one replica ends, one on the other begins, within
        # the grace period; then it stays for three grace periods.
        for stub in (one, two, one):
            await mover.close()
            await marked(r, tid, joined.seat, away=True)
            clock.advance(GRACE / 5)
            await r.scheduler_pass(tid)
            mover = Watcher(stub, tid, joined.seat_token)
            await mover.wait_until(lambda w: bool(w.snapshots))
            await marked(r, tid, joined.seat, away=False)
        clock.advance(3 * GRACE)
        await r.scheduler_pass(tid)
        view = (await one.GetTable(service_pb2.GetTableRequest(table_id=tid))).view
        assert view.status == PLAYING
        assert all(seat.connected for seat in view.seats)
        assert not forfeits(stay)
        # Now it leaves for good: forfeited once, by one of the two schedulers.
        await mover.close()
        await marked(r, tid, joined.seat, away=True)
        clock.advance(GRACE + 0.001)
        await r.scheduler_pass(tid)
        await stay.wait_until(
            lambda w: bool(w.events) and kind(w.events[-1]) == "match_ended", timeout=10
        )
        clock.advance(2 * GRACE)
        await r.scheduler_pass(tid)
        (forfeit,) = forfeits(stay)
        assert (forfeit.seat, forfeit.reason) == (
            joined.seat,
            event_pb2.FORFEIT_REASON_DISCONNECTED,
        )
        await stay.close()
        assert stay.error is None
