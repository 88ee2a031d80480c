"""Players and their ratings behind one small interface (:class:`PlayerStore`).

:class:`MemoryPlayerStore` keeps them in the process (one replica, tests). A player is an id,
a display name and, for a bot, its level. Guests are found by the hash of their player token
(the token itself is never kept); players of an outside login by their JWT's (issuer,
subject). Ranked results are recorded once per table id: a replica that retries the write
of a match's end changes nothing the second time. A result computed from ratings that are not
the players' ratings any more (another match of theirs was recorded meanwhile) is refused
(:class:`StaleRating`), so that no match's change is overwritten by another's.

A player's current ranked table is recorded when the matchmaker seats it (before the match
starts) and cleared when that table's result is recorded; with its ranked cooldown it is the
player's :class:`RankedHold`, what FindMatch reads (one read) to refuse a player still playing
a ranked match or waiting out a cooldown.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Sequence
from typing import Protocol

from .ratings import MODES, MU, SIGMA, RatingChange, display, provisional


class StaleRating(Exception):
    """A ranked result's rating before is not the player's rating now: nothing was recorded;
    compute the changes again from the ratings as they are."""


def check_before(c: RatingChange, mu: float, sigma: float) -> None:
    """StaleRating unless the change starts from the rating (mu, sigma) the store has."""
    if (c.mu_before, c.sigma_before) != (mu, sigma):
        raise StaleRating(f"{c.player_id}: the {c.mode} rating changed since it was read")


@dataclasses.dataclass(frozen=True, slots=True)
class Player:
    """A player: an id, the name shown, and a bot's level (None for a person)."""

    player_id: str
    name: str
    bot_level: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Standing:
    """A player's rating in one mode and its ranked record there."""

    mu: float = MU
    sigma: float = SIGMA
    games: int = 0
    wins: int = 0

    @property
    def display(self) -> float:
        return display(self.mu, self.sigma)

    @property
    def provisional(self) -> bool:
        return provisional(self.sigma)


@dataclasses.dataclass(frozen=True, slots=True)
class LeaderboardEntry:
    """One row of a mode's leaderboard, best display rating first."""

    player: Player
    standing: Standing


@dataclasses.dataclass(frozen=True, slots=True)
class RankedHold:
    """What may keep a player out of the ranked queue: until when its ranked cooldown lasts
    (server clock, seconds; 0: none) and the ranked table it was last seated at and whose
    result is not recorded yet ('' for none; the table may be finished or gone since)."""

    cooldown_until: float = 0.0
    table_id: str = ""


class PlayerStore(Protocol):
    """Players, their ratings per mode, ranked results and cooldowns."""

    async def start(self) -> None:
        """Connect and apply the migrations (before any other call)."""
        ...

    async def close(self) -> None: ...

    async def create_guest(self, name: str, token_hash: str) -> Player:
        """A new guest player whose token hashes to ``token_hash``."""
        ...

    async def get(self, player_id: str) -> Player | None:
        """The player of this id, or None."""
        ...

    async def by_token_hash(self, token_hash: str) -> Player | None:
        """The guest whose player token hashes to ``token_hash``, or None."""
        ...

    async def by_subject(self, issuer: str, subject: str, name: str) -> Player:
        """The player of an outside login's (issuer, subject), created on first sight."""
        ...

    async def standings(self, player_id: str) -> dict[str, Standing]:
        """The player's standing in every mode (a new player's where it never played)."""
        ...

    async def record_ranked(
        self,
        table_id: str,
        changes: Sequence[RatingChange],
        *,
        cooldowns: dict[str, float] | None = None,
    ) -> bool:
        """Apply one ranked match's rating changes and set its leavers' cooldowns (player
        id -> until, seconds on the server clock), and clear the current ranked table of the
        players whose current table this is (all its players, the unchanged ones too): True
        when applied now, False when this table's result was recorded before (nothing is
        applied twice). :class:`StaleRating` (nothing applied) when a change's rating before
        is not the player's rating now."""
        ...

    async def leaderboard(
        self, mode: str, *, after: tuple[float, str] | None = None, limit: int = 50
    ) -> list[LeaderboardEntry]:
        """The mode's players who played, best display rating first (ties by id); ``after``
        = the (display, player id) of the last row of the previous page. Bots never."""
        ...

    async def cooldown_until(self, player_id: str) -> float:
        """Until when (server clock, seconds) the player may not queue ranked; 0: free."""
        ...

    async def seat_ranked(self, table_id: str, player_ids: Sequence[str]) -> None:
        """Record ``table_id`` as the current ranked table of each of these players (ids the
        store does not know, such as bots', are skipped). Writing it again changes nothing."""
        ...

    async def ranked_hold(self, player_id: str) -> RankedHold:
        """The player's cooldown and current ranked table, in one read (an unknown id: none)."""
        ...


