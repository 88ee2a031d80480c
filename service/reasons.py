"""Every reason code the server puts in a ``google.rpc.ErrorInfo`` (domain ``tute.v1``).

:class:`Reason` is the one registry: every error the server sends carries exactly one of its
values, and :data:`STATUS` gives the gRPC status code it always travels with. The public
contract documents the same list as the enum ``tute.v1.ErrorReason`` (protos/tute/v1/
errors.proto), whose value names are these strings with the prefix ``ERROR_REASON_``
(tests/service/test_reasons.py checks that both lists, and the engine's codes, agree).

The engine's reason codes (:mod:`engine.errors`, snake case) travel upper-cased:
:func:`from_engine` maps them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

import grpc


class Reason(StrEnum):
    """An ``ErrorInfo.reason`` string; the value equals the name."""

    # -- INVALID_ARGUMENT ------------------------------------------------------------------
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    """A malformed request field; google.rpc.BadRequest names it."""
    INVALID_OPTION = "INVALID_OPTION"
    """A rules preset or option outside its values (the engine's ``invalid_option``)."""
    MALFORMED_REQUEST = "MALFORMED_REQUEST"
    """The request body does not parse as the method's request message."""
    UNKNOWN_ACTION = "UNKNOWN_ACTION"
    """Engine: an action number that is no action."""
    BAD_ACTION = "BAD_ACTION"
    """Engine: an action number without a text form."""
    BAD_ACTION_TEXT = "BAD_ACTION_TEXT"
    """Engine: text that is not an action."""
    BAD_CARD_TEXT = "BAD_CARD_TEXT"
    """Engine: text that is not a card, or a card listed twice."""
    BAD_SUIT_TEXT = "BAD_SUIT_TEXT"
    """Engine: text that is not a suit."""
    BAD_DECK = "BAD_DECK"
    """Engine: a given deck that is not the pack."""
    BAD_SEAT = "BAD_SEAT"
    """Engine: a seat number the table does not have."""
    BAD_STATE_BYTES = "BAD_STATE_BYTES"
    """Engine: encoded state bytes that do not decode."""

    # -- UNAUTHENTICATED -------------------------------------------------------------------
    TOKEN_REQUIRED = "TOKEN_REQUIRED"
    """The call needs a seat (or owner) token and none was sent."""
    MALFORMED_AUTHORIZATION = "MALFORMED_AUTHORIZATION"
    """The ``authorization`` metadata is not ``Bearer <token>``."""
    UNKNOWN_PLAYER = "UNKNOWN_PLAYER"
    """A player credential was needed and the token is neither a JWT nor a player token."""
    TOKEN_EXPIRED = "TOKEN_EXPIRED"
    """The JWT's ``exp`` has passed (beyond the leeway)."""
    TOKEN_NOT_YET_VALID = "TOKEN_NOT_YET_VALID"
    """The JWT's ``nbf`` or ``iat`` is in the future (beyond the leeway)."""
    WRONG_ISSUER = "WRONG_ISSUER"
    """The JWT's ``iss`` is not the expected issuer."""
    WRONG_AUDIENCE = "WRONG_AUDIENCE"
    """The JWT's ``aud`` does not name the expected audience."""
    INVALID_SIGNATURE = "INVALID_SIGNATURE"
    """The JWT's signature does not verify with the configured keys."""
    UNSUPPORTED_ALGORITHM = "UNSUPPORTED_ALGORITHM"
    """The JWT's ``alg`` is ``none`` or not one a configured key is for."""
    MALFORMED_TOKEN = "MALFORMED_TOKEN"
    """A JWT-shaped token that does not decode or lacks a required claim (or JWTs are off)."""

    # -- PERMISSION_DENIED -----------------------------------------------------------------
    NOT_SEATED = "NOT_SEATED"
    """The token sent does not open a seat at this table."""
    SEAT_LOST = "SEAT_LOST"
    """Ends a WatchTable stream whose token no longer opens its seat."""
    PRIVATE_TABLE = "PRIVATE_TABLE"
    """A private table joined by its id instead of its invite code."""
    NOT_YOUR_TICKET = "NOT_YOUR_TICKET"
    """WatchTicket with another player's token than the ticket's."""

    # -- NOT_FOUND -------------------------------------------------------------------------
    TABLE_NOT_FOUND = "TABLE_NOT_FOUND"
    """No table has this id."""
    INVITE_NOT_FOUND = "INVITE_NOT_FOUND"
    """No table has this invite code."""
    PLAYER_NOT_FOUND = "PLAYER_NOT_FOUND"
    """No player has this id."""
    TICKET_NOT_FOUND = "TICKET_NOT_FOUND"
    """No matchmaking ticket has this id (never issued, cancelled or expired)."""

    # -- FAILED_PRECONDITION: the table ----------------------------------------------------
    ALREADY_SEATED = "ALREADY_SEATED"
    """JoinTable with a token that already opens a seat at this table; FindMatch by a player
    seated at a ranked table whose match is not over (metadata ``table_id``)."""
    SEAT_TAKEN = "SEAT_TAKEN"
    """The seat asked for is occupied."""
    MATCH_NOT_STARTED = "MATCH_NOT_STARTED"
    """An action before the match started."""
    MATCH_ALREADY_STARTED = "MATCH_ALREADY_STARTED"
    """A seat asked for after the match started."""
    MATCH_OVER = "MATCH_OVER"
    """The match is over (also the engine's ``match_over``)."""
    MATCH_NOT_OVER = "MATCH_NOT_OVER"
    """GetMatchRecord before the table's match ended."""
    ALREADY_QUEUED = "ALREADY_QUEUED"
    """FindMatch while the player's ticket waits in another mode."""
    RANKED_COOLDOWN = "RANKED_COOLDOWN"
    """FindMatch by a player who left a ranked match, within its cooldown; metadata
    ``cooldown_s`` (and RetryInfo) says how long is left."""

    # -- FAILED_PRECONDITION: the engine's rules -------------------------------------------
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    CARD_NOT_HELD = "CARD_NOT_HELD"
    MUST_FOLLOW_SUIT = "MUST_FOLLOW_SUIT"
    MUST_BEAT = "MUST_BEAT"
    MUST_TRUMP = "MUST_TRUMP"
    MUST_OVERTRUMP = "MUST_OVERTRUMP"
    CANTE_NOT_ALLOWED = "CANTE_NOT_ALLOWED"
    TUTE_NOT_ALLOWED = "TUTE_NOT_ALLOWED"
    EXCHANGE_NOT_ALLOWED = "EXCHANGE_NOT_ALLOWED"

    # -- ABORTED ---------------------------------------------------------------------------
    STALE_VERSION = "STALE_VERSION"
    """``expected_version`` is not the table's version; metadata ``current_version``."""
    CONTENTION = "CONTENTION"
    """The table changed under every retry of the request."""

    # -- RESOURCE_EXHAUSTED ----------------------------------------------------------------
    TOO_MANY_TABLES = "TOO_MANY_TABLES"
    TOO_MANY_STREAMS = "TOO_MANY_STREAMS"
    TOO_MANY_BOTS = "TOO_MANY_BOTS"
    RATE_LIMITED = "RATE_LIMITED"
    """A per-caller token bucket is empty; a google.rpc.RetryInfo detail says when to retry."""

    # -- UNAVAILABLE -----------------------------------------------------------------------
    SHUTTING_DOWN = "SHUTTING_DOWN"
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    STREAM_BEHIND = "STREAM_BEHIND"
    """A WatchTable stream fell behind the live events; resume with resume_after."""

    # -- INTERNAL --------------------------------------------------------------------------
    INTERNAL = "INTERNAL"
    """An unexpected server error (logged; the message says nothing more)."""


_C = grpc.StatusCode
_BY_CODE: Final[dict[grpc.StatusCode, tuple[Reason, ...]]] = {
    _C.INVALID_ARGUMENT: (
        Reason.INVALID_ARGUMENT,
        Reason.INVALID_OPTION,
        Reason.MALFORMED_REQUEST,
        Reason.UNKNOWN_ACTION,
        Reason.BAD_ACTION,
        Reason.BAD_ACTION_TEXT,
        Reason.BAD_CARD_TEXT,
        Reason.BAD_SUIT_TEXT,
        Reason.BAD_DECK,
        Reason.BAD_SEAT,
        Reason.BAD_STATE_BYTES,
    ),
    _C.UNAUTHENTICATED: (
        Reason.TOKEN_REQUIRED,
        Reason.MALFORMED_AUTHORIZATION,
        Reason.UNKNOWN_PLAYER,
        Reason.TOKEN_EXPIRED,
        Reason.TOKEN_NOT_YET_VALID,
        Reason.WRONG_ISSUER,
        Reason.WRONG_AUDIENCE,
        Reason.INVALID_SIGNATURE,
        Reason.UNSUPPORTED_ALGORITHM,
        Reason.MALFORMED_TOKEN,
    ),
    _C.PERMISSION_DENIED: (
        Reason.NOT_SEATED,
        Reason.SEAT_LOST,
        Reason.PRIVATE_TABLE,
        Reason.NOT_YOUR_TICKET,
    ),
    _C.NOT_FOUND: (
        Reason.TABLE_NOT_FOUND,
        Reason.INVITE_NOT_FOUND,
        Reason.PLAYER_NOT_FOUND,
        Reason.TICKET_NOT_FOUND,
    ),
    _C.FAILED_PRECONDITION: (
        Reason.ALREADY_SEATED,
        Reason.SEAT_TAKEN,
        Reason.MATCH_NOT_STARTED,
        Reason.MATCH_ALREADY_STARTED,
        Reason.MATCH_OVER,
        Reason.MATCH_NOT_OVER,
        Reason.ALREADY_QUEUED,
        Reason.RANKED_COOLDOWN,
        Reason.NOT_YOUR_TURN,
        Reason.CARD_NOT_HELD,
        Reason.MUST_FOLLOW_SUIT,
        Reason.MUST_BEAT,
        Reason.MUST_TRUMP,
        Reason.MUST_OVERTRUMP,
        Reason.CANTE_NOT_ALLOWED,
        Reason.TUTE_NOT_ALLOWED,
        Reason.EXCHANGE_NOT_ALLOWED,
    ),
    _C.ABORTED: (Reason.STALE_VERSION, Reason.CONTENTION),
    _C.RESOURCE_EXHAUSTED: (
        Reason.TOO_MANY_TABLES,
        Reason.TOO_MANY_STREAMS,
        Reason.TOO_MANY_BOTS,
        Reason.RATE_LIMITED,
    ),
    _C.UNAVAILABLE: (Reason.SHUTTING_DOWN, Reason.STORE_UNAVAILABLE, Reason.STREAM_BEHIND),
    _C.INTERNAL: (Reason.INTERNAL,),
}

STATUS: Final[dict[Reason, grpc.StatusCode]] = {
    reason: code for code, reasons in _BY_CODE.items() for reason in reasons
}
"""The gRPC status code each reason always travels with."""


def from_engine(code: str) -> Reason:
    """The reason of an engine error's snake-case code; ``LookupError`` for a code the
    registry does not have (a test keeps the engine's codes and the registry equal)."""
    try:
        return Reason(code.upper())
    except ValueError:
        raise LookupError(f"engine reason code {code!r} is not registered") from None
