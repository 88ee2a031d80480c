"""Who the matchmaker seats: entrants (a player or a bot with a rating per mode), the ranked
modes, and where bots stand on the ratings' display scale (service/players/ratings.py).

The matchmaker needs little of a player: an id, a name, the token hash its seat is bound to,
and its rating in the mode (OpenSkill's ``mu`` and ``sigma``, and the display rating the
windows are measured on). :class:`PlayerDirectory` is that need. :class:`StoreDirectory`
serves it from the player store (the server's default): the credential is a player token or a
JWT (:mod:`service.identity`), the rating the player's standing in the mode.
:class:`GuestDirectory` serves it from the bearer token alone (every token is a player, rated
as new unless told otherwise): for tests and benchmarks that seat many players cheaply.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Final, Protocol

import engine
from engine.bots import RATINGS

from ..auth import hash_token, new_token
from ..errors import Unauthenticated
from ..identity import Identity, looks_like_jwt
from ..players.ratings import (
    BOT_DISPLAY_OFFSET,
    BOT_SIGMA,
    DISPLAY_NEW,
    DISPLAY_PER_ORDINAL,
    MU,
    SIGMA,
    display,
)
from ..reasons import Reason


@dataclasses.dataclass(frozen=True, slots=True)
class Mode:
    """A ranked mode: its ladder's name, the preset its tables are dealt from, and seats."""

    name: str
    preset: str
    players: int

    @property
    def teams(self) -> bool:
        """4p is played in pairs (seats 0 and 2 against 1 and 3)."""
        return self.players == 4

    def rules(self, turn_time_s: int) -> engine.Rules:
        """The mode's ranked rules, with the turn clock."""
        return engine.Rules.preset(self.preset, turn_time_s=turn_time_s)


MODES: Final[dict[str, Mode]] = {
    "2p": Mode("2p", "corriente-8", 2),
    "3p": Mode("3p", "tres", 3),
    "4p": Mode("4p", "parejas-manos", 4),
}
"""The ranked modes: 2p corriente-8, 3p tres, 4p parejas-manos (pairs, the hands system to 3
match points): each played to 3 match points."""


def bot_display(level: str) -> float:
    """The display rating of a bot level (see :data:`BOT_DISPLAY_OFFSET`)."""
    return RATINGS[level] + BOT_DISPLAY_OFFSET


def nearest_level(rating: float) -> str:
    """The bot level whose display rating is nearest ``rating`` (the weaker on a tie)."""
    best = ""
    for level in sorted(RATINGS, key=RATINGS.__getitem__):
        if not best or abs(bot_display(level) - rating) < abs(bot_display(best) - rating):
            best = level
    return best


@dataclasses.dataclass(frozen=True, slots=True)
class Entrant:
    """Someone to seat: a player (``bot_level`` '') or a bot, with its rating in the mode."""

    player_id: str
    name: str
    mu: float
    sigma: float
    token_hash: str = ""
    """A player's seat is bound to this token's hash (the token opens the seat)."""
    bot_level: str = ""

    @property
    def rating(self) -> float:
        """The display rating the windows are measured on."""
        return display(self.mu, self.sigma)

    def encode(self) -> bytes:
        return json.dumps(
            [self.player_id, self.name, self.mu, self.sigma, self.token_hash, self.bot_level],
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Entrant:
        pid, name, mu, sigma, token_hash, level = json.loads(raw)
        return cls(pid, name, float(mu), float(sigma), token_hash, level)


def bot_entrant(level: str) -> Entrant:
    """A bot of ``level``: a fixed rating whose display is :func:`bot_display`."""
    mu = (bot_display(level) - DISPLAY_NEW) / DISPLAY_PER_ORDINAL + 3 * BOT_SIGMA
    return Entrant(f"bot:{level}", f"Bot ({level})", mu, BOT_SIGMA, bot_level=level)


class PlayerDirectory(Protocol):
    """Where the matchmaker learns the calling player and its rating."""

    async def entrant(self, token: str | None, mode: str) -> Entrant:
        """The player of a bearer token, rated in ``mode``; UNAUTHENTICATED TOKEN_REQUIRED
        without a token."""
        ...


class StoreDirectory:
    """The players of the player store: a player token's guest or a JWT's player, rated by
    its standing in the mode. A guest's seat is bound to its player token's hash (the token
    opens it as a seat token does); a JWT's seat to a hash no token has, so that a JWT opens
    it only by verifying as the seat's player (an expired one does not)."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity

    async def entrant(self, token: str | None, mode: str) -> Entrant:
        player = await self.identity.player(token)
        assert token is not None
        standing = (await self.identity.players.standings(player.player_id))[mode]
        return Entrant(
            player.player_id,
            player.name,
            standing.mu,
            standing.sigma,
            token_hash=new_token()[1] if looks_like_jwt(token) else hash_token(token),
        )


class GuestDirectory:
    """For tests and benchmarks: every bearer token is a player: its id is derived from the
    token's hash (so the token itself is never stored), its name is "Player" and 4 characters
    of the id, and its rating is :meth:`set_rating`'s or a new player's. Its players are not
    the player store's: no ranked cooldown and no current ranked table holds them."""

    def __init__(self) -> None:
        self._ratings: dict[tuple[str, str], tuple[float, float]] = {}

    @staticmethod
    def player_id(token: str) -> str:
        return "g" + hash_token(token)[:23]

    def set_rating(self, token: str, mode: str, mu: float, sigma: float) -> None:
        if not (math.isfinite(mu) and math.isfinite(sigma) and sigma > 0):
            raise ValueError("a rating is a finite mu and a positive sigma")
        self._ratings[(self.player_id(token), mode)] = (mu, sigma)

    async def entrant(self, token: str | None, mode: str) -> Entrant:
        if token is None:
            raise Unauthenticated(
                "FindMatch and WatchTicket need a player token: send authorization: Bearer <token>",
                reason=Reason.TOKEN_REQUIRED,
            )
        pid = self.player_id(token)
        mu, sigma = self._ratings.get((pid, mode), (MU, SIGMA))
        return Entrant(pid, f"Player {pid[1:5]}", mu, sigma, token_hash=hash_token(token))
