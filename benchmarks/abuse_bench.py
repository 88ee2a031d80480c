"""One hostile anonymous client against the server, with and without the abuse limits; a
legitimate player measures GetTable latency on its own table meanwhile.

Two ``tute-server`` subprocesses on the memory store, bots playing at once (``--bot-delay-s
0``, the worst case for the CPU), each in turn:

- ``limited``: the default limits (per-caller buckets, per-caller stream cap, bot budget);
- ``unlimited``: the same server with every limit off (the baseline: what one client could
  do before).

Every client is on loopback; the server believes ``x-forwarded-for`` from its loopback peer, as
it would behind a proxy on the same machine, so each client has an address of its own: the
legitimate player one, the attacker one per attack (it is the same hostile client, but each
attack starts with fresh buckets). The attacker runs in a subprocess of its own (16 calls in
flight, ignoring RetryInfo), so its client work does not slow the player's event loop.

Per server:

1. the player creates a table, fills it with three more humans of its own (the match starts;
   nobody plays: the turn clock is off) and polls GetTable as its seat every 10 ms: the
   ``idle`` p99;
2. (a) the attacker calls CreateTable as fast as it can; accepted and refused calls, and the
   player's p99 meanwhile;
3. (b) the attacker opens as many WatchTable streams on the player's table as it can and
   holds them; then the seated player opens its own stream: it must get its snapshot;
4. (c) the attacker creates all-bot tables as fast as it can (CreateTable, then AddBot with the
   owner token until the table is full, its match then runs at bot speed); bot seats it got,
   what refused it, and the player's GetTable p99 meanwhile (target: <= 50 ms with the limits).

With ``--botnet``, a third server keeps only the server-wide budget of bot seats (per-caller
limits off, as for an attacker with many addresses) at the default bot delay; the attacker
fills the budget, and the player measures GetTable p99 while it is full.

Bounded loops, loopback only; the servers are stopped at the end (SIGTERM).

    python -m benchmarks.abuse_bench            # about 80 s
    python -m benchmarks.abuse_bench --quick    # about 40 s
    python -m benchmarks.abuse_bench --botnet   # about 2 minutes

Prints a table, then as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.message import Message

from tests.support.replicas import NO_PER_CALLER_LIMITS, Replica
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

REPO = Path(__file__).resolve().parents[1]
"""The server's ``listening`` line (a JSON log line: its stdout is not a terminal)."""
TARGET_P99_MS = 50.0
PLAYER_ADDRESS = "198.51.100.7"
ATTACKER_ADDRESSES = {"create": "203.0.113.1", "streams": "203.0.113.2", "bots": "203.0.113.3"}
IN_FLIGHT = 16
MAX_STREAMS_TRIED = 400
POLL_S = 0.01
CONFIGS: dict[str, list[str]] = {
    "limited": [],
    "unlimited": [*NO_PER_CALLER_LIMITS, "--max-bot-seats", "0"],
}
BOTNET = [*NO_PER_CALLER_LIMITS, "--bot-delay-s", "0.5"]
"""The bot budget alone, at the default bot delay: as if the attacker had many addresses."""


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def as_ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(pct(values, 0.5) * 1e3, 2),
        "p99_ms": round(pct(values, 0.99) * 1e3, 2),
        "max_ms": round(max(values, default=float("nan")) * 1e3, 2),
        "samples": len(values),
    }


def md(address: str, token: str | None = None) -> tuple[tuple[str, str], ...]:
    out: tuple[tuple[str, str], ...] = (("x-forwarded-for", address),)
    if token:
        out += (("authorization", f"Bearer {token}"),)
    return out


def reason(err: grpc.aio.AioRpcError) -> str:
    """``CODE/REASON`` of a failed call (the ErrorInfo reason, if any)."""
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status

    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return f"{err.code().name}/{info.reason}"
    return err.code().name


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------


def server_process(name: str, flags: list[str], log_dir: Path) -> Replica:
    """A tute-server subprocess on the memory store with ``flags`` (the per-caller limits
    stay on unless ``flags`` turn them off): bots move at once, callers are told apart by
    ``x-forwarded-for`` (each attacker address its own caller)."""
    return Replica(
        name,
        "memory",
        log_dir,
        flags=("--bot-delay-s", "0", "--trusted-proxy-header", "x-forwarded-for", *flags),
        metrics=False,
    )


# ---------------------------------------------------------------------------------------------
# The attacker (a subprocess: python -m benchmarks.abuse_bench --attack KIND ...)
# ---------------------------------------------------------------------------------------------


