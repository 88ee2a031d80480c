"""A simulated population through the real matcher and rating code (not a test).

2,000 synthetic players, each with a hidden true strength on the display scale (normal,
mean 1500, sd 200); bots stand in at their levels' display ratings. Ranked 4p matches are
made by the real queue (:class:`service.store.queue.MemoryQueue`: enqueue, the atomic claim)
and the real matcher (:func:`service.matchmaking.matcher.plan`: windows, the fairest split,
bot fill after the deadline), on a simulated clock with one matcher pass per second; each
match's result is drawn from the true strengths (the side whose mean true strength is higher
wins with Elo odds: 400 points = 10 to 1), not by playing cards, and rated by the server's
own :func:`service.players.ratings.rate_match` (OpenSkill's Weng-Lin PlackettLuce, margins
off): bots keep their fixed rating.

Two phases, the figures printed at the end and as one JSON line:

1. **ratings**: a busy ladder (``--arrivals`` players join per simulated second) until
   ``--matches`` matches are rated: the Spearman rank correlation of the players' rating
   order (display ratings) with their true strengths (target >= 0.9);
2. **waits**: 50 players queueing per minute (a Poisson stream from the rated population):
   the median and p90 wait from FindMatch to the claim, and the share of bot-filled seats;

What bounds the correlation is what the results tell: 20,000 matches give each of 2,000
players about 40 results in 4p (20 in 2p, 30 in 3p), near even ones (the windows and the
fairest split make them so), and in 4p a result is the pair's, so one player's strength moves
its odds half as much as in 2p. ``--oracle`` fits the simulation's own outcome model, its
true prior included, to every result at once: the best estimate these results allow, which
OpenSkill comes close to; more results per player (``--matches``) raise both.

It also prints the matcher's cost per claim (µs of CPU time in the pass that plans and
claims, divided by the claims). The full run (``make bench-population``) rates 20,000
matches in about a minute (``--oracle`` adds as much again); ``--short`` rates 4,000;
``--mode 2p`` or ``3p`` runs another ladder, ``--spread`` sets the true strengths' spread,
``--beta`` rates with another OpenSkill ``beta`` than OpenSkill's default (25/6), and
``--oracle`` also prints the ceiling (:meth:`Ladder.oracle`)::

    python -m benchmarks.population
    python -m benchmarks.population --mode 3p --spread 300
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import time
from dataclasses import dataclass

from openskill.models import PlackettLuce

from service.matchmaking import matcher
from service.matchmaking.entrants import MODES, SIGMA, Entrant, bot_display
from service.matchmaking.service import candidates
from service.players import ratings
from service.players.ratings import Rated, rate_match
from service.store.queue import MATCHED, MemoryQueue, Ticket

DEADLINE_S = 30.0
TICKET_TTL_S = 10_000.0
"""The simulated watchers never leave: a ticket lives until it is matched."""


@dataclass
class Person:
    player_id: str
    truth: float
    mu: float
    sigma: float

    def entrant(self) -> Entrant:
        return Entrant(self.player_id, self.player_id, self.mu, self.sigma)


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation (the values are continuous: no ties)."""

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        for rank, i in enumerate(order):
            r[i] = float(rank)
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


