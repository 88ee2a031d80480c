"""Stateless replicas on one Redis: any replica serves any call, and none is special.

Every test runs two ``tute-server`` subprocesses on one real ``redis-server`` (or, where the
test says so, on a real three-node Redis Cluster). Players of one
table are connected to different replicas, and so are the watchers; afterwards every
watcher's events must be the same gap-free sequence, and the match replayed on the engine
from the events (hands rebuilt from what each seat received) must end as the server says.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2

import engine
from tests.support.redis import RedisProcess
from tute.v1 import action_pb2, card_pb2, rules_pb2, service_pb2

from ..service.matchplay import assert_same_outcome, replay
from ..support.replicas import Replica, start_replicas
from ..support.wait import eventually
from .cluster import (
    Failover,
    Player,
    ResumingWatcher,
    auth,
    create_seated_table,
    kind,
)

PRESET = "parejas-manos"


class Match:
    """A four-seat table played by test clients spread over the replicas, with one stream per
    seat and one spectator stream per replica."""

    def __init__(
        self,
        replicas: list[Replica],
        table_id: str,
        tokens: dict[int, str],
        rng: random.Random,
        shift: int,
    ) -> None:
        self.table_id = table_id
        self.tokens = tokens
        n = len(replicas)
        self.seat_watchers = {
            s: ResumingWatcher(replicas, s + shift, table_id, t) for s, t in tokens.items()
        }
        self.spectators = [ResumingWatcher(replicas, i, table_id) for i in range(n)]
        self.players = [
            Player(
                replicas,
                s + shift + 1,
                table_id,
                s,
                t,
                self.seat_watchers[s],
                random.Random(rng.random()),
            )
            for s, t in tokens.items()
        ]

    def pause(self) -> None:
        """Its players wait before their next action (one under way completes)."""
        for p in self.players:
            p.go.clear()

    def resume(self) -> None:
        for p in self.players:
            p.go.set()

    @property
    def watchers(self) -> list[ResumingWatcher]:
        return [*self.seat_watchers.values(), *self.spectators]

    @classmethod
    async def start(
        cls, replicas: list[Replica], rng: random.Random, shift: int, **options: Any
    ) -> Match:
        table_id, tokens = await create_seated_table(Failover(replicas, shift), PRESET, **options)
        return cls(replicas, table_id, tokens, rng, shift)

    async def finish(self, timeout: float = 180.0) -> None:
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(p.task for p in self.players))
            for w in self.watchers:
                await w.wait_until(lambda w: w.ended)

    async def close(self) -> None:
        for p in self.players:
            p.task.cancel()
        for w in self.watchers:
            await w.close()

    async def check(self, replicas: list[Replica], options: dict[str, Any]) -> None:
        """Same gap-free events everywhere; the engine replay ends as the server says."""
        reference = self.spectators[0].events
        last = reference[-1].sequence
        assert kind(reference[-1]) == "match_ended"
        for w in self.watchers:
            assert w.faults == [], w.faults
            assert [e.sequence for e in w.events] == list(range(1, last + 1))
        for w in self.spectators[1:]:  # spectators on any replica: the very same events
            assert [e.SerializeToString() for e in w.events] == [
                e.SerializeToString() for e in reference
            ]
        for w in self.seat_watchers.values():  # seats: the same events, their own cards
            assert [kind(e) for e in w.events] == [kind(e) for e in reference]
            assert [e.table_version for e in w.events] == [e.table_version for e in reference]
        for r in replicas:  # every live replica gives the same final view
            if r.proc.poll() is None:
                view = (
                    await r.stub.GetTable(
                        service_pb2.GetTableRequest(table_id=self.table_id),
                        metadata=auth(self.tokens[0]),
                    )
                ).view
                assert view.last_event_sequence == last
        final = (
            await Failover(replicas).call(
                "GetTable", service_pb2.GetTableRequest(table_id=self.table_id), self.tokens[0]
            )
        ).view
        rules = engine.Rules.preset(PRESET, **options)
        rep = replay(rules, {s: w.events for s, w in self.seat_watchers.items()})
        assert rep.server_tricks == rep.engine_tricks
        assert rep.server_hands == rep.engine_hands
        assert_same_outcome(rep.state, final, reference[-1].match_ended)


async def play_matches(
    replicas: list[Replica],
    count: int,
    seed: int,
    *,
    kill_after_events: int = 0,
    **options: Any,
) -> list[Match]:
    """Play ``count`` matches at once; with ``kill_after_events``, kill -9 replica 0 once
    every match has that many events (each match paused there until the kill: its players
    wait, so none ends first however fast the others are set up and played)."""
    rng = random.Random(seed)
    matches = []
    for i in range(count):
        matches.append(await Match.start(replicas, rng, i, **options))
        if kill_after_events:
            matches[-1].pause()  # before its players act: the others are still being set up
    try:
        if kill_after_events:
            for m in matches:  # each played up to the kill's point, then paused
                m.resume()
                await m.spectators[1].wait_until(lambda w: len(w.events) >= kill_after_events)
                m.pause()
            assert not any(m.spectators[1].ended for m in matches), "killed too late"
            replicas[0].kill9()
            for m in matches:
                m.resume()
        await asyncio.gather(*(m.finish() for m in matches))
        for m in matches:
            await m.check(replicas, options)
    finally:
        for m in matches:
            await m.close()
    return matches


async def test_players_on_different_replicas_finish_matches(replicas: list[Replica]) -> None:
    matches = await play_matches(replicas, 3, seed=1, target_match_points=1)
    acted = Counter(p.failover.index for m in matches for p in m.players)
    assert set(acted) == {0, 1}  # the clients really used both replicas


@pytest.mark.parametrize(
    "count", [3, pytest.param(20, marks=pytest.mark.slow)], ids=["3-matches", "20-matches"]
)
async def test_kill9_of_a_replica_mid_match(replicas: list[Replica], count: int) -> None:
    matches = await play_matches(
        replicas, count, seed=count, kill_after_events=25, target_match_points=1
    )
    resumed = sum(w.resumes for m in matches for w in m.watchers)
    assert resumed >= count  # at least the spectators of replica 0 moved over
    assert replicas[1].proc.poll() is None


@pytest.mark.parametrize(
    "replicas", ["redis", pytest.param("cluster", marks=pytest.mark.slow)], indirect=True
)
async def test_timers_and_bots_take_effect_once(replicas: list[Replica]) -> None:
    """Bot turns and turn deadlines are claimed by either replica; each applies once. Also
    on a three-node Redis Cluster, where the tables' keys are spread over the nodes (under
    ``slow``: the failover tests, test_cluster_failover.py, play such tables on a Cluster by
    default and check each bot turn and deadline applies once)."""
    fo = Failover(replicas)
    tables: dict[str, int | None] = {}  # table id -> the idle human's seat (None: all bots)
    for bots, options in ((4, {}),) * 3 + ((3, {"turn_time_s": 1}),) * 2:
        req = service_pb2.CreateTableRequest(
            rules=_rules(target_match_points=1, **options), take_seat=bots < 4, display_name="p"
        )
        created = await fo.call("CreateTable", req)
        add = service_pb2.AddBotRequest(table_id=created.table_id)
        for _ in range(bots):
            await fo.call("AddBot", add, token=created.owner_token)
        tables[created.table_id] = created.seat if bots < 4 else None
    watchers = {tid: ResumingWatcher(replicas, i, tid) for i, tid in enumerate(tables)}
    try:
        async with asyncio.timeout(90):
            for w in watchers.values():
                await w.wait_until(lambda w: w.ended, timeout=90)
    finally:
        for w in watchers.values():
            await w.close()
    timeouts = bot_moves = 0
    for tid, human in tables.items():
        events = watchers[tid].events
        assert watchers[tid].faults == []
        plays: Counter[tuple[int, int, int]] = Counter()
        timed: Counter[tuple[int, int, int]] = Counter()
        hand = 0
        for e in events:
            k = kind(e)
            if k == "hand_dealt":
                hand = e.hand_dealt.hand_number
            elif k == "card_played":
                cp = e.card_played
                plays[(hand, cp.trick_number, cp.seat)] += 1
                assert cp.timed_out == (cp.seat == human)
                if cp.seat != human:
                    bot_moves += 1
            elif k == "turn_timed_out":
                t = e.turn_timed_out
                timed[(hand, t.trick_number, t.seat)] += 1
                assert t.seat == human
            elif k in ("cante_sung", "tute_declared"):
                bot_moves += 1
        assert plays and set(plays.values()) == {1}, "a turn played twice"
        assert all(n == 1 for n in timed.values()), "a deadline fired twice"
        human_turns = {key for key in plays if key[2] == human}
        assert set(timed) == human_turns
        timeouts += len(timed)
    # the replicas' own counts agree: each applied due-item is counted by one replica
    counted_timeouts = sum(r.metric("tute_timeouts_total") for r in replicas)
    counted_bots = sum(r.metric("tute_bot_moves_total") for r in replicas)
    assert (counted_timeouts, counted_bots) == (timeouts, bot_moves)


def _rules(**options: Any) -> rules_pb2.Rules:
    return rules_pb2.Rules(preset=PRESET, options=rules_pb2.RuleOptions(**options))


async def _expect_unavailable(call) -> grpc.aio.AioRpcError:
    """The call fails with UNAVAILABLE (the server does not wait for the store to return;
    the bound is only there so that a hung call fails the test)."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await asyncio.wait_for(call, 20)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value
    return err.value