async def attack_create(
    stub: service_pb2_grpc.TuteServiceStub, address: str, seconds: float, _table: str
) -> dict[str, Any]:
    outcomes: Counter[str] = Counter()
    first_refusal: list[int] = []
    end = time.monotonic() + seconds

    async def worker() -> None:
        while time.monotonic() < end:
            try:
                await stub.CreateTable(service_pb2.CreateTableRequest(), metadata=md(address))
                outcomes["OK"] += 1
            except grpc.aio.AioRpcError as err:
                if not first_refusal:
                    first_refusal.append(outcomes["OK"])
                outcomes[reason(err)] += 1

    t0 = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    elapsed = time.monotonic() - t0
    return {
        "accepted": outcomes.pop("OK", 0),
        "refused": dict(outcomes),
        "accepted_before_first_refusal": first_refusal[0] if first_refusal else None,
        "seconds": round(elapsed, 2),
    }


async def attack_streams(
    stub: service_pb2_grpc.TuteServiceStub, address: str, seconds: float, table_id: str
) -> dict[str, Any]:
    """Open streams until MAX_STREAMS_TRIED attempts; hold the open ones ``seconds``."""
    outcomes: Counter[str] = Counter()
    calls: list[Any] = []
    tried = 0

    async def worker() -> None:
        nonlocal tried
        while tried < MAX_STREAMS_TRIED:
            tried += 1
            call = stub.WatchTable(
                service_pb2.WatchTableRequest(table_id=table_id), metadata=md(address)
            )
            try:
                await asyncio.wait_for(call.read(), 10)
                calls.append(call)
                outcomes["opened"] += 1
            except grpc.aio.AioRpcError as err:
                outcomes[reason(err)] += 1
            except TimeoutError:
                call.cancel()
                outcomes["timeout"] += 1

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    print("holding", flush=True)  # the bench opens the seated player's stream now
    await asyncio.sleep(seconds)
    for call in calls:
        call.cancel()
    return {"opened": outcomes.pop("opened", 0), "refused": dict(outcomes), "tried": tried}


async def attack_bots(
    stub: service_pb2_grpc.TuteServiceStub, address: str, seconds: float, _table: str
) -> dict[str, Any]:
    """Fill tables with bots one after the other (the workers share them), creating a new
    table when none has a seat left to fill."""
    outcomes: Counter[str] = Counter()
    filling: list[list[Any]] = []  # [table, seats left, bots being added]
    end = time.monotonic() + seconds

    async def worker() -> None:
        while time.monotonic() < end:
            entry = next((e for e in filling if e[1] - e[2] > 0), None)
            try:
                if entry is None:
                    table = await stub.CreateTable(
                        service_pb2.CreateTableRequest(rules=rules_pb2.Rules(preset="parejas")),
                        metadata=md(address),
                    )
                    filling.append([table, len(table.table.seats), 0])
                    outcomes["tables"] += 1
                    continue
                entry[2] += 1
                try:
                    await stub.AddBot(
                        service_pb2.AddBotRequest(table_id=entry[0].table_id),
                        metadata=md(address, entry[0].owner_token),
                    )
                finally:
                    entry[2] -= 1
                entry[1] -= 1
                outcomes["bot_seats"] += 1
                if not entry[1]:
                    outcomes["all_bot_tables"] += 1
                    filling.remove(entry)
            except grpc.aio.AioRpcError as err:
                outcomes[reason(err)] += 1

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    return {
        "tables": outcomes.pop("tables", 0),
        "bot_seats": outcomes.pop("bot_seats", 0),
        "all_bot_tables": outcomes.pop("all_bot_tables", 0),
        "refused": dict(outcomes),
    }


ATTACKS = {"create": attack_create, "streams": attack_streams, "bots": attack_bots}


async def attacker(kind: str, port: int, seconds: float, table_id: str) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = service_pb2_grpc.TuteServiceStub(channel)
        result = await ATTACKS[kind](stub, ATTACKER_ADDRESSES[kind], seconds, table_id)
    print(json.dumps(result), flush=True)


