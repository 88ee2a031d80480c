"""Seat tokens: random, shown once to their holder, stored only as SHA-256 hashes.

A caller authenticates with ``authorization: Bearer <token>`` metadata. Without it the caller
is a spectator. A seat token opens its own seat at its own table and nothing else; player
tokens (made the same way) and JWTs name a player (:mod:`service.identity`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from .errors import Unauthenticated
from .reasons import Reason

TOKEN_BYTES = 24
_MAX_HEADER = 4096
"""The longest bearer credential taken: room for a JWT signed with a 4096-bit RSA key and a
few claims (seat and player tokens are 32 characters)."""


def new_token() -> tuple[str, str]:
    """A fresh (token, hash) pair."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    return token, hash_token(token)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The bearer token of the call's metadata; None when there is none (a spectator).

    A present but malformed ``authorization`` header is UNAUTHENTICATED.
    """
    for key, value in metadata or ():
        if key.lower() != "authorization":
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        scheme, _, token = text.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > _MAX_HEADER:
            raise Unauthenticated(
                "the authorization header must be 'Bearer <seat token>'",
                reason=Reason.MALFORMED_AUTHORIZATION,
            )
        return token
    return None
