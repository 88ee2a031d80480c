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
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog

from ..auth import hash_token
from ..errors import InvalidArgument, PermissionDenied, Unauthenticated
from ..reasons import Reason
from .model import HUMAN, SeatInfo, TableRecord

T = TypeVar("T")

SeatPlayer = Callable[[TableRecord, str | None], Awaitable[str]]
"""The player id by which a token may open a player's seat at a table ('' for none):
:meth:`service.identity.Identity.seat_player`."""

TABLE_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a table id (and a page token's) looks like."""


def check_table_id(table_id: str, field: str = "table_id") -> str:
    """``table_id`` if it is one; INVALID_ARGUMENT naming ``field`` otherwise."""
    if not table_id:
        raise InvalidArgument(f"{field} is required", field=field)
    if not TABLE_ID_RE.match(table_id):
        raise InvalidArgument(f"{field} is not a table id", field=field)
    return table_id


def held_by_player(seat: SeatInfo) -> bool:
    """Whether a seat is bound to a player who still holds it (its token still opens it: the
    player neither left nor forfeited)."""
    return bool(seat.player_id and seat.token_hash and seat.occupant == HUMAN)


def seat_of_player(rec: TableRecord, player_id: str) -> int | None:
    """The seat bound to ``player_id`` that its player still holds, or None."""
    if not player_id:
        return None
    for i, s in enumerate(rec.seats):
        if s.player_id == player_id and held_by_player(s):
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


def still_seated(
    rec: TableRecord, opened: TableRecord, token: str | None, player_id: str, seat: int
) -> int:
    """``seat``, the seat ``token`` opened in ``opened``, if it still opens it in ``rec``: a
    change that lost a race runs again on the table as it is now, where the seat may have
    changed hands since (its player left and another sat there, or a bot took it over); the
    change must not then act for whoever holds it now. PERMISSION_DENIED (NOT_SEATED, or
    SEAT_LOST when the token opens another seat) otherwise."""
    if rec is not opened and require_seat(rec, token, player_id) != seat:
        raise seat_lost(seat)
    return seat


async def check_opening(
    check: Callable[[TableRecord, str | None, str], T],
    rec: TableRecord,
    token: str | None,
    seat_player: SeatPlayer | None,
) -> tuple[T, str]:
    """``check`` (:func:`seat_of`, :func:`require_seat`, :func:`require_owner_or_seat`) of a
    token at the table, and the player id it opened a seat by ('' when by the token's hash).
    The seat-token check runs first and alone: only a token that opens nothing by its hash is
    resolved as a player credential (``seat_player``), so a seat token's call costs no more
    than it would without player seats."""
    try:
        return check(rec, token, ""), ""
    except PermissionDenied:
        player_id = await seat_player(rec, token) if seat_player is not None else ""
        if not player_id:
            raise
        return check(rec, token, player_id), player_id
