"""Typed errors: every failed call is raised as one of these, with the server's details.

The server sends its error details as a ``google.rpc.Status`` in the
``grpc-status-details-bin`` trailer (see the comment of ``TuteService``): an ``ErrorInfo``
with the reason code (``MUST_FOLLOW_SUIT``, ``TABLE_FULL``, ``STALE_VERSION`` ...), a
``BadRequest`` naming the malformed field, and a ``RetryInfo`` when a limit says when to try
again. :func:`error_from_rpc` reads them into the exception's attributes.

==========================  ====================  =====================================
status                      exception             typical reasons
==========================  ====================  =====================================
INVALID_ARGUMENT            InvalidArgument       ``field`` names the field
NOT_FOUND                   NotFound              TABLE_NOT_FOUND, INVITE_NOT_FOUND
FAILED_PRECONDITION         FailedPrecondition    TABLE_FULL, SEAT_TAKEN, MATCH_OVER ...
 (SubmitAction)             IllegalMove           MUST_FOLLOW_SUIT, NOT_YOUR_TURN ...
ABORTED                     Aborted               CONTENTION
 (reason STALE_VERSION)     StaleVersion          ``current_version``
UNAUTHENTICATED             Unauthenticated       TOKEN_REQUIRED
PERMISSION_DENIED           PermissionDenied      NOT_SEATED, PRIVATE_TABLE
 (reason SEAT_LOST)         SeatLost
RESOURCE_EXHAUSTED          ResourceExhausted     TOO_MANY_TABLES, TOO_MANY_STREAMS ...
 (reason RATE_LIMITED)      RateLimited           ``retry_after`` (seconds)
UNAVAILABLE                 Unavailable           SHUTTING_DOWN, STORE_UNAVAILABLE
DEADLINE_EXCEEDED           DeadlineExceeded
anything else               TuteError
==========================  ====================  =====================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

__all__ = [
    "Aborted",
    "DeadlineExceeded",
    "FailedPrecondition",
    "IllegalMove",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "ResourceExhausted",
    "SeatLost",
    "StaleVersion",
    "TuteError",
    "Unauthenticated",
    "Unavailable",
    "error_from_rpc",
]


class TuteError(Exception):
    """A call the server (or the connection) refused.

    ``code``: the gRPC status code; ``message``: the server's text (safe to show: it never
    names a hidden card); ``reason``: the ``ErrorInfo`` reason code (``""`` when none);
    ``fields``: the fields a ``BadRequest`` names (``field`` is the first, ``""`` when none);
    ``metadata``: the ``ErrorInfo`` metadata; ``retry_after``: seconds from a ``RetryInfo``
    (``None`` when none); ``method``: the RPC that failed (``"SubmitAction"``).
    """

    default_code: ClassVar[grpc.StatusCode] = grpc.StatusCode.UNKNOWN

    def __init__(
        self,
        message: str = "",
        *,
        code: grpc.StatusCode | None = None,
        reason: str = "",
        fields: Sequence[str] = (),
        metadata: Mapping[str, str] | None = None,
        retry_after: float | None = None,
        method: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.reason = reason
        self.fields = tuple(fields)
        self.metadata = dict(metadata or {})
        self.retry_after = retry_after
        self.method = method

    @property
    def field(self) -> str:
        """The first field a ``BadRequest`` detail names; ``""`` when there is none."""
        return self.fields[0] if self.fields else ""

    def __str__(self) -> str:
        what = self.reason or self.code.name
        where = f" [{self.field}]" if self.fields else ""
        return f"{what}{where}: {self.message}" if self.message else f"{what}{where}"

    def __repr__(self) -> str:
        parts = [f"reason={self.reason!r}"] if self.reason else []
        if self.fields:
            parts.append(f"field={self.field!r}")
        parts.append(f"message={self.message!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


class InvalidArgument(TuteError):
    """A malformed request; ``field`` names the offending field (``rules.preset``)."""

    default_code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(TuteError):
    """No such table (``TABLE_NOT_FOUND``) or invite code (``INVITE_NOT_FOUND``)."""

    default_code = grpc.StatusCode.NOT_FOUND


class FailedPrecondition(TuteError):
    """Well formed but not possible now: ``TABLE_FULL``, ``SEAT_TAKEN``, ``MATCH_OVER`` ..."""

    default_code = grpc.StatusCode.FAILED_PRECONDITION


class IllegalMove(FailedPrecondition):
    """SubmitAction refused by the rules: ``reason`` is the rule (``MUST_FOLLOW_SUIT``,
    ``MUST_BEAT``, ``MUST_TRUMP``, ``MUST_OVERTRUMP``, ``NOT_YOUR_TURN``, ``CARD_NOT_HELD``,
    ``CANTE_NOT_ALLOWED``, ``TUTE_NOT_ALLOWED``, ``EXCHANGE_NOT_ALLOWED``, ``MATCH_OVER``,
    ``MATCH_NOT_STARTED``)."""


class Aborted(TuteError):
    """The table changed under the request (``CONTENTION``: try again)."""

    default_code = grpc.StatusCode.ABORTED


class StaleVersion(Aborted):
    """``expected_version`` did not match: someone acted first. Refresh and decide again."""

    @property
    def current_version(self) -> int | None:
        """The table's version when the request was refused (``None`` if not sent)."""
        value = self.metadata.get("current_version", "")
        return int(value) if value.lstrip("-").isdigit() else None