class MemoryPlayerStore:
    """A :class:`PlayerStore` in the process's memory."""

    def __init__(self) -> None:
        self._players: dict[str, Player] = {}
        self._by_token: dict[str, str] = {}
        self._by_subject: dict[tuple[str, str], str] = {}
        self._standings: dict[tuple[str, str], Standing] = {}
        self._recorded: set[str] = set()
        self._cooldowns: dict[str, float] = {}
        self._ranked_table: dict[str, str] = {}
        """Player id -> its current ranked table."""

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    def _new_id(self) -> str:
        while True:
            pid = "p" + secrets.token_hex(8)
            if pid not in self._players:
                return pid

    async def create_guest(self, name: str, token_hash: str) -> Player:
        if token_hash in self._by_token:
            raise ValueError("this token hash belongs to a player already")
        player = Player(self._new_id(), name)
        self._players[player.player_id] = player
        self._by_token[token_hash] = player.player_id
        return player

    async def get(self, player_id: str) -> Player | None:
        return self._players.get(player_id)

    async def by_token_hash(self, token_hash: str) -> Player | None:
        pid = self._by_token.get(token_hash)
        return None if pid is None else self._players[pid]

    async def by_subject(self, issuer: str, subject: str, name: str) -> Player:
        pid = self._by_subject.get((issuer, subject))
        if pid is not None:
            return self._players[pid]
        player = Player(self._new_id(), name)
        self._players[player.player_id] = player
        self._by_subject[(issuer, subject)] = player.player_id
        return player

    async def standings(self, player_id: str) -> dict[str, Standing]:
        return {m: self._standings.get((player_id, m), Standing()) for m in MODES}

    async def record_ranked(
        self,
        table_id: str,
        changes: Sequence[RatingChange],
        *,
        cooldowns: dict[str, float] | None = None,
    ) -> bool:
        if table_id in self._recorded:
            return False
        for c in changes:
            if c.player_id not in self._players or self._players[c.player_id].bot_level:
                raise ValueError(f"{c.player_id}: not a player of this store")
            now = self._standings.get((c.player_id, c.mode), Standing())
            check_before(c, now.mu, now.sigma)
        self._recorded.add(table_id)
        for c in changes:
            old = self._standings.get((c.player_id, c.mode), Standing())
            self._standings[(c.player_id, c.mode)] = Standing(
                c.mu_after, c.sigma_after, old.games + 1, old.wins + int(c.won)
            )
        for pid, until in (cooldowns or {}).items():
            self._cooldowns[pid] = max(until, self._cooldowns.get(pid, 0.0))
        for pid in [p for p, t in self._ranked_table.items() if t == table_id]:
            del self._ranked_table[pid]
        return True

    async def leaderboard(
        self, mode: str, *, after: tuple[float, str] | None = None, limit: int = 50
    ) -> list[LeaderboardEntry]:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        rows = sorted(
            (
                (-s.display, pid, s)
                for (pid, m), s in self._standings.items()
                if m == mode and s.games > 0 and not self._players[pid].bot_level
            ),
        )
        if after is not None:
            rows = [r for r in rows if (r[0], r[1]) > (-after[0], after[1])]
        return [LeaderboardEntry(self._players[pid], s) for _, pid, s in rows[:limit]]

    async def cooldown_until(self, player_id: str) -> float:
        return self._cooldowns.get(player_id, 0.0)

    async def seat_ranked(self, table_id: str, player_ids: Sequence[str]) -> None:
        for pid in player_ids:
            if pid in self._players:
                self._ranked_table[pid] = table_id

    async def ranked_hold(self, player_id: str) -> RankedHold:
        return RankedHold(
            self._cooldowns.get(player_id, 0.0), self._ranked_table.get(player_id, "")
        )
