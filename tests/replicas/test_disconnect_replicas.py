"""Abandonment by disconnection across replicas on one Redis (RULES.md §11).

Two ``tute-server`` subprocesses with ``--disconnect-forfeit-s``: a player's presence is
whatever stream it has on any replica, so moving from one replica to the other within the
grace period is not a disconnection, and a player gone from both forfeits once (whichever
replica's scheduler takes the table).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.redis import RedisProcess
from tute.v1 import event_pb2, rules_pb2, service_pb2

from .cluster import ResumingWatcher, kind, start_replicas

GRACE = 1.0


def forfeits(w: ResumingWatcher) -> list[event_pb2.PlayerForfeited]:
    return [e.player_forfeited for e in w.events if kind(e) == "player_forfeited"]


async def test_moving_replicas_is_not_leaving_and_leaving_both_forfeits_once(
    redis_proc: RedisProcess, tmp_path: Path
) -> None:
    replicas = await start_replicas(
        redis_proc.url, tmp_path, 2, "--disconnect-forfeit-s", str(GRACE)
    )
    try:
        one, two = (r.stub for r in replicas)
        rules = rules_pb2.Rules(preset="corriente-6", options=rules_pb2.RuleOptions(turn_time_s=0))
        created = await one.CreateTable(
            service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="ana")
        )
        tid = created.table_id
        stay = ResumingWatcher(replicas, 0, tid, created.seat_token)
        joined = await two.JoinTable(service_pb2.JoinTableRequest(table_id=tid, display_name="p"))
        mover = ResumingWatcher(replicas, 1, tid, joined.seat_token)
        await mover.wait_until(lambda w: bool(w.events))
        # The joiner hops: its stream on replica two ends, one on replica one begins, within
        # the grace period; then it stays for three grace periods.
        for first in (0, 1, 0):
            await mover.close()
            await asyncio.sleep(GRACE / 5)
            mover = ResumingWatcher(replicas, first, tid, joined.seat_token)
            await mover.wait_until(lambda w: bool(w.events))
        await asyncio.sleep(3 * GRACE)
        view = (await one.GetTable(service_pb2.GetTableRequest(table_id=tid))).view
        assert view.status == 2  # TABLE_STATUS_PLAYING
        assert all(seat.connected for seat in view.seats)
        assert not forfeits(stay)
        # Now it leaves for good: forfeited once, by one of the two schedulers.
        await mover.close()
        await stay.wait_until(lambda w: w.ended, timeout=10)
        (forfeit,) = forfeits(stay)
        assert (forfeit.seat, forfeit.reason) == (
            joined.seat, event_pb2.FORFEIT_REASON_DISCONNECTED
        )
        assert stay.faults == []
        await stay.close()
    finally:
        for r in replicas:
            await r.stop()
