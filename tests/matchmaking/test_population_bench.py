"""The population benchmark runs end to end with tiny counts (its figures are not checked
here: it is a benchmark, see benchmarks/population.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_population_benchmark_prints_its_figures() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.population",
            "--players",
            "60",
            "--matches",
            "40",
            "--wait-minutes",
            "3",
            "--oracle",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["bench"] == "population" and figures["matches"] == 40
    assert -1.0 <= figures["spearman"] <= 1.0
    assert -1.0 <= figures["spearman_oracle"] <= 1.0
    assert 0.0 <= figures["bot_seat_share"] <= 1.0 and figures["claim_us"] > 0
    assert "median wait" in out
