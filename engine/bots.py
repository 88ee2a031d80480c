"""Bots: pure functions of a :class:`~engine.view.View` and a random generator.

A bot sees exactly what its seat may see (the view), never the hidden hands.

- ``random``: a uniformly random legal action.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .view import View

Bot = Callable[[View, random.Random], int]


def random_bot(v: View, rng: random.Random) -> int:
    """Any legal action, uniformly."""
    if not v.legal:
        raise ValueError("the bot's seat has no legal action now")
    return rng.choice(v.legal)


BOTS: dict[str, Bot] = {"random": random_bot}
"""Bot levels by name."""
