"""A ranked match's end, rated once: the rating changes written to the player store.

The commit that finishes a ranked table (normally, by a LeaveTable forfeit or by a disconnect
forfeit) leaves its rating due: the table is due now for the scheduler (:meth:`Committer.due_at
<service.tables.commit.Committer.due_at>`) and held in the store (it is not dropped with the
finished tables before the rating is written). The scheduler of whichever replica claims it
runs :func:`settle`: the changes are computed from the seats' players and bots, the mode and
the result, written with ``PlayerStore.record_ranked`` (idempotent by table id), and only then
is the table committed ``rated``. A replica that dies anywhere in between leaves the table
due: its claim lapses and another replica (or the same one restarted) writes it; a write done
twice applies once. Changes computed from a rating that another match of the same player
changed meanwhile are refused by the store and computed again, so no change is lost.

Who left (the match's forfeited seat) takes the loss and a cooldown of
``ranked_leave_cooldown_s`` from the match's end; the partner it abandoned gets no change; bots
never change; a seat whose player is not in the player store takes part as a new rating and
gets no change either. A casual table is never rated.
"""

from __future__ import annotations

import contextlib

import structlog

import engine

from ..matchmaking.entrants import MODES
from ..players import PlayerStore, Rated, RatingChange, StaleRating, bot_rated, rate_match
from ..players.ratings import MU, SIGMA
from . import changes
from .commit import Committer, Context, rating_due
from .model import BOT, HUMAN, TableRecord

log = structlog.get_logger("tute.ratings")

STALE_RETRIES = 8
"""Times the changes are computed again when a player's rating moved under the write (another
match of the player rated at that moment); past them the rating stays due."""


def mode_of(rec: TableRecord) -> str:
    """The ranked mode (ladder) of a ranked table: the mode of its preset and seats."""
    for mode in MODES.values():
        if mode.preset == rec.preset and mode.players == rec.rules.players:
            return mode.name
    for mode in MODES.values():
        if mode.players == rec.rules.players:
            return mode.name
    raise ValueError(f"no ranked mode for {rec.rules.players} players")


def ended_at(rec: TableRecord, now: float) -> float:
    """When the match ended: its start plus its last action's offset (the same on every
    replica), else ``now``."""
    fair = rec.fair
    if fair is None or not fair.actions:
        return now
    return fair.started_at + fair.actions[-1][2] / 1000


async def rated_seats(players: PlayerStore, rec: TableRecord, mode: str) -> list[Rated]:
    """Each seat as rated: a bot at its level's fixed rating, a player of the store at its
    standing in ``mode``, any other seat as a new rating that gets no change (marked as a
    bot of no level)."""
    seats = []
    for i, seat in enumerate(rec.seats):
        if seat.occupant == BOT:
            seats.append(bot_rated(seat.bot_level or "random"))
            continue
        pid = seat.player_id
        if seat.occupant == HUMAN and pid and await players.get(pid) is not None:
            standing = (await players.standings(pid))[mode]
            seats.append(Rated(pid, standing.mu, standing.sigma))
        else:
            seats.append(Rated(f"unrated:{i}", MU, SIGMA, bot_level=""))
    return seats


async def changes_of(
    players: PlayerStore, rec: TableRecord, mode: str
) -> tuple[list[RatingChange], str]:
    """The rating changes of the finished ranked match (players of the store only) and the
    player id of who left it ('' for none)."""
    state = rec.state
    assert state is not None
    seats = await rated_seats(players, rec, mode)
    sides = [[seats[s] for s in side_seats] for side_seats in engine.SIDE_SEATS[rec.rules.players]]
    leaver = ""
    if 0 <= rec.forfeited_seat < len(seats):
        leaver = seats[rec.forfeited_seat].player_id
    return rate_match(mode, sides, state.winners, [leaver] if leaver else ()), leaver


async def settle(ctx: Context, commits: Committer, rec: TableRecord) -> bool:
    """Write the rating of a finished ranked table whose rating is due, then mark it rated.
    True when this call applied the changes (False: written before, or not due). A failure of
    the player store is logged and leaves the rating due (the scheduler tries again)."""
    if not rating_due(rec):
        return False
    mode = mode_of(rec)
    try:
        for _ in range(STALE_RETRIES - 1):
            with contextlib.suppress(StaleRating):  # a player's rating moved: read it again
                return await _record(ctx, commits, rec, mode)
        return await _record(ctx, commits, rec, mode)
    except Exception as exc:  # the player store's own errors: the rating stays due
        log.warning("rating_not_written", table_id=rec.table_id, error=type(exc).__name__)
        return False


async def _record(ctx: Context, commits: Committer, rec: TableRecord, mode: str) -> bool:
    """Compute the changes from the ratings as they are now, record them, mark the table."""
    found, leaver = await changes_of(ctx.players, rec, mode)
    cooldowns = {}
    cooldown_s = ctx.settings.ranked_leave_cooldown_s
    if leaver and cooldown_s > 0 and any(c.player_id == leaver for c in found):
        cooldowns[leaver] = ended_at(rec, ctx.clock()) + cooldown_s
    applied = await ctx.players.record_ranked(rec.table_id, found, cooldowns=cooldowns)
    await commits.mutate(rec.table_id, _mark_rated)
    if applied:
        log.info(
            "match_rated",
            table_id=rec.table_id,
            mode=mode,
            players=len(found),
            left=bool(leaver),
        )
    return applied


def _mark_rated(rec: TableRecord) -> changes.Changed[None]:
    if rec.rated:
        return changes.unchanged(None)
    rec.rated = True
    return changes.Changed([], None)
