"""Players of ranked play: who they are (:mod:`.store`) and how they are rated (:mod:`.ratings`)."""

from .ratings import MODES, Rated, RatingChange, bot_rated, display, provisional, rate_match
from .store import LeaderboardEntry, MemoryPlayerStore, Player, PlayerStore, Standing

__all__ = [
    "MODES",
    "LeaderboardEntry",
    "MemoryPlayerStore",
    "Player",
    "PlayerStore",
    "Rated",
    "RatingChange",
    "Standing",
    "bot_rated",
    "display",
    "provisional",
    "rate_match",
]
