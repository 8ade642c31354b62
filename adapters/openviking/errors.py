"""OpenViking error codes as typed exceptions, each rooted in the adapter error tree.

    adapters.errors.BackendError
     └── OpenVikingError                (code, http_status, details; never the key)
          ├── OVInvalidArgument          INVALID_ARGUMENT, INVALID_URI, UNSUPPORTED_URI/MODE,
          │                              INVALID_FILTER               -> InvalidRequest
          ├── OVNotFound                 NOT_FOUND                      -> BackendNotFound
          ├── OVConflict                 ALREADY_EXISTS, CONFLICT, ABORTED, WRITE_CONFLICT -> BackendConflict
          ├── OVFailedPrecondition       FAILED_PRECONDITION, SESSION_EXPIRED -> InvalidRequest
          ├── OVUnauthenticated          UNAUTHENTICATED (bad/revoked key) -> PermissionDenied
          ├── OVPermissionDenied         PERMISSION_DENIED              -> PermissionDenied
          ├── OVRateLimited              RESOURCE_EXHAUSTED / HTTP 429  -> BackendRateLimited
          ├── OVNotReady                 UNAVAILABLE, NOT_INITIALIZED, NO_VECTOR_DB,
          │                              MODEL_UNAVAILABLE / HTTP 503   -> RetryLater
          ├── OVServerError              INTERNAL, UNKNOWN, *_FAILED, DEADLINE_EXCEEDED, 5xx -> BackendUnavailable
          ├── OVTransportError           read timeouts, resets          -> BackendUnavailable
          │    └── OVNotSent             connection never established   -> NotSent (any call may retry)
          └── OVProtocolError            not an OpenViking envelope     -> BackendUnavailable

Messages carry the server's code and message with any credential scrubbed out.
"""

from __future__ import annotations

from typing import Any, Mapping

from adapters.errors import BackendError, BackendConflict, InvalidRequest, BackendNotFound, NotSent, PermissionDenied, BackendRateLimited, RetryLater, BackendUnavailable
from adapters.shared.http import status_category

__all__ = [
    "OpenVikingError", "OVInvalidArgument", "OVNotFound", "OVConflict", "OVFailedPrecondition",
    "OVUnauthenticated", "OVPermissionDenied", "OVRateLimited", "OVNotReady", "OVServerError",
    "OVTransportError", "OVNotSent", "OVProtocolError", "error_for",
]


class OpenVikingError(BackendError):
    code: str = "UNKNOWN"

    def __init__(self, message: str, *, code: str | None = None, http_status: int | None = None,
                 details: Mapping[str, Any] | None = None, backend: str | None = "openviking", scope: Any = None) -> None:
        if code:
            self.code = code
        self.http_status = http_status
        self.details = dict(details or {})
        status = f" HTTP {http_status}" if http_status else ""
        super().__init__(f"{self.code}{status}: {message}", backend=backend, scope=scope)


class OVInvalidArgument(OpenVikingError, InvalidRequest):
    code = "INVALID_ARGUMENT"


class OVNotFound(OpenVikingError, BackendNotFound):
    code = "NOT_FOUND"


class OVConflict(OpenVikingError, BackendConflict):
    code = "CONFLICT"


class OVFailedPrecondition(OpenVikingError, InvalidRequest):
    code = "FAILED_PRECONDITION"


class OVUnauthenticated(OpenVikingError, PermissionDenied):
    code = "UNAUTHENTICATED"


class OVPermissionDenied(OpenVikingError, PermissionDenied):
    code = "PERMISSION_DENIED"


class OVRateLimited(OpenVikingError, BackendRateLimited):
    code = "RESOURCE_EXHAUSTED"

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        OpenVikingError.__init__(self, message, **kw)  # runs BackendUnavailable.__init__ via the MRO
        self.retry_after = retry_after


class OVNotReady(OpenVikingError, RetryLater):
    code = "UNAVAILABLE"


class OVServerError(OpenVikingError, BackendUnavailable):
    code = "INTERNAL"


class OVTransportError(OpenVikingError, BackendUnavailable):
    code = "TRANSPORT"


class OVNotSent(OVTransportError, NotSent):
    """The request never reached the server (connect refused, pool timeout): nothing was applied."""

    code = "TRANSPORT"


class OVProtocolError(OpenVikingError, BackendUnavailable):
    code = "PROTOCOL"


_BY_CODE: dict[str, type[OpenVikingError]] = {
    "INVALID_ARGUMENT": OVInvalidArgument, "INVALID_URI": OVInvalidArgument, "UNSUPPORTED_URI": OVInvalidArgument,
    "UNSUPPORTED_MODE": OVInvalidArgument, "INVALID_FILTER": OVInvalidArgument, "GIT_AUTH_FAILED": OVInvalidArgument,
    "SKILL_INVALID": OVInvalidArgument, "SKILL_CAPABILITY_UNAVAILABLE": OVInvalidArgument, "UNIMPLEMENTED": OVInvalidArgument,
    "NOT_FOUND": OVNotFound,
    "ALREADY_EXISTS": OVConflict, "CONFLICT": OVConflict, "ABORTED": OVConflict, "WRITE_CONFLICT": OVConflict,
    "FAILED_PRECONDITION": OVFailedPrecondition, "SESSION_EXPIRED": OVFailedPrecondition,
    "UNAUTHENTICATED": OVUnauthenticated,
    "PERMISSION_DENIED": OVPermissionDenied,
    "RESOURCE_EXHAUSTED": OVRateLimited,
    "UNAVAILABLE": OVNotReady, "NOT_INITIALIZED": OVNotReady, "NO_VECTOR_DB": OVNotReady,
    "MODEL_UNAVAILABLE": OVNotReady, "BOT_RESTARTED": OVNotReady,
}
#: OpenViking's own meaning of a few statuses (its API answers them with an envelope code too).
_BY_STATUS: dict[int, type[OpenVikingError]] = {401: OVUnauthenticated, 410: OVFailedPrecondition, 412: OVFailedPrecondition, 503: OVNotReady}
#: The shared HTTP status categories (`adapters.shared.http.status_category`) as OpenViking leaves.
_LEAF_OF_CATEGORY: dict[type[BackendError], type[OpenVikingError]] = {
    InvalidRequest: OVInvalidArgument, PermissionDenied: OVPermissionDenied, BackendNotFound: OVNotFound,
    BackendConflict: OVConflict, BackendRateLimited: OVRateLimited, BackendUnavailable: OVServerError,
}


def error_for(code: str | None, http_status: int | None) -> type[OpenVikingError]:
    """The exception class for a server error code (falling back on the HTTP status)."""
    if code and code in _BY_CODE:
        return _BY_CODE[code]
    if http_status in _BY_STATUS:
        return _BY_STATUS[http_status]  # type: ignore[index]
    category = status_category(http_status) if http_status is not None else None
    return _LEAF_OF_CATEGORY.get(category, OVServerError) if category is not None else OVServerError
