"""Engine speed: random matches of every preset on one core, beside OpenSpiel in the same run.

For each preset: complete random matches, every action chosen uniformly from
``legal_actions(state, seat)`` and applied with ``apply`` (full checking), counting hands,
matches and actions per second; then the same loop building ``view(state, seat)`` for the
seat on turn before every action (what the server does). The baseline, measured in the same
run the same way as ``shared/perf-baseline/openspiel_bench.py``: OpenSpiel's
``oh_hell(players=4,num_suits=4,num_cards_per_suit=10,num_tricks_fixed=9)`` random games.

Prints a table, then as its last line one JSON object::

    make bench            # or: python -m benchmarks.engine_bench --duration 3 --reps 3

``legal_actions`` latency on a mid-hand position is printed too (microseconds per call).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

from engine import PRESETS, Rules, apply, legal_actions, new_match, view

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
            acts = view(s, seat).legal if with_view else legal_actions(s, seat)
            s, _ = apply(s, seat, choice(acts))
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per measurement")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (the median is kept)")
    ap.add_argument("--presets", nargs="*", default=sorted(PRESETS))
    a = ap.parse_args(argv)

    def runs(fn: Callable[[int], dict[str, float] | None]) -> list[dict[str, float]]:
        out = []
        for rep in range(a.reps):
            r = fn(1000 + rep)
            if r is not None:
                out.append(r)
        return out

    os_runs = runs(lambda seed: bench_openspiel(a.duration, seed))
    result: dict[str, Any] = {"hands_per_s": {}, "hands_per_s_with_view": {},
                              "matches_per_s": {}, "actions_per_s": {},
                              "actions_per_s_with_view": {}}
    print(f"{'preset':<20} {'hands/s':>9} {'matches/s':>10} {'actions/s':>10} "
          f"{'hands/s+view':>13} {'actions/s+view':>15}")
    for name in a.presets:
        rules = PRESETS[name]
        plain = runs(lambda seed, r=rules: bench_preset(r, a.duration, seed, False))
        viewed = runs(lambda seed, r=rules: bench_preset(r, a.duration, seed, True))
        row = {
            "hands_per_s": median(plain, "hands_per_s"),
            "matches_per_s": median(plain, "matches_per_s"),
            "actions_per_s": median(plain, "actions_per_s"),
            "hands_per_s_with_view": median(viewed, "hands_per_s"),
            "actions_per_s_with_view": median(viewed, "actions_per_s"),
        }
        for k, v in row.items():
            result[k][name] = round(v, 1)
        print(f"{name:<20} {row['hands_per_s']:>9.0f} {row['matches_per_s']:>10.1f} "
              f"{row['actions_per_s']:>10.0f} {row['hands_per_s_with_view']:>13.0f} "
              f"{row['actions_per_s_with_view']:>15.0f}")
    la = legal_actions_us()
    result["legal_actions_us"] = round(la, 3)
    print(f"legal_actions on a mid-hand follow turn: {la:.2f} us")
    if os_runs:
        os_hands = median(os_runs, "hands_per_s")
        result["openspiel_hands_per_s"] = round(os_hands, 1)
        result["openspiel_actions_per_s"] = round(median(os_runs, "actions_per_s"), 1)
        if "parejas" in result["hands_per_s"]:
            result["ratio_parejas_vs_openspiel"] = round(
                result["hands_per_s"]["parejas"] / os_hands, 3)
            result["ratio_parejas_with_view_vs_openspiel"] = round(
                result["hands_per_s_with_view"]["parejas"] / os_hands, 3)
        print(f"{'openspiel ' + OPENSPIEL_GAME:<20} {os_hands:>9.0f} hands/s (baseline)")
    else:
        result["openspiel_hands_per_s"] = None
        result["ratio_parejas_vs_openspiel"] = None
        print("openspiel not installed (pip install '.[bench]'): no baseline")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