class Attack:
    """An attacker subprocess: started, read line by line, its last line its result."""

    def __init__(self, kind: str, port: int, seconds: float, table_id: str = "") -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), str(REPO / "protos"), *filter(None, [env.get("PYTHONPATH")])]
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.abuse_bench",
                "--attack",
                kind,
                "--port",
                str(port),
                "--seconds",
                str(seconds),
                "--table",
                table_id,
            ],
            stdout=subprocess.PIPE,
            env=env,
            cwd=REPO,
            text=True,
        )
        self.timeout = seconds + 60

    async def line(self) -> str:
        assert self.proc.stdout is not None
        text = await asyncio.wait_for(asyncio.to_thread(self.proc.stdout.readline), self.timeout)
        if not text:
            raise SystemExit("the attacker process ended early")
        return text.strip()

    async def result(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(await self.line())
        await asyncio.to_thread(self.proc.wait, 30)
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


# ---------------------------------------------------------------------------------------------
# The legitimate player
# ---------------------------------------------------------------------------------------------


class Player:
    def __init__(self, stub: service_pb2_grpc.TuteServiceStub) -> None:
        self.stub = stub
        self.table_id = ""
        self.token = ""

    async def sit(self) -> None:
        rules = rules_pb2.Rules(preset="parejas", options=rules_pb2.RuleOptions(turn_time_s=0))
        created = await self.stub.CreateTable(
            service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="ana"),
            metadata=md(PLAYER_ADDRESS),
        )
        self.table_id, self.token = created.table_id, created.seat_token
        for name in ("bea", "carla", "dani"):
            await self.stub.JoinTable(
                service_pb2.JoinTableRequest(table_id=self.table_id, display_name=name),
                metadata=md(PLAYER_ADDRESS),
            )

    async def poll(self, seconds: float) -> list[float]:
        """GetTable as the seat every POLL_S for ``seconds``: each call's latency."""
        latencies: list[float] = []
        req = service_pb2.GetTableRequest(table_id=self.table_id)
        meta = md(PLAYER_ADDRESS, self.token)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            resp: Message = await self.stub.GetTable(req, metadata=meta)
            latencies.append(time.perf_counter() - t0)
            assert resp.view.table_id == self.table_id  # type: ignore[attr-defined]
            await asyncio.sleep(max(0.0, t0 + POLL_S - time.perf_counter()))
        return latencies

    async def open_seat_stream(self) -> str:
        """The seated player's own stream: 'opened' or what refused it."""
        call = self.stub.WatchTable(
            service_pb2.WatchTableRequest(table_id=self.table_id),
            metadata=md(PLAYER_ADDRESS, self.token),
        )
        try:
            msg = await asyncio.wait_for(call.read(), 10)
            return "opened" if msg.HasField("snapshot") else "no snapshot"
        except grpc.aio.AioRpcError as err:
            return reason(err)
        except TimeoutError:
            return "timeout"
        finally:
            call.cancel()


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


async def one_server(
    name: str, flags: list[str], a: argparse.Namespace, log_dir: Path
) -> dict[str, Any]:
    server = server_process(name, flags, log_dir)
    attacks: list[Attack] = []
    try:
        await server.wait_ready()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            player = Player(service_pb2_grpc.TuteServiceStub(channel))
            await player.sit()
            out: dict[str, Any] = {"idle": as_ms(await player.poll(a.idle_s))}
            if name == "botnet":
                attacks.append(bots := Attack("bots", server.port, a.bots_s + a.fill_s))
                await asyncio.sleep(a.fill_s)  # the budget fills up
                polled = await player.poll(a.bots_s - 1.0)
                out["bot_tables"] = {**await bots.result(), "player_get": as_ms(polled)}
                return out

            attacks.append(flood := Attack("create", server.port, a.attack_s))
            await asyncio.sleep(0.5)  # under way
            polled = await player.poll(a.attack_s - 1.0)
            out["create_flood"] = {**await flood.result(), "player_get": as_ms(polled)}

            attacks.append(streams := Attack("streams", server.port, 3.0, player.table_id))
            assert await streams.line() == "holding"
            seat = await player.open_seat_stream()
            out["streams"] = {**await streams.result(), "seat_stream": seat}

            attacks.append(bots := Attack("bots", server.port, a.bots_s))
            await asyncio.sleep(1.0)  # the first bot tables are playing
            polled = await player.poll(a.bots_s - 1.5)
            out["bot_tables"] = {**await bots.result(), "player_get": as_ms(polled)}
        return out
    finally:
        for attack in attacks:
            attack.kill()
        server.terminate()


