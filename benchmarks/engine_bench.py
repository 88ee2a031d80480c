"""Engine speed: random matches of every preset on one core, beside OpenSpiel in the same run.

For each preset: complete random matches, every action chosen uniformly from
``legal_actions(state, seat)`` and applied with ``apply`` (full checking), counting hands,
matches and actions per second; then the same loop building ``view(state, seat)`` for the
seat on turn before every action (what the server does) and applying the action, taken from
that view's legal list, with ``apply_trusted`` (no second check). The baseline, measured in the same
run the same way as ``shared/perf-baseline/openspiel_bench.py``: OpenSpiel's
``oh_hell(players=4,num_suits=4,num_cards_per_suit=10,num_tricks_fixed=9)`` random games,
interleaved with ``parejas``: ``--rounds`` rounds of one OpenSpiel window then one window of
each ``parejas`` loop, in the process measuring the engine; the ratio is the median of the
rounds' ratios (a change of load hits both sides of a round alike).

With ``--compiled DIR`` the same loops run again in a subprocess whose ``engine`` is the
same source compiled with mypyc (``make compile`` builds it into ``build/mypyc``): the build
``make run`` serves with. The JSON's headline keys (``hands_per_s``,
``ratio_parejas_vs_openspiel``, ...) are then the compiled build's, ``engine_build`` says
so, and the pure-Python build's figures carry the suffix ``_python``.

Prints a table, then as its last line one JSON object::

    make bench            # or: python -m benchmarks.engine_bench --duration 3 --reps 3

``legal_actions`` latency on a mid-hand position is printed too (microseconds per call).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path
from typing import Any

from engine import PRESETS, Rules, apply, apply_trusted, legal_actions, new_match, view

OPENSPIEL_GAME = "oh_hell(players=4,num_suits=4,num_cards_per_suit=10,num_tricks_fixed=9)"


def bench_preset(rules: Rules, duration: float, seed: int, with_view: bool) -> dict[str, float]:
    rng = random.Random(seed)
    choice = rng.choice
    hands = matches = actions = 0
    t0 = time.perf_counter()
    deadline = t0 + duration
    while True:
        s = new_match(rules, rng.getrandbits(64))
        hand_no = s.hand_no
        while s.status == "playing":
            seat = s.turn
            if with_view:
                s, _ = apply_trusted(s, seat, choice(view(s, seat).legal))
            else:
                s, _ = apply(s, seat, choice(legal_actions(s, seat)))
            actions += 1
            if s.hand_no != hand_no:
                hands += 1
                hand_no = s.hand_no
        hands += 1
        matches += 1
        if time.perf_counter() > deadline:
            break
    el = time.perf_counter() - t0
    return {
        "hands_per_s": hands / el,
        "matches_per_s": matches / el,
        "actions_per_s": actions / el,
    }


def bench_openspiel(duration: float, seed: int) -> dict[str, float] | None:
    try:
        import pyspiel  # type: ignore[import-not-found]
    except ImportError:
        return None
    game = pyspiel.load_game(OPENSPIEL_GAME)
    rng = random.Random(seed)
    rand = rng.random
    choice = rng.choice
    games = acts = 0
    t0 = time.perf_counter()
    deadline = t0 + duration
    while True:
        s = game.new_initial_state()
        while not s.is_terminal():
            if s.is_chance_node():
                outs = s.chance_outcomes()
                if outs[0][1] == outs[-1][1]:
                    a = outs[int(rand() * len(outs))][0]
                else:
                    r, acc = rand(), 0.0
                    a = outs[-1][0]
                    for act, p in outs:
                        acc += p
                        if r < acc:
                            a = act
                            break
                s.apply_action(a)
            else:
                s.apply_action(choice(s.legal_actions()))
                acts += 1
        s.returns()
        games += 1
        if (games & 15) == 0 and time.perf_counter() > deadline:
            break
    el = time.perf_counter() - t0
    return {"hands_per_s": games / el, "actions_per_s": acts / el}


def legal_actions_us() -> float:
    """Microseconds per ``legal_actions`` call on a mid-hand follow turn of ``parejas``."""
    rng = random.Random(5)
    s = new_match(PRESETS["parejas"], 5)
    while not (s.trick_no == 5 and len(s.trick) == 2):
        s, _ = apply(s, s.turn, rng.choice(legal_actions(s, s.turn)))
        if s.hand_no > 1:
            s = new_match(PRESETS["parejas"], rng.getrandbits(32))
    seat = s.turn
    n = 200_000
    return timeit.timeit(lambda: legal_actions(s, seat), number=n) / n * 1e6


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def interleaved_openspiel(duration: float, rounds: int) -> dict[str, float] | None:
    """``parejas`` (plain and with a view per action) against OpenSpiel in alternating
    windows: medians of the rounds' figures and of their ratios."""
    rows = []
    for i in range(rounds):
        o = bench_openspiel(duration, 2000 + i)
        if o is None:
            return None
        p = bench_preset(PRESETS["parejas"], duration, 3000 + i, False)
        v = bench_preset(PRESETS["parejas"], duration, 3000 + i, True)
        rows.append((o, p, v))
    return {
        "openspiel_hands_per_s": round(statistics.median(o["hands_per_s"] for o, _, _ in rows), 1),
        "openspiel_actions_per_s": round(
            statistics.median(o["actions_per_s"] for o, _, _ in rows), 1
        ),
        "ratio": round(
            statistics.median(p["hands_per_s"] / o["hands_per_s"] for o, p, _ in rows), 3
        ),
        "ratio_view": round(
            statistics.median(v["hands_per_s"] / o["hands_per_s"] for o, _, v in rows), 3
        ),
        "rounds": rounds,
    }


