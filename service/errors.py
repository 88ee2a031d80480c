"""Errors of the service, each with its gRPC status code; the interceptor turns them (and the
engine's errors) into statuses with ``google.rpc`` details (see :mod:`service.interceptor`).

Every error has a reason of the registry (:class:`service.reasons.Reason`), sent as the
``ErrorInfo`` reason. Messages never contain a hidden card, a seat token or a stored secret.
"""

from __future__ import annotations

import grpc

from .reasons import Reason


class ServiceError(Exception):
    """An error with a gRPC code, a message, a reason (ErrorInfo) and optionally a field."""

    code = grpc.StatusCode.UNKNOWN
    retry_after_s: float | None = None
    """When set: the caller may try again after this many seconds (google.rpc.RetryInfo)."""

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
    code = grpc.StatusCode.NOT_FOUND


class FailedPrecondition(ServiceError):
    """The request is well formed but not possible now (illegal move, table full, ...)."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(ServiceError):
    """A compare-and-set lost: the table changed since ``expected_version``."""

    code = grpc.StatusCode.ABORTED


class Unauthenticated(ServiceError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(ServiceError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(ServiceError):
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
