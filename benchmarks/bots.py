"""Bot tournament: level against level on duplicate deals, with intervals and ratings.

``python -m benchmarks.bots`` (``make bench-bots``: the short form) plays, for each preset
and each pair of levels, matches on the same deals (a match's deals are a function of its
seed) in every seating: in 2p and 4p each side once, in 3p the first level alone in each of
the three seats against two copies of the second. It prints a table and one JSON line:

- ``win``: the first level's share of matches won (3p: of its head-to-head rankings against
  each copy of the other, by match points; equal strength is 50% either way), with its
  Wilson 95% interval; ``margin``: its mean point margin per deal (all seatings of the deal
  summed: card points, las diez de últimas and cantes of every hand);
- ``--sprt``: stop a pair as soon as the SPRT (H0 50%, H1 55%, alpha = beta = 0.05) decides;
- ratings: one Elo-like scale with ``random`` at 0, fitted to every pair played, with 95%
  intervals from a parametric bootstrap;
- think time per level (mean, p99) over the moves where it had a choice: CPU time of the one
  core the match runs on, which is also what bounds the search (``time_s`` of its budget), so
  that other work on the machine changes neither the moves nor the figures.

``engine`` in the JSON line says whether the engine was the mypyc build (``make bench-bots``
runs it from ``build/mypyc``) or the pure-Python one.

Matches run in worker processes (``--workers``, default the cores). ``ismcts`` is
OpenSpiel's IS-MCTS bot (:mod:`benchmarks.openspiel_tute`) given ``hard``'s mean time per
move as measured in the same run, in the same preset (``hard``'s budget depends on the
number of players): its pairs start once that preset's other pairs are done
(``--ismcts-time`` fixes one time for every preset). ``think_by_preset`` in the JSON line
gives the think times of each preset and pair apart, ``ismcts_time_by_preset`` the times
IS-MCTS was given.

``--loop`` runs :mod:`benchmarks.bot_load` instead: a player's GetTable p99 on a server while
50 tables of ``hard`` bots think at once.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from engine import PRESETS, Rules, apply, new_match, view
from engine.bots import BOTS, Bot, Budget, SearchBot

from .stats import rating_intervals, ratings, sprt, wilson

LEVELS = ("random", "easy", "medium", "hard")
TARGET_PAIRS = (("easy", "random"), ("medium", "easy"), ("hard", "medium"), ("hard", "ismcts"))
PRESETS_DEFAULT = ("parejas", "corriente-8", "tres")
MAX_MOVES = 3000

_BOT_CACHE: dict[tuple[str, float, float], Bot] = {}


def with_changes(b: Budget, changes: list[str]) -> Budget:
    """``b`` with each of ``changes`` (``field=value``, as a level's name gives them) made."""
    for spec in changes:
        field, value = spec.split("=")
        b = b._replace(**{field: type(getattr(b, field))(value)})
    return b


def make_bot(level: str, scale: float, ismcts_time: float) -> Bot:
    key = (level, scale, ismcts_time)
    if key in _BOT_CACHE:
        return _BOT_CACHE[key]
    bot: Bot
    if level == "ismcts":
        from .openspiel_tute import ismcts_bot

        bot = ismcts_bot(ismcts_time)
    else:
        # A level may name changes to its budget: ``hard+infer_eps=0.5+infer_pool=3``.
        name, *changes = level.split("+")
        base = BOTS[name]
        bot = base
        if isinstance(base, SearchBot):
            # The budget's time is CPU time: a busy machine changes no move's search.
            def change(b: Budget) -> Budget:  # to every budget of the level
                b = with_changes(b, changes)
                return b._replace(
                    samples=max(1, round(b.samples * scale)),
                    iterations=round(b.iterations * scale),
                    time_s=b.time_s * scale,
                )

            bot = base.remade(change, time.process_time)
    _BOT_CACHE[key] = bot
    return bot


def seatings(players: int, a: str, b: str) -> list[tuple[str, ...]]:
    """Every seating of level ``a`` against ``b``."""
    if players == 3:
        return [tuple(a if s == k else b for s in range(3)) for k in range(3)]
    if players == 2:
        return [(a, b), (b, a)]
    return [(a, b, a, b), (b, a, b, a)]


def play_match(
    preset: str, seating: tuple[str, ...], seed: int, scale: float, ismcts_time: float
) -> dict[str, Any]:
    """One match; what the tournament needs of it."""
    rules: Rules = PRESETS[preset]
    bots = [make_bot(level, scale, ismcts_time) for level in seating]
    rngs = [random.Random(seed * 16 + seat) for seat in range(rules.players)]
    s = new_match(rules, seed)
    sides = rules.sides
    margin = [0] * sides
    hand_no = s.hand_no
    times: dict[str, list[float]] = defaultdict(list)
    for _ in range(MAX_MOVES):
        if s.over:
            break
        seat = s.turn
        v = view(s, seat)
        start = time.process_time()
        action = bots[seat](rules, v, rngs[seat])
        took = time.process_time() - start
        if sum(1 for x in v.legal if x < 40) > 1 or len(v.legal) > 1:
            times[seating[seat]].append(took)
        s, _ = apply(s, seat, action)
        if s.hand_no != hand_no or s.over:
            hand_no = s.hand_no
            r = s.last_result
            if r is not None:
                for side in range(sides):
                    margin[side] += r.totals[side]
    return {
        "winners": list(s.winners),
        "match_points": list(s.match_points),
        "game_scores": list(s.game_scores),
        "games_won": list(s.games_won),
        "totals": margin,
        "times": dict(times),
        "over": s.over,
    }


def think_times(unsorted: list[float]) -> dict[str, float] | None:
    """Moves, mean and p99 of think times (None for none)."""
    ts = sorted(unsorted)
    if not ts:
        return None
    return {
        "moves": len(ts),
        "mean_s": round(sum(ts) / len(ts), 4),
        "p99_s": round(ts[min(len(ts) - 1, int(0.99 * len(ts)))], 4),
    }


def score_deal(
    players: int, a: str, seats: list[tuple[str, ...]], results: list[dict[str, Any]]
) -> tuple[float, int, float]:
    """(wins of ``a``, trials, margin of ``a``) over the seatings of one deal."""
    wins = 0.0
    trials = 0
    margin = 0.0
    for seating, r in zip(seats, results, strict=True):
        if players == 3:
            me = seating.index(a)
            pts = r["match_points"]
            for other in range(3):
                if other == me:
                    continue
                trials += 1
                if pts[me] > pts[other]:
                    wins += 1
                elif pts[me] == pts[other]:
                    wins += 0.5
                margin += (r["totals"][me] - r["totals"][other]) / 2
        else:
            side = seating.index(a) % 2
            trials += 1
            if side in r["winners"]:
                wins += 1
            margin += r["totals"][side] - r["totals"][1 - side]
    return wins, trials, margin


def run(args: argparse.Namespace, out: Callable[[str], None]) -> dict[str, Any]:  # noqa: C901 - the tournament's one loop: schedule, collect, report, stop (SPRT)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    from rich.table import Table

    console = Console(file=sys.stderr)
    pairs: list[tuple[str, str]] = []
    for spec in args.pairs.split(","):
        a, b = spec.split(":")
        pairs.append((a, b))
    presets = args.presets.split(",")
    ismcts_time = args.ismcts_time
    # IS-MCTS's time per move in each preset: hard's mean there (or args.ismcts_time)
    ismcts_times: dict[str, float] = {}
    jobs: list[tuple[str, tuple[str, str], int]] = [
        (preset, pair, deal) for preset in presets for pair in pairs for deal in range(args.deals)
    ]
    # ``ismcts`` pairs go last: they use hard's time per move measured by then.
    jobs.sort(key=lambda j: "ismcts" in j[1])
    per_pair: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0, 0.0, 0])
    decided: dict[tuple[str, str, str], str] = {}
    # (preset, "A:B", level): the level's think times in that preset and pair
    pair_times: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    pending: dict[Future[Any], tuple[str, tuple[str, str], int, int]] = {}
    deal_results: dict[tuple[str, str, str, int], list[Any]] = defaultdict(list)
    started = time.time()
    total = sum(len(seatings(PRESETS[p].players, *pair)) for p, pair, _ in jobs)
    with (
        ProcessPoolExecutor(args.workers) as pool,
        Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress,
    ):
        task = progress.add_task("matches", total=total)
        queue = list(jobs)

        def hard_times(preset: str | None) -> list[float]:
            """hard's think times outside IS-MCTS pairs, in ``preset`` (None: in every one)."""
            return [
                t
                for (pr, names, level), ts in pair_times.items()
                if level == "hard" and "ismcts" not in names and preset in (None, pr)
                for t in ts
            ]

        def submit() -> None:
            while queue and len(pending) < args.workers * 2:
                preset, pair, deal = queue[0]
                key = (preset, *pair)
                if key in decided:
                    queue.pop(0)
                    progress.advance(task, len(seatings(PRESETS[preset].players, *pair)))
                    continue
                if "ismcts" in pair and preset not in ismcts_times:
                    if ismcts_time > 0:
                        ismcts_times[preset] = ismcts_time
                    elif any("ismcts" not in p[1] and p[0] == preset for p in pending.values()):
                        return  # wait for hard's think time from this preset's other pairs
                    else:
                        hard = hard_times(preset) or hard_times(None)
                        ismcts_times[preset] = sum(hard) / len(hard) if hard else 0.3
                queue.pop(0)
                seed = args.seed + deal
                it = ismcts_times.get(preset, 0.0)
                for i, seating in enumerate(seatings(PRESETS[preset].players, *pair)):
                    fut = pool.submit(play_match, preset, seating, seed, args.scale, it)
                    pending[fut] = (preset, pair, deal, i)

        submit()
        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in done:
                preset, pair, deal, i = pending.pop(fut)
                r = fut.result()
                progress.advance(task)
                for level, ts in r["times"].items():
                    pair_times[(preset, ":".join(pair), level)].extend(ts)
                dkey = (preset, *pair, deal)
                deal_results[dkey].append((i, r))
                n_seats = len(seatings(PRESETS[preset].players, *pair))
                if len(deal_results[dkey]) == n_seats:
                    got = [x for _, x in sorted(deal_results.pop(dkey), key=lambda t: t[0])]
                    w, n, m = score_deal(
                        PRESETS[preset].players,
                        pair[0],
                        seatings(PRESETS[preset].players, *pair),
                        got,
                    )
                    acc = per_pair[(preset, *pair)]
                    acc[0] += w
                    acc[1] += n
                    acc[2] += m
                    acc[3] += 1
                    if not console.is_terminal:  # no live bar: one line per deal instead
                        print(
                            f"{preset} {pair[0]}:{pair[1]} deal {deal}: {acc[0]:g}/"
                            f"{int(acc[1])} after {int(acc[3])} deals",
                            file=sys.stderr,
                            flush=True,
                        )
                    if args.sprt:
                        verdict = sprt(acc[0], acc[1] - acc[0])
                        if verdict != "continue":
                            decided[(preset, *pair)] = verdict
            submit()
    elapsed = time.time() - started
    table = Table(title=f"bot tournament ({args.deals} deals per pair, every seating)")
    for col in ("preset", "A vs B", "matches", "A win %", "95% interval", "margin/deal", "sprt"):
        table.add_column(col)
    rows = []
    for (preset, a, b), (w, n_f, m, deals) in per_pair.items():
        n = int(n_f)
        lo, hi = wilson(w, n)
        row = {
            "preset": preset,
            "a": a,
            "b": b,
            "trials": int(n),
            "wins": w,
            "win_rate": round(w / n, 4) if n else None,
            "ci95": [round(lo, 4), round(hi, 4)],
            "margin_per_deal": round(m / deals, 2) if deals else None,
            "sprt": decided.get((preset, a, b), sprt(w, n - w) if args.sprt else ""),
        }
        rows.append(row)
        table.add_row(
            preset,
            f"{a} vs {b}",
            str(int(n)),
            f"{100 * w / n:.1f}" if n else "-",
            f"{100 * lo:.1f}-{100 * hi:.1f}",
            f"{row['margin_per_deal']}",
            str(row["sprt"]),
        )
    console.print(table)
    rated, intervals = rate(rows)
    levels = list(rated)
    times: dict[str, list[float]] = defaultdict(list)
    think_by_preset: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for (preset, names, level), ts in pair_times.items():
        times[level].extend(ts)
        if summary := think_times(ts):
            think_by_preset.setdefault(preset, {}).setdefault(names, {})[level] = summary
    think = {level: summary for level, ts in times.items() if (summary := think_times(ts))}
    rt = Table(title="ratings (Elo-like, random = 0) and CPU time per move")
    for col in ("level", "rating", "95% interval", "moves", "mean s", "p99 s"):
        rt.add_column(col)
    for level in levels:
        t = think.get(level, {})
        lo, hi = intervals.get(level, (float("nan"), float("nan")))
        rt.add_row(
            level,
            f"{rated[level]:.0f}",
            f"{lo:.0f} to {hi:.0f}",
            str(t.get("moves", "-")),
            str(t.get("mean_s", "-")),
            str(t.get("p99_s", "-")),
        )
    console.print(rt)
    import engine.game

    result = {
        "bench": "bots",
        "deals": args.deals,
        "seed": args.seed,
        "scale": args.scale,
        "workers": args.workers,
        "elapsed_s": round(elapsed, 1),
        "engine": "python" if engine.game.__file__.endswith(".py") else "mypyc",
        "pairs": rows,
        "ratings": {k: round(v, 1) for k, v in rated.items()},
        "ratings_ci95": {k: [round(lo, 1), round(hi, 1)] for k, (lo, hi) in intervals.items()},
        "think": think,
        "think_by_preset": think_by_preset,
        "ismcts_time_s": round(ismcts_time, 4) if ismcts_time > 0 else None,
        "ismcts_time_by_preset": {p: round(t, 4) for p, t in ismcts_times.items()},
    }
    out(json.dumps(result))
    return result


