"""Who may do what at a table: table ids, seat tokens and the owner token.

A seat token opens the seat whose stored hash it has (:meth:`TableRecord.seat_of_token_hash`);
the owner token (CreateTable's) may add bots. Only hashes are stored and compared. A seat bound
to a player is also opened by any credential of that player: the caller passes the
``player_id`` its credential resolved to (:meth:`service.identity.Identity.seat_player`; ''
when it resolved to none), and a seat whose player still holds it is opened by it.
"""

from __future__ import annotations

import hmac
import re

import structlog

from ..auth import hash_token
from ..errors import InvalidArgument, PermissionDenied, Unauthenticated
from ..reasons import Reason
from .model import HUMAN, TableRecord

TABLE_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a table id (and a page token's) looks like."""


def check_table_id(table_id: str, field: str = "table_id") -> str:
    """``table_id`` if it is one; INVALID_ARGUMENT naming ``field`` otherwise."""
    if not table_id:
        raise InvalidArgument(f"{field} is required", field=field)
    if not TABLE_ID_RE.match(table_id):
        raise InvalidArgument(f"{field} is not a table id", field=field)
    return table_id


def seat_of_player(rec: TableRecord, player_id: str) -> int | None:
    """The seat bound to ``player_id`` that its player still holds (its token still opens
    it: the player neither left nor forfeited), or None."""
    if not player_id:
        return None
    for i, s in enumerate(rec.seats):
        if s.player_id == player_id and s.token_hash and s.occupant == HUMAN:
            return i
    return None


def opened_seat(rec: TableRecord, token: str | None, player_id: str = "") -> int | None:
    """The seat ``token`` opens by its hash, else the one bound to ``player_id``; None."""
    if token is None:
        return None
    seat = rec.seat_of_token_hash(hash_token(token))
    return seat if seat is not None else seat_of_player(rec, player_id)


def seat_of(rec: TableRecord, token: str | None, player_id: str = "") -> int | None:
    """The caller's seat: None for a spectator; PERMISSION_DENIED NOT_SEATED for a token
    that opens no seat here (another table's, or one whose player left or forfeited)."""
    if token is None:
        return None
    seat = opened_seat(rec, token, player_id)
    if seat is None:
        raise PermissionDenied(
            "this seat token does not open a seat at this table (another table's, or its "
            "player left or forfeited)",
            reason=Reason.NOT_SEATED,
        )
    structlog.contextvars.bind_contextvars(seat=seat)
    return seat


def require_seat(rec: TableRecord, token: str | None, player_id: str = "") -> int:
    """The caller's seat; UNAUTHENTICATED without a token, as :func:`seat_of` otherwise."""
    if token is None:
        raise Unauthenticated(
            "this call needs the seat token as 'authorization: Bearer <token>' metadata",
            reason=Reason.TOKEN_REQUIRED,
        )
    seat = seat_of(rec, token, player_id)
    assert seat is not None
    return seat


def require_owner_or_seat(rec: TableRecord, token: str | None, player_id: str = "") -> None:
    """AddBot's rule: the table's owner token, or a seat token of a seat at this table."""
    if token is None:
        raise Unauthenticated(
            "adding a bot needs the table's owner token or a seat token of this table as "
            "'authorization: Bearer <token>' metadata",
            reason=Reason.TOKEN_REQUIRED,
        )
    token_hash = hash_token(token)
    owner = bool(rec.owner_token_hash) and hmac.compare_digest(token_hash, rec.owner_token_hash)
    if (
        not owner
        and rec.seat_of_token_hash(token_hash) is None
        and seat_of_player(rec, player_id) is None
    ):
        raise PermissionDenied(
            "this token is neither the owner token nor a seat token of this table",
            reason=Reason.NOT_SEATED,
        )


def seat_lost(seat: int | None) -> PermissionDenied:
    """The error that ends a seated stream whose occupancy ended."""
    return PermissionDenied(
        f"this seat token no longer opens seat {seat}: its player left or forfeited; watch "
        "without the token (as a spectator), with resume_after, to follow the table",
        reason=Reason.SEAT_LOST,
    )
