"""What inference (``Budget.infer_eps``) tells the search, measured without tournaments.

Positions come from matches in which every seat plays one level (``--players``); at each
position some seat has a choice of cards, and the real deal is known to the benchmark.

- ``agree``: how often that level plays the card the ``easy`` rules of thumb would (the
  model inference assumes), by the number of legal cards.
- ``belief``: for each ``eps``, the mean weight the sampled deals give each hidden card's true
  holder (``eps = 0``: inference off), overall and by stage of the hand (tricks 1-3, 4-6...).
- ``rollout``: the search's evaluator alone, on the real deal seen whole (3p and 4p, or 2p
  once the stock is gone): at positions where the seat on turn holds ``--cards`` cards, the
  card whose playout (:class:`engine.search.Rollout`, its last ``--tails`` tricks solved
  exactly; ``p4`` searches the next 4 cards first, :class:`engine.search.Lookahead`, and
  ``p4t5`` does both) scores best, against the deal solved exactly from there: the points
  lost to the best card, by evaluator, with the paired difference from the first and the
  CPU time.
  What is left of ``regret`` at the same positions is the price of the hidden cards.
- ``outcome``: each variant's card at positions where the seat on turn holds ``--cards``
  cards, against the card that does best when every seat then plays the hand out as
  ``--then`` plays (each card's value the mean margin of ``--continuations`` such hands on the
  real deal, the same seeds for every card): a loss against how the hand really goes, where
  ``regret``'s is against a deal everybody sees.
- ``regret``: each search variant's card at positions where every hand holds at most
  ``--max-cards``, against the real deal solved exactly: the points lost to the best card
  (double dummy), each variant's mean and its paired difference from the first variant
  with a 95% interval. ``hard+seed=1000`` is ``hard`` with another seed: the noise floor.

Run it on the compiled engine, e.g. ``cd build/mypyc && PYTHONPATH=$PWD:../.. python -m
benchmarks.bot_inference regret --preset parejas hard hard+infer_eps=0.3``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping

from engine import PRESETS, Rules, State, View, apply, new_match, view
from engine.bots import BOTS, Bot, SearchBot, decisions, easy_card, likelihood
from engine.cards import BIT, cards_of
from engine.determinize import knowledge, sample_from
from engine.search import rollout_values, solve

from .bots import with_changes


def make(spec: str) -> tuple[Bot, int]:
    """A level with budget changes (``hard+infer_eps=0.3+seed=1000``) and its seed offset."""
    name, *changes = spec.split("+")
    base = BOTS[name]
    offset = 0
    if not isinstance(base, SearchBot):
        return base, 0
    fields: list[str] = []
    for change in changes:
        if change.startswith("seed="):
            offset = int(change.removeprefix("seed="))
        else:
            fields.append(change)
    return base.remade(lambda b: with_changes(b, fields), time.process_time), offset


def positions(rules: Rules, level: str, share: float, seed: int) -> Iterator[tuple[State, View]]:
    """Positions of matches (first hands) among ``level`` players, each kept with
    probability ``share``, where the seat on turn chooses among cards only."""
    player, _ = make(level)
    pick = random.Random(seed)
    m = 0
    while True:
        s = new_match(rules, seed * 1000 + m)
        rng = random.Random(m)
        m += 1
        hand_no = s.hand_no
        while not s.over and s.hand_no == hand_no:
            v = view(s, s.turn)
            cards = [a for a in v.legal if a < 40]
            if 1 < len(cards) == len(v.legal) and pick.random() < share:
                yield s, v
            s, _ = apply(s, s.turn, player(rules, v, rng))


def agree(args: argparse.Namespace) -> None:
    rules = PRESETS[args.preset]
    player, _ = make(args.players)
    by_k: dict[int, list[int]] = {}
    for i, (_, v) in enumerate(positions(rules, args.players, 1.0, args.seed)):
        if i >= args.positions:
            break
        a = player(rules, v, random.Random(i))
        row = by_k.setdefault(len(v.legal), [0, 0])
        row[0] += a == easy_card(rules, v)
        row[1] += 1
    same = sum(r[0] for r in by_k.values())
    total = sum(r[1] for r in by_k.values())
    per_k = {k: round(r[0] / r[1], 2) for k, r in sorted(by_k.items())}
    print(f"{args.preset} {args.players}: the easy card in {same}/{total} = {same / total:.3f}")
    print(f"  by legal cards: {per_k}")


def belief(args: argparse.Namespace) -> None:
    rules = PRESETS[args.preset]
    eps_list = [float(x) for x in args.eps.split(",")]
    got: dict[float, list[float]] = {e: [0.0, 0.0] for e in eps_list}
    stages: dict[tuple[float, int], list[float]] = {}
    done = 0
    for s, v in positions(rules, args.players, 0.3, args.seed):
        if done >= args.positions:
            break
        k = knowledge(rules, v)
        found = decisions(rules, v)
        if not k.hidden or not found:
            continue
        done += 1
        rng = random.Random(done)
        deals = [sample_from(k, rng) for _ in range(args.samples)]
        holder = {c: p for p in range(rules.players) for c in cards_of(s.hands[p] & k.hidden)}
        for e in eps_list:
            cache: dict[int, int] = {}
            ws = [likelihood(rules, found, d.hands, e, cache) if e > 0 else 1.0 for d in deals]
            total = sum(ws)
            for c, p in holder.items():
                pr = sum(w for w, d in zip(ws, deals, strict=True) if d.hands[p] & BIT[c]) / total
                got[e][0] += pr
                got[e][1] += 1
                row = stages.setdefault((e, (s.trick_no - 1) // 3), [0.0, 0.0])
                row[0] += pr
                row[1] += 1
    print(f"{args.preset}, {args.players} players, {done} positions, {args.samples} deals each:")
    for e in eps_list:
        by = {
            f"{3 * st + 1}-{3 * st + 3}": round(r[0] / r[1], 3)
            for (x, st), r in sorted(stages.items())
            if x == e
        }
        print(
            f"  eps {e}: mean weight on the true holder {got[e][0] / got[e][1]:.3f}; by trick {by}"
        )


def solved(
    args: argparse.Namespace, keep: Callable[[State, View], bool]
) -> Iterator[tuple[State, View, int, dict[int, int]]]:
    """``--positions`` positions that ``keep`` accepts (only where the seat on turn holds
    ``--cards`` cards, when given), each with the seat's side and every legal card's value on
    the real deal solved exactly."""
    rules = PRESETS[args.preset]
    done = 0
    for s, v in positions(rules, args.players, 0.5, args.seed):
        if done >= args.positions:
            return
        if not keep(s, v) or (args.cards and v.hand.bit_count() != args.cards):
            continue
        side = s.turn % 2 if rules.players == 4 else s.turn
        values = solve(s, side, 0)
        assert values is not None
        yield s, v, side, values
        done += 1


def paired(lost: list[list[float]], names: list[str], cpu: list[str]) -> None:
    """Each variant's mean loss and its paired difference from the first's (95% interval)."""
    done = len(lost[0])
    for i, name in enumerate(names):
        d = [x - y for x, y in zip(lost[i], lost[0], strict=True)]
        mu = sum(d) / len(d)
        sd = math.sqrt(sum((x - mu) ** 2 for x in d) / max(1, len(d) - 1))
        print(
            f"  {name:40s} regret {sum(lost[i]) / done:.3f} pts, vs first {mu:+.3f} "
            f"+- {1.96 * sd / math.sqrt(len(d)):.3f}, CPU {cpu[i]}"
        )


def charge(
    rules: Rules,
    v: View,
    bots: list[tuple[Bot, int]],
    value: Mapping[int, float],
    seed: int,
    lost: list[list[float]],
    cpu: list[float],
) -> None:
    """Each variant's card at ``v`` (its generator seeded ``seed`` plus the variant's offset)
    charged in ``lost`` its shortfall from the best card of ``value``; its CPU time added to
    ``cpu``."""
    best = max(value.values())
    for i, (bot, offset) in enumerate(bots):
        start = time.process_time()
        c = bot(rules, v, random.Random(seed + offset))
        cpu[i] += time.process_time() - start
        lost[i].append(best - value[c])


def regret(args: argparse.Namespace) -> None:
    rules = PRESETS[args.preset]
    bots = [make(spec) for spec in args.variants]
    lost: list[list[float]] = [[] for _ in bots]
    cpu = [0.0] * len(bots)
    done = 0

    def keep(s: State, v: View) -> bool:
        return s.trick_no >= 3 and max(v.hand_sizes) <= args.max_cards

    for _, v, _, values in solved(args, keep):
        charge(rules, v, bots, values, done, lost, cpu)
        done += 1
    print(f"{args.preset}, {args.players} players, {done} positions, <= {args.max_cards} cards:")
    paired(lost, args.variants, [f"{t / done:.3f} s a move" for t in cpu])


def _finish(rules: Rules, s: State, player: Bot, rng: random.Random, side: int) -> int:
    """Play the hand of ``s`` out with ``player`` in every seat: the margin for ``side``."""
    hand_no = s.hand_no
    while not s.over and s.hand_no == hand_no:
        s, _ = apply(s, s.turn, player(rules, view(s, s.turn), rng))
    r = s.last_result
    assert r is not None
    return r.totals[side] - sum(t for i, t in enumerate(r.totals) if i != side)


def outcome(args: argparse.Namespace) -> None:
    rules = PRESETS[args.preset]
    bots = [make(spec) for spec in args.variants]
    then, _ = make(args.then)
    lost: list[list[float]] = [[] for _ in bots]
    cpu = [0.0] * len(bots)
    done = 0
    for s, v in positions(rules, args.players, 0.5, args.seed):
        if done >= args.positions:
            break
        if v.hand.bit_count() != args.cards:
            continue
        side = s.turn % 2 if rules.players == 4 else s.turn
        value: dict[int, float] = {}
        for c in (a for a in v.legal if a < 40):
            after, _ = apply(s, s.turn, c)
            value[c] = (
                sum(
                    _finish(rules, after, then, random.Random(done * 1000 + k), side)
                    for k in range(args.continuations)
                )
                / args.continuations
            )
        charge(rules, v, bots, value, done, lost, cpu)
        done += 1
    print(
        f"{args.preset}, {args.players} players, {done} positions of {args.cards} cards, "
        f"then {args.then} x {args.continuations}:"
    )
    paired(lost, args.variants, [f"{t / done:.3f} s a move" for t in cpu])


def rollout(args: argparse.Namespace) -> None:
    # "5": the last 5 tricks exact; "p4": the next 4 cards searched first; "p4t5": both
    tails: list[tuple[int, int]] = []  # (cards searched, tricks exact)
    for spec in args.tails.split(","):
        plies, _, exact = spec[1:].partition("t") if spec[0] == "p" else ("0", "", spec)
        tails.append((int(plies), int(exact or 0)))
    lost: list[list[float]] = [[] for _ in tails]
    cpu = [0.0] * len(tails)
    done = 0
    for s, v, side, values in solved(args, lambda s, _: not s.stock):
        best = max(values.values())
        cards = [a for a in v.legal if a < 40]
        for i, (plies, exact) in enumerate(tails):
            start = time.process_time()
            got = rollout_values(s, side, cards, exact, 0, plies)
            cpu[i] += time.process_time() - start
            pick = max(range(len(cards)), key=lambda j: got[j])
            lost[i].append(best - values[cards[pick]])
        done += 1
    print(f"{args.preset}, {args.players} players, {done} positions of {args.cards} cards:")
    names = [
        f"search {plies} cards, last {exact} exact" if plies else f"last {exact} tricks exact"
        for plies, exact in tails
    ]
    paired(lost, names, [f"{t / done * 1000:.1f} ms a position (every card)" for t in cpu])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("agree", "belief", "regret", "rollout", "outcome"):
        q = sub.add_parser(name)
        q.add_argument("--preset", default="parejas")
        q.add_argument("--players", default="medium", help="the level every seat plays")
        q.add_argument("--positions", type=int, default=300)
        q.add_argument("--seed", type=int, default=1)
        if name == "belief":
            q.add_argument("--eps", default="0,0.1,0.3,0.5")
            q.add_argument("--samples", type=int, default=200)
        if name == "regret":
            q.add_argument("--max-cards", type=int, default=7)
            q.add_argument("--cards", type=int, default=0, help="only where the seat holds so many")
            q.add_argument("variants", nargs="+")
        if name == "outcome":
            q.add_argument("--cards", type=int, default=8)
            q.add_argument("--then", default="easy", help="the level that plays every hand out")
            q.add_argument("--continuations", type=int, default=1, help="hands per card")
            q.add_argument("variants", nargs="+")
        if name == "rollout":
            q.add_argument("--cards", type=int, default=8)
            q.add_argument(
                "--tails", default="0,4,5,6", help="5: last 5 tricks exact; p4t5: 4 cards searched"
            )
    args = p.parse_args()
    commands = {
        "agree": agree,
        "belief": belief,
        "regret": regret,
        "rollout": rollout,
        "outcome": outcome,
    }
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