class Unauthenticated(TuteError):
    """The call needs a seat (or owner) token and none, or a malformed one, was sent."""

    default_code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(TuteError):
    """The token sent does not open a seat at this table (``NOT_SEATED``), or the table is
    private (``PRIVATE_TABLE``)."""

    default_code = grpc.StatusCode.PERMISSION_DENIED


class SeatLost(PermissionDenied):
    """A stream ended because its token no longer opens its seat (the player left, forfeited
    or was replaced)."""


class ResourceExhausted(TuteError):
    """A server limit was reached (``TOO_MANY_TABLES``, ``TOO_MANY_STREAMS``,
    ``TOO_MANY_BOTS``); try later."""

    default_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class RateLimited(ResourceExhausted):
    """Too many calls from this caller; ``retry_after`` says when to try again."""


class Unavailable(TuteError):
    """The server is shutting down, overloaded, or cannot be reached; retry (elsewhere)."""

    default_code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(TuteError):
    """The call took longer than its timeout."""

    default_code = grpc.StatusCode.DEADLINE_EXCEEDED


_BY_CODE: dict[grpc.StatusCode, type[TuteError]] = {
    cls.default_code: cls
    for cls in (
        InvalidArgument,
        NotFound,
        FailedPrecondition,
        Aborted,
        Unauthenticated,
        PermissionDenied,
        ResourceExhausted,
        Unavailable,
        DeadlineExceeded,
    )
}
_BY_REASON: dict[tuple[grpc.StatusCode, str], type[TuteError]] = {
    (grpc.StatusCode.ABORTED, "STALE_VERSION"): StaleVersion,
    (grpc.StatusCode.PERMISSION_DENIED, "SEAT_LOST"): SeatLost,
    (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED"): RateLimited,
}


def error_from_rpc(exc: grpc.aio.AioRpcError, method: str = "") -> TuteError:
    """The typed error of a failed call, with the details of its status trailer.

    A FAILED_PRECONDITION answer to ``SubmitAction`` is an :class:`IllegalMove`.
    """
    code = exc.code()
    message = exc.details() or ""
    reason = ""
    fields: list[str] = []
    metadata: dict[str, str] = {}
    retry_after: float | None = None
    try:
        status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    except (ValueError, AttributeError):  # a trailer that does not match the call's status
        status = None
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
            metadata.update(info.metadata)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            retry_after = retry.retry_delay.ToTimedelta().total_seconds()
    cls = _BY_REASON.get((code, reason)) or _BY_CODE.get(code, TuteError)
    if cls is FailedPrecondition and method == "SubmitAction":
        cls = IllegalMove
    return cls(
        message,
        code=code,
        reason=reason,
        fields=fields,
        metadata=metadata,
        retry_after=retry_after,
        method=method,
    )
