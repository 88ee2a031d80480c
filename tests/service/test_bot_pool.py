"""Server-side bots of every level think in worker processes and never stall a table.

- A table of four ``hard`` bots plays its match to the end.
- Killing the worker process while a bot thinks: the pool is replaced, the move computed
  again, and the match still ends.
- A bot move chosen on a view the table has left behind is dropped, not applied.
- The think time of every level is in ``tute_bot_think_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
from collections.abc import AsyncIterator

import grpc
import pytest

import engine
from service.server import Server, create_server
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

from .conftest import FAST
from .helpers import FINISHED, auth, view_of
from .matchplay import Watcher, assert_gap_free, kind

Stub = service_pb2_grpc.TuteServiceStub


@contextlib.asynccontextmanager
async def serving(**settings: object) -> AsyncIterator[tuple[Server, Stub]]:
    srv = await create_server(dataclasses.replace(FAST, **settings))  # type: ignore[arg-type]
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            yield srv, service_pb2_grpc.TuteServiceStub(ch)
    finally:
        await asyncio.wait_for(srv.shutdown(), 30)


async def bot_table(stub: Stub, preset: str, levels: list[str]) -> str:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(turn_time_s=0))
        )
    )
    for level in levels:
        await stub.AddBot(
            service_pb2.AddBotRequest(table_id=created.table_id, level=level),
            metadata=auth(created.owner_token),
        )
    return str(created.table_id)


async def wait_match_end(stub: Stub, tid: str, timeout: float) -> Watcher:
    watcher = Watcher(stub, tid, resume_after=0)
    try:
        await watcher.wait_until(
            lambda w: any(kind(e) == "match_ended" for e in w.events), timeout=timeout
        )
    finally:
        await watcher.close()
    return watcher


async def test_a_table_of_four_hard_bots_finishes() -> None:
    async with serving(bot_workers=2, bot_budget_scale=0.05) as (srv, stub):
        tid = await bot_table(stub, "parejas", ["hard"] * 4)
        watcher = await wait_match_end(stub, tid, timeout=120)
        final = await view_of(stub, tid, None)
        assert final.status == FINISHED
        assert [s.bot_level for s in final.seats] == ["hard"] * 4
        assert_gap_free(watcher.events, 1, final.last_event_sequence)
        played = sum(kind(e) == "card_played" for e in watcher.events)
        think = srv.metrics.registry.get_sample_value(
            "tute_bot_think_seconds_count", {"level": "hard"}
        )
        assert think is not None and think >= played > 0
        assert srv.app.bots.restarts == 0


async def test_killing_a_worker_mid_think_does_not_stall_the_table() -> None:
    async with serving(bot_workers=1, bot_budget_scale=1.0) as (srv, stub):
        pool = srv.app.bots
        # The pool is asked for its workers right before a move goes to them: from then on a
        # bot is thinking in a worker process.
        thinking = asyncio.Event()
        workers = pool._pool

        def workers_then_signal() -> object:
            got = workers()
            thinking.set()
            return got

        pool._pool = workers_then_signal  # type: ignore[method-assign,assignment]
        tid = await bot_table(stub, "corriente-6", ["hard", "medium"])
        await asyncio.wait_for(thinking.wait(), 60)
        pool._pool = workers  # type: ignore[method-assign]
        killed = 0
        for pid in pool.pids():
            os.kill(pid, signal.SIGKILL)
            killed += 1
        assert killed
        # The rest of the match needs no full budget: the pool thinks little from now on
        # (the move being thought is asked again, of a new worker, at this scale too).
        pool.scale = 0.01
        await wait_match_end(stub, tid, timeout=180)
        assert (await view_of(stub, tid, None)).status == FINISHED
        assert pool.restarts >= 1


async def test_a_move_for_a_table_that_moved_on_is_dropped() -> None:
    async with serving(bot_workers=1) as (srv, stub):
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(
                    preset="corriente-6", options=rules_pb2.RuleOptions(turn_time_s=0)
                ),
                take_seat=True,
                display_name="Ana",
            )
        )
        tid = created.table_id
        me = auth(created.seat_token)
        await stub.AddBot(service_pb2.AddBotRequest(table_id=tid, level="easy"), metadata=me)
        bot_seat = 1 - created.seat
        # Wait until it is the human's turn (the bot may lead first): its own TurnStarted.
        watcher = Watcher(stub, tid, created.seat_token)
        try:
            await watcher.wait_until(
                lambda w: (
                    any(e.turn_started.legal_actions for e in w.events)
                    or any(v.legal_actions for v in w.snapshots)
                ),
                timeout=60,
            )
        finally:
            await watcher.close()
        mine = await view_of(stub, tid, created.seat_token)
        rec = await srv.app.load(tid)
        assert rec.state is not None
        old = engine.view(rec.state, bot_seat)
        stale = engine.cards_of(old.hand)[0]
        # The table moves on: the human plays a card.
        await stub.SubmitAction(
            service_pb2.SubmitActionRequest(
                table_id=tid, action=mine.legal_actions[0], request_id="one"
            ),
            metadata=me,
        )
        assert not await srv.app.play_bot_move(tid, bot_seat, old, stale)
        assert (
            srv.metrics.registry.get_sample_value(
                "tute_actions_total", {"kind": "bot", "result": "stale"}
            )
            == 1.0
        )
        # The same move on the view the bot sees now is played.
        now = await srv.app.load(tid)
        assert now.state is not None
        if now.state.turn == bot_seat:
            fresh = engine.view(now.state, bot_seat)
            assert await srv.app.play_bot_move(tid, bot_seat, fresh, fresh.legal[0]) or (
                (await srv.app.load(tid)).version > now.version
            )


@pytest.mark.parametrize("preset", ["tres"])
async def test_every_level_plays_in_the_pool(preset: str) -> None:
    async with serving(bot_workers=2, bot_budget_scale=0.05) as (srv, stub):
        tid = await bot_table(stub, preset, ["easy", "medium", "hard"])
        await wait_match_end(stub, tid, timeout=120)
        for level in ("easy", "medium", "hard"):
            n = srv.metrics.registry.get_sample_value(
                "tute_bot_think_seconds_count", {"level": level}
            )
            assert n is not None and n > 0, level


def test_a_move_that_starts_past_its_deadline_plays_the_rules_of_thumb() -> None:
    """A move that waited in the pool's queue until past its bound does not search: it plays
    what ``easy`` plays, on every turn of a hand."""
    import random
    import time

    from engine.bots import easy_bot
    from service.bots import think

    rules = engine.PRESETS["parejas"]
    s = engine.new_match(rules, random.Random(5))
    for _ in range(30):
        if s.over:
            break
        v = engine.view(s, s.turn)
        late = think("hard", rules.options(), v, 7, 1.0, time.monotonic() - 1.0)
        assert late == easy_bot(rules, v, random.Random(7))
        s, _ = engine.apply(s, s.turn, late)
