"""The matcher's decisions, pure: which waiting tickets make a table, who partners whom, and
which bots fill the seats still missing. :mod:`.service` runs them and claims the result.

- **Windows.** A ticket accepts players whose display rating is within its window of its own:
  :func:`window` (+-100, +-200 after 15 s, +-400 after 30 s by default). Two tickets may sit
  together when each one's window holds the other.
- **Groups.** The oldest ticket first: it takes the nearest ratings its window (and theirs)
  allows. A full table is a group; a ticket that has waited the deadline takes the humans it
  can and bots for the rest, of the level nearest the humans' mean rating.
- **Seats.** In pairs (4p), the split of the four with the highest OpenSkill draw probability
  (the fairest match): one pair at seats 0 and 2, the other at 1 and 3.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
from collections.abc import Sequence

from openskill.models import PlackettLuce

from .entrants import Entrant, Mode, bot_entrant, nearest_level

WINDOWS: tuple[tuple[float, float], ...] = ((0.0, 100.0), (15.0, 200.0), (30.0, 400.0))
"""(waited at least, window): the window grows with the time waited."""


def window(waited_s: float, steps: Sequence[tuple[float, float]] = WINDOWS) -> float:
    """The rating window of a ticket that has waited ``waited_s``."""
    width = steps[0][1]
    for after, w in steps:
        if waited_s >= after:
            width = w
    return width


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """A waiting ticket as the matcher sees it."""

    ticket_id: str
    entrant: Entrant
    enqueued_at: float


@dataclasses.dataclass(frozen=True, slots=True)
class Group:
    """A table to make: ``seats[i]`` sits at seat i; ``ticket_ids`` are the humans' tickets."""

    seats: tuple[Entrant, ...]
    ticket_ids: tuple[str, ...]

    @property
    def bot_seats(self) -> int:
        return sum(1 for e in self.seats if e.bot_level)


@functools.cache
def _model() -> PlackettLuce:
    return PlackettLuce()


def draw_probability(sides: Sequence[Sequence[Entrant]]) -> float:
    """OpenSkill's probability that the sides draw: the nearer 1/len-ish, the fairer."""
    model = _model()
    teams = [[model.rating(mu=e.mu, sigma=e.sigma) for e in side] for side in sides]
    return float(model.predict_draw(teams))


def seat_order(mode: Mode, people: Sequence[Entrant]) -> tuple[Entrant, ...]:
    """The seats of a table of ``people``: in pairs, the fairest split (partners opposite);
    otherwise the order given."""
    if not mode.teams:
        return tuple(people)
    a, b, c, d = people
    splits = (((a, b), (c, d)), ((a, c), (b, d)), ((a, d), (b, c)))
    best = max(splits, key=draw_probability)
    (p, q), (r, s) = best
    return (p, r, q, s)


def plan(
    mode: Mode,
    waiting: Sequence[Candidate],
    now: float,
    deadline_s: float,
    steps: Sequence[tuple[float, float]] = WINDOWS,
) -> list[Group]:
    """The tables to make now from ``waiting`` (oldest first), each ticket in one at most."""
    pool = sorted(waiting, key=lambda c: (c.enqueued_at, c.ticket_id))
    free = {c.ticket_id: c for c in pool}
    widths = {c.ticket_id: window(now - c.enqueued_at, steps) for c in pool}
    groups: list[Group] = []
    need = mode.players
    for anchor in pool:
        if anchor.ticket_id not in free:
            continue
        r0 = anchor.entrant.rating
        near = sorted(
            (
                c
                for c in free.values()
                if c.ticket_id != anchor.ticket_id
                and abs(c.entrant.rating - r0) <= min(widths[anchor.ticket_id], widths[c.ticket_id])
            ),
            key=lambda c: (abs(c.entrant.rating - r0), c.enqueued_at, c.ticket_id),
        )
        chosen = [anchor, *near[: need - 1]]
        if len(chosen) < need and now - anchor.enqueued_at < deadline_s:
            continue
        people = [c.entrant for c in chosen]
        if len(people) < need:
            level = nearest_level(statistics.fmean(e.rating for e in people))
            people += [bot_entrant(level) for _ in range(need - len(people))]
        for c in chosen:
            del free[c.ticket_id]
        groups.append(Group(seat_order(mode, people), tuple(c.ticket_id for c in chosen)))
    return groups