def measure_engine(
    presets: list[str], duration: float, reps: int, rounds: int = 0
) -> dict[str, Any]:
    """Median figures of every preset with and without views, legal_actions latency and,
    with ``rounds``, the interleaved comparison with OpenSpiel (``vs_openspiel``)."""
    out: dict[str, Any] = {
        "hands_per_s": {},
        "hands_per_s_with_view": {},
        "matches_per_s": {},
        "actions_per_s": {},
        "actions_per_s_with_view": {},
    }
    for name in presets:
        rules = PRESETS[name]
        plain = [bench_preset(rules, duration, 1000 + i, False) for i in range(reps)]
        viewed = [bench_preset(rules, duration, 1000 + i, True) for i in range(reps)]
        out["hands_per_s"][name] = round(median(plain, "hands_per_s"), 1)
        out["matches_per_s"][name] = round(median(plain, "matches_per_s"), 1)
        out["actions_per_s"][name] = round(median(plain, "actions_per_s"), 1)
        out["hands_per_s_with_view"][name] = round(median(viewed, "hands_per_s"), 1)
        out["actions_per_s_with_view"][name] = round(median(viewed, "actions_per_s"), 1)
    out["legal_actions_us"] = round(legal_actions_us(), 3)
    out["vs_openspiel"] = interleaved_openspiel(duration, rounds) if rounds else None
    return out


def measure_compiled(
    directory: str, presets: list[str], duration: float, reps: int, rounds: int
) -> Any:
    """The same measurement in a subprocess that imports the mypyc-compiled engine."""
    root = Path(__file__).resolve().parent.parent
    compiled = Path(directory).resolve()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(compiled), str(root)])
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.engine_bench",
        "--engine-only",
        "--duration",
        str(duration),
        "--reps",
        str(reps),
        "--rounds",
        str(rounds),
        "--presets",
        *presets,
    ]
    # cwd: the compiled copy, so that it comes first on sys.path (before the source tree).
    done = subprocess.run(cmd, env=env, cwd=compiled, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(title: str, figures: dict[str, Any]) -> None:
    print(title)
    print(
        f"  {'preset':<20} {'hands/s':>9} {'matches/s':>10} {'actions/s':>10} "
        f"{'hands/s+view':>13} {'actions/s+view':>15}"
    )
    for name in figures["hands_per_s"]:
        print(
            f"  {name:<20} {figures['hands_per_s'][name]:>9.0f} "
            f"{figures['matches_per_s'][name]:>10.1f} {figures['actions_per_s'][name]:>10.0f} "
            f"{figures['hands_per_s_with_view'][name]:>13.0f} "
            f"{figures['actions_per_s_with_view'][name]:>15.0f}"
        )
    print(f"  legal_actions on a mid-hand follow turn: {figures['legal_actions_us']:.2f} us")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per measurement")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (the median is kept)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="interleaved rounds of OpenSpiel and parejas (the median is kept)",
    )
    ap.add_argument("--presets", nargs="*", default=sorted(PRESETS))
    ap.add_argument("--compiled", metavar="DIR", help="also measure the mypyc-compiled engine")
    ap.add_argument("--engine-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    import engine.game

    compiled_here = not engine.game.__file__.endswith(".py")
    if a.engine_only:
        figures = measure_engine(a.presets, a.duration, a.reps, a.rounds)
        figures["compiled"] = compiled_here
        print(json.dumps(figures))
        return

    here = measure_engine(a.presets, a.duration, a.reps, a.rounds)
    here_build = "mypyc" if compiled_here else "python"
    print_table(f"engine imported here ({here_build}: {Path(engine.game.__file__).name})", here)
    builds = {here_build: here}
    if a.compiled:
        comp = measure_compiled(a.compiled, a.presets, a.duration, a.reps, a.rounds)
        if not comp.pop("compiled"):
            raise SystemExit(f"{a.compiled} does not hold a compiled engine (make compile)")
        print_table(
            f"the same engine compiled with mypyc ({a.compiled}; what `make run` serves)", comp
        )
        builds["mypyc"] = comp
    # The headline figures are the build the server runs (`make run` serves the compiled one);
    # the pure-Python build's figures follow with the suffix _python.
    headline = "mypyc" if "mypyc" in builds else "python"
    versus = {build: figures.pop("vs_openspiel") for build, figures in builds.items()}
    result: dict[str, Any] = {"engine_build": headline, **builds[headline]}
    if headline == "mypyc" and "python" in builds:
        for key, value in builds["python"].items():
            result[f"{key}_python"] = value
    if versus[headline] is not None:
        result["openspiel_hands_per_s"] = versus[headline]["openspiel_hands_per_s"]
        result["openspiel_actions_per_s"] = versus[headline]["openspiel_actions_per_s"]
        for build, vs in versus.items():
            if vs is None:
                continue
            suffix = "" if build == headline else f"_{build}"
            result[f"ratio_parejas_vs_openspiel{suffix}"] = vs["ratio"]
            result[f"ratio_parejas_with_view_vs_openspiel{suffix}"] = vs["ratio_view"]
            print(
                f"parejas ({build}) / OpenSpiel {OPENSPIEL_GAME}, interleaved, median of "
                f"{vs['rounds']} rounds: {vs['ratio']:.2f}x; with a view per action: "
                f"{vs['ratio_view']:.2f}x (OpenSpiel {vs['openspiel_hands_per_s']:.0f} games/s)"
            )
    else:
        result["openspiel_hands_per_s"] = None
        result["ratio_parejas_vs_openspiel"] = None
        print("openspiel not installed (pip install '.[bench]'): no baseline")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