async def _wait_health(replicas: list[Replica], status: int, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        for r in replicas:
            while await r.health() != status:
                await asyncio.sleep(0.05)


async def test_redis_restart_without_persistence(
    replicas: list[Replica], redis_proc: RedisProcess
) -> None:
    """Redis dies mid-match: calls fail fast with UNAVAILABLE, health is NOT_SERVING and
    watchers are told; Redis comes back empty: the old table is gone (NOT_FOUND) and new
    tables work on both replicas without restarting them."""
    rng = random.Random(5)
    match = await Match.start(replicas, rng, 0, target_match_points=3)
    table_id, token = match.table_id, match.tokens[0]
    watch = replicas[1].stub.WatchTable(
        service_pb2.WatchTableRequest(table_id=table_id, resume_after=0)
    )
    await match.spectators[0].wait_until(lambda w: len(w.events) >= 20)
    for p in match.players:
        p.task.cancel()
    for w in match.watchers:
        await w.close()
    redis_proc.kill()
    get = service_pb2.GetTableRequest(table_id=table_id)
    for r in replicas:
        err = await _expect_unavailable(r.stub.GetTable(get, metadata=auth(token)))
        assert "store is unreachable" in (err.details() or "")
        await _expect_unavailable(
            r.stub.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=table_id,
                    request_id="x",
                    action=action_pb2.Action(
                        play_card=card_pb2.Card(suit=card_pb2.SUIT_OROS, rank=1)
                    ),
                ),
                metadata=auth(token),
            )
        )
        await _expect_unavailable(
            r.stub.CreateTable(service_pb2.CreateTableRequest(rules=_rules()))
        )
        await _expect_unavailable(r.stub.ListTables(service_pb2.ListTablesRequest()))
    await _wait_health(replicas, health_pb2.HealthCheckResponse.NOT_SERVING)
    # the open stream is ended (not left hanging) and says why
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        async with asyncio.timeout(10):
            async for _ in watch:
                pass
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
    redis_proc.start(same_port=True)
    await _wait_health(replicas, health_pb2.HealthCheckResponse.SERVING)
    for r in replicas:
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await r.stub.GetTable(get, metadata=auth(token))
        assert gone.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            async for _ in r.stub.WatchTable(
                service_pb2.WatchTableRequest(table_id=table_id, resume_after=3)
            ):
                pass
        assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    # the same server processes serve new matches across both replicas
    await play_matches(replicas, 2, seed=6, target_match_points=1)


async def test_redis_restart_with_persistence_keeps_the_match(tmp_path: Path) -> None:
    """With an append-only file, a Redis restart mid-match loses nothing: clients retry and
    resume, and the match completes as if nothing happened."""
    proc = RedisProcess(tmp_path / "aof-redis", persist=True).start()
    started = await start_replicas(proc.url, tmp_path)
    try:
        rng = random.Random(9)
        options: dict[str, Any] = {"target_match_points": 1}
        match = await Match.start(started, rng, 0, **options)
        try:
            await match.spectators[0].wait_until(lambda w: len(w.events) >= 30)
            proc.kill()
            # the streams end once the readers' grace is over; Redis returns after that
            await eventually(
                lambda: all(w.resumes for w in match.watchers),
                timeout=30,
                what="every stream to end while Redis is down",
            )
            proc.start(same_port=True)  # from the append-only file
            await match.finish()
            await match.check(started, options)
            assert sum(w.resumes for w in match.watchers) >= len(match.watchers)
        finally:
            await match.close()
    finally:
        for r in started:
            await r.stop()
        proc.stop()
