"""Instructions per action in the server, counted by Valgrind's callgrind: the service beside
the bare grpc.aio publish, a figure the machine's load does not move.

CPU time per action (``benchmarks.service_bench``) drifts by 10-40% between runs on a shared
2-core machine, more than most single optimisations save. The number of instructions the
server process executes per action does not: this runs one measured server under callgrind
(instrumentation switched on for the measured window only, every thread counted, user space
only: the kernel's share of a loopback call is not in it), drives it with
``benchmarks.service_bench``'s load generator at a low fixed rate (callgrind runs the server
some 50 times slower), and prints instructions per action for each pattern:

- ``base``: the bare grpc.aio server (one unary Publish to 4 server streams per action);
- ``b``: SubmitAction acting from the seat streams (``omit_view``, ``batch_events``);
- ``c``: PlayTable (actions and events on one bidirectional stream per seat);
- ``a``: GetTable then SubmitAction.

A pattern of the service may end in ``-redis``: the measured server is one of two replicas
on a Redis of its own (started here), seats alternating between them as in the service
benchmark (``B`` and ``C``: patterns b and c with every seat of a table on one replica, half
the tables on each, as the service benchmark's routed windows), and its count per action is
doubled (the other replica, not measured, runs the
same code for the other seats): both replicas' instructions per action, Redis's own not
counted.

A pattern may name its event loop: ``base`` runs on the standard library's loop (the
reference of the service benchmark) and ``base-uvloop`` on uvloop; the tute server runs on its
default (uvloop) and ``b-asyncio`` (``a-asyncio``, ``c-asyncio``) on the standard library's.

At a low rate every action is served alone (no batching of several actions' messages in one
loop step), so the absolute figures are higher than at saturation; the ratios between patterns,
and between two trees of the service (``--service-dir``: a checkout whose ``service`` package is
measured instead of this one's), are what it is for.

    python -m benchmarks.instructions --compiled build/mypyc            # base, base-uvloop, b, c
    python -m benchmarks.instructions --patterns b,b-asyncio            # what uvloop saves
    python -m benchmarks.instructions --patterns b --service-dir ../old  # an older tree's b
    python -m benchmarks.instructions --patterns b-redis,c-redis         # 2 replicas on Redis

Needs ``valgrind`` (``apt-get install valgrind``; not a test dependency). Prints a table, then
one JSON line. Stops everything it starts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.redis_bench import BENCH_FLAGS
from benchmarks.service_bench import REPO, Baseline, run_load, schedule
from tests.support.redis import free_port, running_redis
from tests.support.replicas import Replica
from tests.support.wait import eventually

WARM_S = 4.0
GAP_S = 0.3


def _pythonpath(engine_dir: Path | None, service_dir: Path | None) -> str:
    # the compiled engine first: a tree given for its service/ has an engine/ of its own
    first = [str(d) for d in (engine_dir, service_dir) if d is not None]
    return os.pathsep.join([*first, str(REPO), str(REPO / "protos")])


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
    except OSError:
        return False
    return True


def measure(
    pattern: str,
    rate: float,
    seconds: float,
    engine_dir: Path | None,
    service_dir: Path | None,
    keep: Path | None = None,
) -> dict[str, Any]:
    """One pattern: its server under callgrind, the load for ``seconds``; Ir per action."""
    kind, loop, on_redis = parse_pattern(pattern)
    tmp = Path(tempfile.mkdtemp(prefix="tute-instructions-"))
    with contextlib.ExitStack() as stack:
        store = "memory"
        if on_redis:
            store = stack.enter_context(running_redis(tmp / "redis")).url
        return _measure(
            pattern, kind, loop, store, tmp, rate, seconds, engine_dir, service_dir, keep
        )


def _measure(
    pattern: str,
    kind: str,
    loop: str,
    store: str,
    tmp: Path,
    rate: float,
    seconds: float,
    engine_dir: Path | None,
    service_dir: Path | None,
    keep: Path | None,
) -> dict[str, Any]:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=_pythonpath(engine_dir, service_dir))
    env = {k: v for k, v in env.items() if not k.startswith("TUTE_")}
    if kind == "base":
        cmd = [sys.executable, "-m", "benchmarks.service_bench", "baseline-server"]
        cmd += ["--port", str(port), "--loop", loop or "asyncio"]
    else:
        cmd = [sys.executable, "-m", "service.main", "--host", "127.0.0.1", "--port", str(port)]
        cmd += ["--metrics-port", "0", "--http-port", "-1", "--store", store]
        cmd += ["--log-format", "json", "--log-level", "warning", *BENCH_FLAGS]
        cmd += ["--event-loop", loop or "auto"]
    out = tmp / "callgrind.out"
    log = (tmp / "server.log").open("wb")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *cmd],
        env=env,
        cwd=tmp,  # not REPO: `python -m` puts the working directory first on sys.path
        stdout=log if kind != "base" else subprocess.PIPE,
        stderr=log,
    )
    # the load generator sets its tables up on a tute server even for the baseline windows
    helper = base = other = None
    try:
        asyncio.run(eventually(lambda: _listening(port), timeout=300, what="the measured server"))
        if kind == "base":
            helper = Replica("helper", "memory", tmp, flags=BENCH_FLAGS, engine_dir=engine_dir)
            asyncio.run(helper.wait_ready())
            tute_port, base_port = helper.port, port
        else:
            base = Baseline()
            tute_port, base_port = port, base.port
        ports = [tute_port]
        if store != "memory":  # the other replica, on the same Redis
            other = Replica("other", store, tmp, flags=BENCH_FLAGS, engine_dir=engine_dir)
            asyncio.run(other.wait_ready())
            ports.append(other.port)
        idle = store != "memory"
        kinds = [("", rate), (kind, rate)] if idle else [(kind, rate)]
        windows = schedule(kinds, 1, WARM_S, seconds, GAP_S)
        spec = {
            "tute_ports": ports,
            "base_port": base_port,
            "tables": 4,
            "seed": 1,
            "batch": True,
            "omit_view": True,
            "play": kind in ("c", "C"),
            "routed": kind in ("B", "C"),
            "windows": windows,
            "cpu_pids": {"tute": [], "base": [], "redis": []},
        }
        started: list[float] = []
        switch = threading.Thread(
            target=_instrument, args=(server.pid, started, seconds, idle), daemon=True
        )
        switch.start()
        outs = run_load(spec, 1, on_start=started.append)
        switch.join(len(windows) * (seconds + WARM_S) + 30)
        done = sum(o["windows"][-1]["done"] for o in outs)
    finally:
        server.terminate()
        server.wait(120)
        log.close()
        for replica in (helper, other):
            if replica is not None:
                replica.terminate()
        if base is not None:
            base.stop()
    # the measured window's, less (on Redis) what the same time costs with nothing played
    counts = _totals(out)
    idle_count = counts.pop(out.name + ".1", 0) if idle else 0
    total = (sum(counts.values()) - idle_count) * len(ports)
    objects = _by_object(out)
    if idle:
        for name, n in _by_object(out.with_name(out.name + ".1")).items():
            objects[name] = objects.get(name, 0) - n
    per_object = {
        name: round(n * len(ports) / max(1, done))
        for name, n in sorted(objects.items(), key=lambda kv: -kv[1])
        if n * 100 >= total / len(ports)  # 1% of the instructions or more
    }
    if keep is not None:  # for callgrind_annotate
        keep.mkdir(parents=True, exist_ok=True)
        for f in out.parent.glob(out.name + "*"):
            shutil.copy(f, keep / f"{pattern}.{f.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "pattern": pattern,
        "actions": done,
        "ir_per_action": total / max(1, done),
        "ir_per_action_by_object": per_object,
    }


LOOPS = ("asyncio", "uvloop")


def parse_pattern(pattern: str) -> tuple[str, str, bool]:
    """``kind[-loop][-redis]`` as (kind, loop or '', on Redis?); SystemExit if unknown."""
    kind, *rest = pattern.split("-")
    on_redis = rest[-1:] == ["redis"]
    if on_redis:
        rest = rest[:-1]
    loop = rest[0] if len(rest) == 1 else ""
    if (
        kind not in ("base", "a", "b", "c", "B", "C")
        or len(rest) > 1
        or (rest and loop not in LOOPS)
        or (on_redis and kind == "base")
        or (kind in ("B", "C") and not on_redis)
    ):
        raise SystemExit(
            f"unknown pattern {pattern!r}: base, a, b or c, then -asyncio, -uvloop or not, "
            "then (not base) -redis or not; B and C (b and c routed by table) end in -redis"
        )
    return kind, loop, on_redis


def _instrument(pid: int, started: list[float], seconds: float, idle: bool) -> None:
    """Instrumentation on for the measured window only (after the warm-up). With ``idle``,
    first for the idle window before it, whose counts are dumped apart (``<out>.1``)."""
    deadline = time.monotonic() + 300
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    if not started:
        return

    def control(*args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True, check=False)

    t0 = started[0] + WARM_S
    if idle:
        time.sleep(max(0.0, t0 - time.monotonic()))
        control("-i", "on")
        time.sleep(max(0.0, t0 + seconds - time.monotonic()))
        control("-d")  # the idle window's counts to <out>.1, the counters zeroed
        control("-i", "off")
        t0 += seconds + GAP_S + WARM_S
    time.sleep(max(0.0, t0 - time.monotonic()))
    control("-z")
    control("-i", "on")
    time.sleep(max(0.0, t0 + seconds - time.monotonic()))
    control("-i", "off")


def _by_object(out: Path) -> dict[str, int]:
    """The instructions of one callgrind file by the object file they ran in (the
    interpreter, gRPC's Cython module, protobuf's, the event loop's ...): each cost line's
    own count (exclusive), the inclusive counts of call lines left out."""
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    current = "?"
    after_call = False
    for line in out.read_text().splitlines():
        if line.startswith(("ob=", "cob=")):
            ref, _, name = line.split("=", 1)[1].partition(" ")
            if name:
                names[ref] = name.rsplit("/", 1)[-1]
            if line.startswith("ob="):
                current = names.get(ref, ref)
        elif line.startswith("calls="):
            after_call = True  # the next cost line is the call's inclusive cost
        elif line[:1].isdigit() or line[:1] in "+-*":
            if after_call:
                after_call = False
                continue
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                counts[current] = counts.get(current, 0) + int(fields[1])
    return counts


def _totals(out: Path) -> dict[str, int]:
    """The instructions callgrind counted, by the file it wrote them to (``<out>.1`` a dump,
    ``<out>`` the final counts)."""
    totals = {}
    for f in out.parent.glob(out.name + "*"):
        for line in f.read_text().splitlines():
            if line.startswith("totals:"):
                totals[f.name] = int(line.split()[1])
                break
    return totals


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--patterns",
        default="base,base-uvloop,b,c",
        help="of base, a, b, c, each with -asyncio or -uvloop (its server's loop) or not, "
        "a, b and c then with -redis (two replicas on Redis) or not",
    )
    ap.add_argument("--rate", type=float, default=8.0, help="actions/s (the server is slowed)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds per pattern")
    ap.add_argument("--compiled", metavar="DIR", help="the mypyc engine the servers import")
    ap.add_argument("--service-dir", metavar="DIR", help="a tree whose service/ is measured")
    ap.add_argument(
        "--keep",
        metavar="DIR",
        help="copy each pattern's callgrind files there: <pattern>.callgrind.out holds the "
        "measured window (on Redis, <pattern>.callgrind.out.1 the idle one before it)",
    )
    a = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    for p in a.patterns.split(","):
        parse_pattern(p)
    engine_dir = Path(a.compiled).resolve() if a.compiled else None
    service_dir = Path(a.service_dir).resolve() if a.service_dir else None
    keep = Path(a.keep) if a.keep else None
    rows = [
        measure(p, a.rate, a.seconds, engine_dir, service_dir, keep) for p in a.patterns.split(",")
    ]
    by = {r["pattern"]: r["ir_per_action"] for r in rows}
    base, base_uv = by.get("base"), by.get("base-uvloop")
    print(f"instructions per action, callgrind, {a.rate:g} actions/s, {a.seconds:g} s each")
    print(f"  {'pattern':12} {'actions':>8} {'k instr/action':>15} {'x base':>7} {'x base-uv':>9}")
    for r in rows:
        ratio = r["ir_per_action"] / base if base else float("nan")
        ratio_uv = r["ir_per_action"] / base_uv if base_uv else float("nan")
        r["ratio_to_base"] = round(ratio, 3)
        r["ratio_to_base_uvloop"] = round(ratio_uv, 3)
        print(
            f"  {r['pattern']:12} {r['actions']:8d} {r['ir_per_action'] / 1e3:15.0f} "
            f"{ratio:7.2f} {ratio_uv:9.2f}"
        )
    objects = list(dict.fromkeys(o for r in rows for o in r["ir_per_action_by_object"]))
    print("  by object file (k instr/action, 1% of a pattern or more):")
    print(f"  {'object':44} " + " ".join(f"{r['pattern']:>12}" for r in rows))
    for o in objects:
        cells = [r["ir_per_action_by_object"].get(o) for r in rows]
        print(
            f"  {o[:44]:44} "
            + " ".join(f"{'' if c is None else f'{c / 1e3:.0f}':>12}" for c in cells)
        )
    print(json.dumps({"rate": a.rate, "seconds": a.seconds, "rows": rows}))


if __name__ == "__main__":
    main()