class Ladder:
    """The population, the queue and the matcher on a simulated clock."""

    def __init__(self, players: int, seed: int, mode: str, spread: float) -> None:
        self.mode = MODES[mode]
        self.rng = random.Random(seed)
        self.people = {
            f"p{i:05d}": Person(f"p{i:05d}", self.rng.gauss(1500.0, spread), 25.0, SIGMA)
            for i in range(players)
        }
        self.idle = set(self.people)
        self.queue = MemoryQueue()
        self.now = 1_800_000_000.0
        self.enqueued: dict[str, float] = {}
        self.matches = 0
        self.claims = 0
        self.claim_cpu_s = 0.0
        self.seats = 0
        self.bot_seats = 0
        self.waits: list[float] = []
        self.results: list[tuple[list[list[str | float]], int]] = []
        """Each rated match: its sides (a player id, or a bot's fixed true strength) and the
        winning side, for :meth:`oracle`."""

    async def join(self, pid: str) -> None:
        p = self.people[pid]
        e = p.entrant()
        t = Ticket(
            ticket_id=f"{self.rng.getrandbits(64):016x}",
            mode=self.mode.name,
            player_id=pid,
            rating=e.rating,
            enqueued_at=self.now,
            alive_until=self.now + TICKET_TTL_S,
            entry=e.encode(),
        )
        held = await self.queue.enqueue(t, self.now)
        if held.state == MATCHED:  # its last match, kept for its watchers, is over (played)
            await self.queue.enqueue(t, self.now, replace_matched=held.ticket_id)
        self.idle.discard(pid)
        self.enqueued[pid] = self.now

    async def matcher_pass(self) -> None:
        t0 = time.process_time()
        waiting = await self.queue.waiting(self.mode.name, self.now)
        won = [
            group
            for group in matcher.plan(self.mode, candidates(waiting), self.now, DEADLINE_S)
            if await self.queue.claim(group.ticket_ids, b"plan", self.now, 60.0)
        ]
        self.claim_cpu_s += time.process_time() - t0
        self.claims += len(won)
        for group in won:
            self.play(group)

    def play(self, group: matcher.Group) -> None:
        """The match's result from the true strengths, rated as the server rates it."""
        seats = group.seats
        truth = [
            bot_display(e.bot_level) if e.bot_level else self.people[e.player_id].truth
            for e in seats
        ]
        n = 2 if self.mode.teams else len(seats)
        sides = [list(seats[i::n]) for i in range(n)]
        # the winner: each side with Elo odds on its mean true strength (400 = 10 to 1)
        weights = [10 ** (statistics.fmean(truth[i::n]) / 400) for i in range(n)]
        winner = self.rng.choices(range(n), weights)[0]
        self.results.append(
            (
                [
                    [bot_display(e.bot_level) if e.bot_level else e.player_id for e in side]
                    for side in sides
                ],
                winner,
            )
        )
        teams = [
            [Rated(e.player_id, e.mu, e.sigma, e.bot_level or None) for e in side] for side in sides
        ]
        for change in rate_match(self.mode.name, teams, winner):  # bots get no change
            p = self.people[change.player_id]
            p.mu, p.sigma = change.mu_after, change.sigma_after
            self.waits.append(self.now - self.enqueued.pop(p.player_id))
            self.idle.add(p.player_id)
        self.matches += 1
        self.seats += len(seats)
        self.bot_seats += group.bot_seats

    def reset_counts(self) -> None:
        self.seats = self.bot_seats = 0
        self.waits = []

    def oracle(self, spread: float, rounds: int = 60) -> float:
        """The best any rating can do from these results: the Spearman of the maximum a
        posteriori fit of the simulation's own outcome model (the winner by Elo odds on the
        sides' mean true strengths) under the true strengths' own prior (normal, mean 1500,
        sd ``spread``), fitted to every result at once (diagonal Newton steps)."""
        k = math.log(10) / 400
        est = dict.fromkeys(self.people, 1500.0)
        for _ in range(rounds):
            grad = {pid: -(s - 1500.0) / spread**2 for pid, s in est.items()}
            hess = dict.fromkeys(est, 1 / spread**2)
            for sides, winner in self.results:
                means = [
                    statistics.fmean(est[m] if isinstance(m, str) else m for m in side)
                    for side in sides
                ]
                top = max(means)
                w = [math.exp(k * (m - top)) for m in means]
                total = sum(w)
                for i, side in enumerate(sides):
                    p = w[i] / total
                    g = k * ((i == winner) - p) / len(side)
                    h = k * k * p * (1 - p) / len(side) ** 2
                    for m in side:
                        if isinstance(m, str):
                            grad[m] += g
                            hess[m] += h
            for pid in est:
                est[pid] += grad[pid] / hess[pid]
        ps = list(self.people.values())
        return spearman([est[p.player_id] for p in ps], [p.truth for p in ps])

    def correlation(self, *, by_mu: bool = False) -> float:
        """Spearman of the display ratings (or of ``mu``) with the true strengths."""
        ps = list(self.people.values())
        shown = [p.mu if by_mu else p.entrant().rating for p in ps]
        return spearman(shown, [p.truth for p in ps])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=2000)
    parser.add_argument("--matches", type=int, default=20_000)
    parser.add_argument("--short", action="store_true", help="4,000 matches (about 20 s)")
    parser.add_argument("--arrivals", type=float, default=40.0, help="ratings phase: joins per s")
    parser.add_argument("--per-minute", type=float, default=50.0, help="waits phase arrivals")
    parser.add_argument("--wait-minutes", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=sorted(MODES), default="4p")
    parser.add_argument(
        "--spread", type=float, default=200.0, help="sd of the true strengths (display points)"
    )
    parser.add_argument(
        "--beta", type=float, default=0.0, help="OpenSkill beta to rate with (0: the server's)"
    )
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="also fit the true outcome model to every result at once (the ceiling)",
    )
    args = parser.parse_args()
    if args.beta:
        ratings._MODEL = PlackettLuce(beta=args.beta)  # a knob of this benchmark
    if args.short:
        args.matches = min(args.matches, 4000)
        args.wait_minutes = min(args.wait_minutes, 60.0)
    ladder = Ladder(args.players, args.seed, args.mode, args.spread)
    wall0 = time.perf_counter()

    # 1. ratings: a busy ladder
    while ladder.matches < args.matches:
        joins = min(len(ladder.idle), _poisson(ladder.rng, args.arrivals))
        for pid in ladder.rng.sample(sorted(ladder.idle), joins):
            await ladder.join(pid)
        await ladder.matcher_pass()
        ladder.now += 1.0
    rho = ladder.correlation()
    rho_mu = ladder.correlation(by_mu=True)
    rho_oracle = ladder.oracle(args.spread) if args.oracle else float("nan")
    ratings_bots = ladder.bot_seats / max(1, ladder.seats)
    ratings_claims, ratings_cpu = ladder.claims, ladder.claim_cpu_s

    # 2. waits at 50 players queueing per minute (the queue emptied first)
    while await ladder.queue.waiting(ladder.mode.name, ladder.now):
        ladder.now += 1.0
        await ladder.matcher_pass()
    ladder.reset_counts()
    ladder.claims, ladder.claim_cpu_s = 0, 0.0
    for _ in range(round(args.wait_minutes * 60)):
        joins = min(len(ladder.idle), _poisson(ladder.rng, args.per_minute / 60.0))
        for pid in ladder.rng.sample(sorted(ladder.idle), joins):
            await ladder.join(pid)
        await ladder.matcher_pass()
        ladder.now += 1.0
    waits = sorted(ladder.waits)
    median = statistics.median(waits) if waits else float("nan")
    p90 = waits[int(0.9 * (len(waits) - 1))] if waits else float("nan")
    bots = ladder.bot_seats / max(1, ladder.seats)
    claims = ratings_claims + ladder.claims
    cost_us = (ratings_cpu + ladder.claim_cpu_s) / max(1, claims) * 1e6
    wall = time.perf_counter() - wall0

    print(
        f"population: {args.players} players (true strengths sd {args.spread:g}), "
        f"{args.matches} ranked {args.mode} matches rated"
    )
    print(
        f"  rank correlation (Spearman) of rating order vs true strength: {rho:.3f} (target >= 0.9)"
    )
    if args.oracle:
        print(f"  the same of a fit of the true outcome model to every result: {rho_oracle:.3f}")
    print(
        f"  bot-filled seats while rating (busy ladder, {args.arrivals:g} joins/s): "
        f"{ratings_bots:.1%}"
    )
    print(
        f"waits at {args.per_minute:g} players queueing per minute "
        f"({args.wait_minutes:g} simulated min):"
    )
    print(f"  matched players {len(waits)}, median wait {median:.1f} s, p90 {p90:.1f} s")
    print(f"  bot-filled seats: {bots:.1%}")
    print(f"matcher cost per claim: {cost_us:.0f} µs CPU ({claims} claims)")
    print(f"wall time {wall:.1f} s")
    print(
        json.dumps(
            {
                "bench": "population",
                "players": args.players,
                "matches": args.matches,
                "mode": args.mode,
                "spread": args.spread,
                "beta": round(ratings._MODEL.beta, 3),
                "spearman": round(rho, 4),
                "spearman_mu": round(rho_mu, 4),
                "spearman_oracle": round(rho_oracle, 4),
                "median_wait_s": median,
                "p90_wait_s": p90,
                "per_minute": args.per_minute,
                "bot_seat_share": round(bots, 4),
                "bot_seat_share_busy": round(ratings_bots, 4),
                "claim_us": round(cost_us, 1),
                "wall_s": round(wall, 1),
            }
        )
    )


def _poisson(rng: random.Random, lam: float) -> int:
    """A Poisson draw (Knuth's; lam is small)."""
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


if __name__ == "__main__":
    asyncio.run(main())