async def run(a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "params": {
            k: v for k, v in vars(a).items() if k not in ("attack", "port", "seconds", "table")
        }
    }
    with tempfile.TemporaryDirectory(prefix="tute-abuse-bench-") as tmp:
        for name, flags in CONFIGS.items():
            out[name] = await one_server(name, flags, a, Path(tmp))
        if a.botnet:
            budget = ["--max-bot-seats", str(a.bot_budget)] if a.bot_budget else []
            out["botnet"] = await one_server("botnet", [*BOTNET, *budget], a, Path(tmp))
    lim, unl = out["limited"], out["unlimited"]
    out["target_p99_ms"] = TARGET_P99_MS
    out["player_get_p99_ms_idle"] = lim["idle"]["p99_ms"]
    out["player_get_p99_ms_bot_attack"] = lim["bot_tables"]["player_get"]["p99_ms"]
    out["player_get_p99_ms_bot_attack_unlimited"] = unl["bot_tables"]["player_get"]["p99_ms"]
    out["target_met"] = out["player_get_p99_ms_bot_attack"] <= TARGET_P99_MS
    out["seat_stream_opened"] = lim["streams"]["seat_stream"] == "opened"
    return out


def _refused(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items())) or "-"


def report(r: dict[str, Any]) -> None:
    rows = [
        ("player GetTable p99 ms, no attack", lambda s: s["idle"]["p99_ms"]),
        ("(a) CreateTable accepted", lambda s: s["create_flood"]["accepted"]),
        (
            "(a) accepted before first refusal",
            lambda s: s["create_flood"]["accepted_before_first_refusal"],
        ),
        (
            "(a) CreateTable accepted per s",
            lambda s: round(s["create_flood"]["accepted"] / s["create_flood"]["seconds"], 1),
        ),
        ("(a) refused", lambda s: _refused(s["create_flood"]["refused"])),
        ("(a) player GetTable p99 ms", lambda s: s["create_flood"]["player_get"]["p99_ms"]),
        ("(b) attacker streams opened", lambda s: s["streams"]["opened"]),
        ("(b) refused", lambda s: _refused(s["streams"]["refused"])),
        ("(b) seated player's own stream", lambda s: s["streams"]["seat_stream"]),
        ("(c) bots added", lambda s: s["bot_tables"]["bot_seats"]),
        ("(c) all-bot tables", lambda s: s["bot_tables"]["all_bot_tables"]),
        ("(c) refused", lambda s: _refused(s["bot_tables"]["refused"])),
        ("(c) player GetTable p50 ms", lambda s: s["bot_tables"]["player_get"]["p50_ms"]),
        ("(c) player GetTable p99 ms", lambda s: s["bot_tables"]["player_get"]["p99_ms"]),
        ("(c) player GetTable max ms", lambda s: s["bot_tables"]["player_get"]["max_ms"]),
    ]
    width = max(len(label) for label, _ in rows)
    print(f"{'':{width}}  {'limited (defaults)':>24}  {'unlimited (baseline)':>24}")
    for label, get in rows:
        print(f"{label:{width}}  {get(r['limited'])!s:>24}  {get(r['unlimited'])!s:>24}")
    if "botnet" in r:
        b = r["botnet"]["bot_tables"]
        print(
            f"bot budget alone (per-caller limits off, bot delay 0.5 s): {b['bot_seats']} bots "
            f"added (matches that ended freed theirs), refused {_refused(b['refused'])}; "
            f"player GetTable p50 "
            f"{b['player_get']['p50_ms']} ms, p99 {b['player_get']['p99_ms']} ms "
            f"(no attack: p99 {r['botnet']['idle']['p99_ms']} ms)"
        )
    verdict = "met" if r["target_met"] else "NOT met"
    print(
        f"target: player GetTable p99 <= {TARGET_P99_MS:g} ms under the bot attack with the "
        f"limits: {verdict} ({r['player_get_p99_ms_bot_attack']} ms; without the limits "
        f"{r['player_get_p99_ms_bot_attack_unlimited']} ms)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="shorter phases (about 40 s)")
    ap.add_argument(
        "--botnet",
        action="store_true",
        help="also: the bot budget alone (per-caller limits off, as for an attacker "
        "with many addresses) at the default bot delay (about 40 s more)",
    )
    ap.add_argument(
        "--bot-budget",
        type=int,
        default=0,
        help="with --botnet: this budget of bot seats instead of the default",
    )
    ap.add_argument("--attack", choices=sorted(ATTACKS), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--table", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.attack:
        asyncio.run(attacker(a.attack, a.port, a.seconds, a.table))
        return
    a.idle_s, a.attack_s, a.bots_s = (3.0, 4.0, 6.0) if a.quick else (6.0, 8.0, 15.0)
    a.fill_s = 10.0
    result = asyncio.run(run(a))
    report(result)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