def rate(rows: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Ratings with 95% intervals from the pair rows of one or more runs: every preset's
    matches of a pair pooled, ``random`` at 0 (nothing without ``random``)."""
    pooled: dict[tuple[str, str], tuple[float, int]] = {}
    for row in rows:
        a, b, w, n = row["a"], row["b"], float(row["wins"]), int(row["trials"])
        s0, n0 = pooled.get((a, b), (0.0, 0))
        total_n = n0 + n
        pooled[(a, b)] = ((s0 * n0 + w) / total_n if total_n else 0.0, total_n)
    levels = sorted(
        {x for pair in pooled for x in pair}, key=lambda x: LEVELS.index(x) if x in LEVELS else 99
    )
    if "random" not in levels:
        return {}, {}
    return ratings(pooled, "random", levels), rating_intervals(pooled, "random", levels)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.bots", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="the long form: 200 deals per pair of the round robin, with SPRT",
    )
    p.add_argument("--deals", type=int, default=4, help="deals per pair and preset")
    p.add_argument(
        "--pairs",
        default=",".join(f"{a}:{b}" for a, b in TARGET_PAIRS),
        help="A:B pairs, comma separated ('round-robin' for every pair of levels)",
    )
    p.add_argument("--presets", default=",".join(PRESETS_DEFAULT))
    p.add_argument(
        "--scale", type=float, default=1.0, help="scale of the medium and hard search budgets"
    )
    p.add_argument("--sprt", action="store_true", help="stop a pair once the SPRT decides")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument(
        "--ismcts-time",
        type=float,
        default=0.0,
        help="seconds per IS-MCTS move in every preset (default: hard's mean in this run, "
        "preset by preset)",
    )
    p.add_argument(
        "--ratings-from",
        nargs="+",
        metavar="FILE",
        help="instead: the ratings of the pairs in these runs' JSON lines pooled",
    )
    p.add_argument(
        "--loop",
        action="store_true",
        help="instead: the event-loop benchmark (python -m benchmarks.bot_load)",
    )
    a = p.parse_args(argv)
    if a.pairs == "round-robin":
        a.pairs = ",".join(f"{y}:{x}" for x, y in itertools.combinations(LEVELS, 2))
    if a.full:
        a.deals = max(a.deals, 200)
        a.sprt = True
        if "random:" not in a.pairs and ":random" not in a.pairs:
            a.pairs = ",".join(f"{y}:{x}" for x, y in itertools.combinations(LEVELS, 2)) + (
                ",hard:ismcts"
            )
    return a


def main(argv: list[str] | None = None) -> None:
    a = parse(argv)
    if a.loop:
        from . import bot_load

        bot_load.main([])
        return
    if a.ratings_from:
        rows = []
        for name in a.ratings_from:
            with open(name) as f:
                for line in f:
                    if line.startswith("{"):
                        rows.extend(json.loads(line)["pairs"])
        rated, intervals = rate(rows)
        print(
            json.dumps(
                {
                    "ratings": {k: round(v, 1) for k, v in rated.items()},
                    "ratings_ci95": {
                        k: [round(lo, 1), round(hi, 1)] for k, (lo, hi) in intervals.items()
                    },
                    "pairs": rows,
                }
            )
        )
        return
    run(a, print)


if __name__ == "__main__":
    main()
