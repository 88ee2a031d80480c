"""Errors of the service, each with its gRPC status code; the interceptor turns them into
statuses with ``google.rpc`` details (see :mod:`service.interceptor`). The engine's errors
become service errors through one table, :data:`ENGINE_ERRORS` (:func:`from_engine_error`).

Every error has a reason of the registry (:class:`service.reasons.Reason`), sent as the
``ErrorInfo`` reason. Messages never contain a hidden card, a seat token or a stored secret.
"""

from __future__ import annotations

import grpc

import engine

from .reasons import Reason, from_engine


class ServiceError(Exception):
    """An error with a gRPC code, a message, a reason (ErrorInfo) and optionally a field."""

    code = grpc.StatusCode.UNKNOWN
    retry_after_s: float | None = None
    """When set: the caller may try again after this many seconds (google.rpc.RetryInfo)."""
    engine_reason: str = ""
    """The engine's own reason code, for an error the engine raised ('' otherwise)."""

    def __init__(
        self,
        message: str,
        *,
        reason: Reason,
        field: str = "",
        metadata: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.field = field
        self.metadata = metadata or {}


class InvalidArgument(ServiceError):
    """A malformed request; ``field`` names the offending field (google.rpc.BadRequest). The
    reason is ``INVALID_ARGUMENT`` unless a more precise one is given."""

    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(
        self,
        message: str,
        *,
        field: str = "",
        reason: Reason = Reason.INVALID_ARGUMENT,
        metadata: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message, reason=reason, field=field, metadata=metadata)


class NotFound(ServiceError):
    """The table (or invite code) the request names does not exist (or no longer does)."""

    code = grpc.StatusCode.NOT_FOUND


class FailedPrecondition(ServiceError):
    """The request is well formed but not possible now (illegal move, table full, ...)."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(ServiceError):
    """A compare-and-set lost: the table changed since ``expected_version``."""

    code = grpc.StatusCode.ABORTED


class Unauthenticated(ServiceError):
    """The call needs a token and sent none."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    """The token sent does not give the right to do this here (another table's, a lost seat)."""

    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(ServiceError):
    """A bound of the server is reached (tables, bots, streams, a rate): try later or close one."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(ServiceError):
    """The server cannot answer now (shutting down, store unreachable, a stream behind): retry
    or resume, on this replica or another."""

    code = grpc.StatusCode.UNAVAILABLE


class RateLimited(ResourceExhausted):
    """A per-caller limit (``limit`` names it) refused the call: reason RATE_LIMITED, with a
    google.rpc.RetryInfo of ``retry_after_s``."""

    def __init__(self, message: str, *, limit: str, retry_after_s: float) -> None:
        super().__init__(message, reason=Reason.RATE_LIMITED, metadata={"limit": limit})
        self.retry_after_s = retry_after_s


class Internal(ServiceError):
    """An unexpected error, answered without its text (the interceptor logs it)."""

    code = grpc.StatusCode.INTERNAL


ENGINE_ERRORS: dict[type[engine.TuteError], type[ServiceError]] = {
    engine.IllegalAction: FailedPrecondition,
    engine.InvalidInput: InvalidArgument,
    engine.InvalidOption: InvalidArgument,
}
"""Each engine error's service error: an illegal action is a well-formed request that is not
possible now; bad input and an option outside its values are malformed requests."""


def from_engine_error(exc: engine.TuteError, *, field: str = "") -> ServiceError:
    """The service error an engine error is sent as (:data:`ENGINE_ERRORS`), with the engine's
    reason upper-cased (``LookupError`` for a reason outside the registry). ``field`` names the
    request field a malformed value came in (INVALID_ARGUMENT only: an illegal action is not a
    malformed field)."""
    kind = next(
        (err for cls, err in ENGINE_ERRORS.items() if isinstance(exc, cls)), InvalidArgument
    )
    reason = from_engine(exc.reason)
    err: ServiceError
    if kind is InvalidArgument:
        err = InvalidArgument(exc.message, field=field, reason=reason)
    else:
        err = kind(exc.message, reason=reason)
    err.engine_reason = exc.reason
    return err
