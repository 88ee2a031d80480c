"""tute's clients: the Python SDK (:class:`TuteClient`), the ``tute`` terminal command
(``tute play``, ``tute watch``, ``tute tables``, ``tute bot``) and the remote bot runner.

Clients talk to the server only over gRPC (the generated stubs of ``tute.v1``); the remote
bots also use the engine's bots (:mod:`engine.bots`) on their own view. See
:mod:`clients.sdk` for the SDK and its examples.
"""

from .errors import (
    Aborted,
    DeadlineExceeded,
    FailedPrecondition,
    IllegalMove,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RateLimited,
    ResourceExhausted,
    SeatLost,
    StaleVersion,
    TuteError,
    Unauthenticated,
    Unavailable,
)
from .sdk import Backoff, TuteClient, Update
from .table import Table

__all__ = [
    "Aborted",
    "Backoff",
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
    "Table",
    "TuteClient",
    "TuteError",
    "Unauthenticated",
    "Unavailable",
    "Update",
]
