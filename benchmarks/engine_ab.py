"""Engine builds side by side: ``parejas`` hands/s of several engine trees and OpenSpiel, in
alternating windows (one worker process per tree, the same loop of
:func:`benchmarks.engine_bench.bench_preset` in each), with per-round ratios.

A tree is a directory holding an ``engine`` package (a source tree, or a ``make compile``
build such as ``build/mypyc``); ``openspiel`` names the baseline. Pairs of trees after the
first are compared too (second / first of each pair), e.g. main's source and this one's,
then main's build and this one's::

    python -m benchmarks.engine_ab openspiel /tmp/main . /tmp/main/build/mypyc build/mypyc

Prints the medians and the spread of the per-round ratios; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from benchmarks.engine_bench import bench_openspiel, bench_preset
from engine import PRESETS
import engine.game
print(json.dumps(engine.game.__file__), flush=True)
for line in sys.stdin:
    dur, seed, view = line.split()
    if sys.argv[2] == "openspiel":
        r = bench_openspiel(float(dur), int(seed))
    else:
        r = bench_preset(PRESETS["parejas"], float(dur), int(seed), view == "1")
    print(json.dumps(r["hands_per_s"] if r else 0.0), flush=True)
"""


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("trees", nargs="+", help="engine trees, or 'openspiel'")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--duration", type=float, default=1.5, help="seconds per window")
    a = ap.parse_args()
    trees = [t if t == "openspiel" else str(Path(t).resolve()) for t in a.trees]
    workers = []
    for t in trees:
        root = str(REPO) if t == "openspiel" else t
        p = subprocess.Popen(
            [sys.executable, "-c", WORKER, root, t],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,  # the tree's engine comes first on sys.path
            env={"PYTHONPATH": f"{root}:{REPO}", "PATH": "/usr/bin:/bin"},
        )
        assert p.stdout is not None
        print(f"{t}: {json.loads(p.stdout.readline())}")
        workers.append(p)
    res: dict[str, dict[str, list[float]]] = {t: {"plain": [], "view": []} for t in trees}
    try:
        for r in range(a.rounds):
            for loop in ("plain", "view"):
                for t, p in zip(trees, workers, strict=True):
                    assert p.stdin is not None and p.stdout is not None
                    p.stdin.write(f"{a.duration} {100 + r} {int(loop == 'view')}\n")
                    p.stdin.flush()
                    res[t][loop].append(float(json.loads(p.stdout.readline())))
    finally:
        for p in workers:
            if p.stdin is not None:
                p.stdin.close()
            p.wait(30)
    hands: dict[str, float] = {}
    out: dict[str, object] = {"rounds": a.rounds, "duration": a.duration, "hands_per_s": hands}
    base = trees[0]
    for loop in ("plain", "view"):
        print(f"{loop} (hands/s, and per-round ratio to {base})")
        for t in trees:
            v = res[t][loop]
            ratios = [x / y for x, y in zip(v, res[base][loop], strict=True) if y]
            print(f"  {t:<48} {statistics.median(v):9.1f}  {spread(ratios)}")
            hands[f"{t}:{loop}"] = round(statistics.median(v), 1)
        for first, second in zip(trees[1::2], trees[2::2], strict=False):
            r2 = [y / x for x, y in zip(res[first][loop], res[second][loop], strict=True) if x]
            print(f"  {second} / {first}: {spread(r2)}")
            out[f"ratio:{second}/{first}:{loop}"] = round(statistics.median(r2), 3)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
