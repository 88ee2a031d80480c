"""A smoke run of the service benchmark with tiny counts: it starts and stops its own servers
and redis-server, and prints the figures the issue asks for as the last line's JSON keys
(no figure is checked against a target here: benchmarks are not tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

KEYS = {
    "actions_per_s",
    "actions_per_s_stream",
    "baseline_publish_per_s",
    "ratio",
    "ratio_stream",
    "p99_ms_at_250",
    "baseline_p99_ms_at_250",
    "p99_ratio",
    "kb_per_stream",
    "baseline_kb_per_stream",
    "kb_per_table",
    "redis_actions_per_s",
    "redis_ratio",
    "server_cpu_us_per_action",
    "ratio_parejas_vs_openspiel",
}


def run_bench(*extra: str) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "protos")])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.service_bench",
            "--tables",
            "2",
            "--clients",
            "1",
            "--rounds",
            "1",
            "--window",
            "1.0",
            "--warmup",
            "0.3",
            "--rate",
            "20",
            "--idle-tables",
            "8",
            "--streams",
            "16",
            "--engine-duration",
            "0.1",
            "--engine-rounds",
            "1",
            "--profile-actions",
            "20",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.keys() >= KEYS, KEYS - result.keys()
    # the load ran: both patterns and the baseline completed actions, streams were opened
    assert result["actions_per_s"] > 0
    assert result["actions_per_s_stream"] > 0
    assert result["actions_per_s_play"] > 0, "pattern (c) played over PlayTable streams"
    assert result["p99_ms_play_at_250"] > 0, "pattern (c) at the fixed rate too"
    assert result["baseline_publish_per_s"] > 0
    assert result["kb_per_stream"] is not None
    return result


def test_service_bench_smoke_on_the_memory_store() -> None:
    """The short form: every phase but the two replicas on Redis; the servers on uvloop (their
    default), the bare baseline on the standard library's loop unless told otherwise."""
    result = run_bench("--no-redis")
    assert result["redis_actions_per_s"] is None
    assert (result["server_loop"], result["baseline_loop"]) == ("uvloop", "asyncio")


def test_service_bench_baseline_on_uvloop() -> None:
    result = run_bench("--no-redis", "--baseline-loop", "uvloop")
    assert (result["server_loop"], result["baseline_loop"]) == ("uvloop", "uvloop")


@pytest.mark.slow
def test_service_bench_smoke() -> None:
    result = run_bench()
    assert result["redis_actions_per_s"] > 0
    assert result["redis_actions_per_s_play"] > 0
    # the routed windows: every seat of a table on the replica the table is routed to
    assert result["redis_routed_actions_per_s"] > 0
    assert result["redis_routed_ratio_play"] > 0


def test_instruction_patterns_name_a_kind_a_loop_and_a_store() -> None:
    from benchmarks.instructions import parse_pattern

    assert parse_pattern("b") == ("b", "", False)
    assert parse_pattern("base-uvloop") == ("base", "uvloop", False)
    assert parse_pattern("c-redis") == ("c", "", True)
    assert parse_pattern("a-asyncio-redis") == ("a", "asyncio", True)
    assert parse_pattern("B-redis") == ("B", "", True)
    for wrong in ("d", "b-pypy", "base-redis", "b-redis-uvloop", "b-uvloop-asyncio", "b-", "B"):
        with pytest.raises(SystemExit, match="unknown pattern"):
            parse_pattern(wrong)


def test_instructions_by_object_count_each_cost_line_once(tmp_path: Path) -> None:
    """Exclusive counts per object file: a call's inclusive cost line is not counted again,
    and compressed names ("(1)") resolve to the file named where they first appear."""
    from benchmarks.instructions import _by_object

    out = tmp_path / "callgrind.out"
    out.write_text(
        "events: Ir\n"
        "ob=(1) /usr/lib/libpython3.11.so.1.0\n"
        "fl=(1) ceval.c\n"
        "fn=(1) _PyEval_EvalFrameDefault\n"
        "10 100\n"
        "cob=(2) /site-packages/grpc/_cython/cygrpc.so\n"
        "cfn=(2) write\n"
        "calls=3 20\n"
        "11 900\n"
        "+1 5\n"
        "ob=(2)\n"
        "fn=(2)\n"
        "20 300\n"
        "ob=(1)\n"
        "fn=(1)\n"
        "12 7\n"
        "totals: 412\n"
    )
    assert _by_object(out) == {"libpython3.11.so.1.0": 112, "cygrpc.so": 300}
