"""The event loop while many bots think: one server, N all-bot tables whose bots think at
once, and a player measuring GetTable latency on its own table meanwhile.

One ``tute-server`` subprocess (memory store, its bot pool of ``--workers`` processes, bot
delay 0: a bot's turn is due the moment the previous move commits, the worst case). The
player's table is four humans of its own with the turn clock off (nobody plays there).

1. ``idle``: the player polls GetTable as its seat every 10 ms with no bot table: the
   baseline, measured in the same run;
2. ``load``: ``--tables`` tables of four bots of ``--level`` (default 50 tables of ``hard``
   bots: each table always has one bot thinking, so that many moves are asked of the pool at
   once) play while the player polls again for ``--seconds``;
3. the figures: the player's GetTable p50/p99/max in both phases and the ratio of the p99s;
   the bot moves the server applied meanwhile (sum of the bot tables' versions) and the moves
   whose thinking ran past the level's budget plus the pool's slack (the server played the
   cheapest card instead; counted from its log).

The target is p99 <= 20 ms under load: a bot's thinking never runs on the event loop.
Per-caller limits and the bot-seat budget are off (one client creates every table). Bounded:
the server is stopped with SIGTERM at the end (SIGKILL after 15 s), whatever happened, and
its log deleted (kept only when it failed to start).

    python -m benchmarks.bot_load                 # about 40 s
    python -m benchmarks.bot_load --tables 10 --seconds 10

Prints a table, then as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from tests.support.replicas import NO_PER_CALLER_LIMITS
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

from .abuse_bench import Player, as_ms, md, server_process

TARGET_P99_MS = 20.0
BOT_ADDRESS = "203.0.113.9"


async def bot_tables(stub: service_pb2_grpc.TuteServiceStub, count: int, level: str) -> list[str]:
    """``count`` tables of four ``level`` bots (each match starts with its fourth bot)."""
    ids: list[str] = []
    rules = rules_pb2.Rules(preset="parejas")
    for _ in range(count):
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(rules=rules), metadata=md(BOT_ADDRESS)
        )
        for _ in range(4):
            await stub.AddBot(
                service_pb2.AddBotRequest(table_id=created.table_id, level=level),
                metadata=md(BOT_ADDRESS, created.owner_token),
            )
        ids.append(created.table_id)
    return ids


async def versions(stub: service_pb2_grpc.TuteServiceStub, ids: list[str]) -> int:
    """The sum of the tables' versions (a spectator's GetTable)."""
    total = 0
    for table_id in ids:
        resp = await stub.GetTable(
            service_pb2.GetTableRequest(table_id=table_id), metadata=md(BOT_ADDRESS)
        )
        total += resp.view.version
    return total


async def run(a: argparse.Namespace) -> dict[str, Any]:
    log_dir = Path(tempfile.mkdtemp(prefix="tute-bot-load-"))
    flags = [*NO_PER_CALLER_LIMITS, "--max-bot-seats", "0", "--bot-workers", str(a.workers)]
    server = server_process("bot-load", flags, log_dir)
    try:
        await server.wait_ready()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = service_pb2_grpc.TuteServiceStub(channel)
            player = Player(stub)
            await player.sit()
            idle = await player.poll(a.idle_s)
            t0 = time.perf_counter()
            ids = await bot_tables(stub, a.tables, a.level)
            setup_s = time.perf_counter() - t0
            v0 = await versions(stub, ids)
            t1 = time.perf_counter()
            loaded = await player.poll(a.seconds)
            v1 = await versions(stub, ids)
            span = time.perf_counter() - t1
    finally:
        server.terminate()
    log_text = server.log_path.read_text(errors="replace")
    shutil.rmtree(log_dir, ignore_errors=True)
    idle_ms, load_ms = as_ms(idle), as_ms(loaded)
    return {
        "bench": "bot_load",
        "level": a.level,
        "tables": a.tables,
        "workers": a.workers,
        "seconds": a.seconds,
        "setup_s": round(setup_s, 2),
        "idle": idle_ms,
        "load": load_ms,
        "p99_ratio_to_idle": round(load_ms["p99_ms"] / idle_ms["p99_ms"], 2)
        if idle_ms["p99_ms"]
        else None,
        "target_p99_ms": TARGET_P99_MS,
        "met": load_ms["p99_ms"] <= TARGET_P99_MS,
        "bot_moves": v1 - v0,
        "bot_moves_per_s": round((v1 - v0) / span, 2),
        "think_timeouts": log_text.count("bot_think_timed_out"),
        "worker_deaths": log_text.count("bot_worker_died"),
        "cores": os.cpu_count(),
    }


def report(r: dict[str, Any]) -> None:
    print(
        f"{r['tables']} tables of 4 {r['level']} bots, {r['workers']} bot workers, "
        f"{r['cores']} cores; player polls GetTable every 10 ms"
    )
    print(f"{'phase':<8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'calls':>8}")
    for phase in ("idle", "load"):
        x = r[phase]
        print(f"{phase:<8}{x['p50_ms']:>9}{x['p99_ms']:>9}{x['max_ms']:>9}{x['samples']:>8}")
    print(
        f"p99 under load / idle: {r['p99_ratio_to_idle']}x; target p99 <= "
        f"{r['target_p99_ms']} ms: {'met' if r['met'] else 'MISSED'}"
    )
    print(
        f"bot moves applied: {r['bot_moves']} ({r['bot_moves_per_s']}/s); moves past the "
        f"think budget (cheapest card played): {r['think_timeouts']}; worker deaths: "
        f"{r['worker_deaths']}"
    )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.bot_load", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--tables", type=int, default=50, help="all-bot tables thinking at once")
    p.add_argument("--level", default="hard")
    p.add_argument("--seconds", type=float, default=20.0, help="length of the loaded phase")
    p.add_argument("--idle-s", type=float, default=5.0, help="length of the idle baseline")
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="the server's bot worker processes"
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    r = asyncio.run(run(parse(argv)))
    report(r)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
