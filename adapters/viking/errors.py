"""Viking Memory's error codes, mapped onto the adapter error tree (`adapters.errors`).

    code      meaning                     raised as
    1000001   authentication failed       VikingPermissionDenied   (PermissionDenied)
    1000003   invalid parameters          VikingInvalidRequest     (InvalidRequest)
    1000005   collection does not exist   VikingCollectionMissing  (BackendMisconfigured + InvalidRequest)
    1000011   data not found              VikingNotFound           (BackendNotFound)
    1000019   bad filter                  VikingInvalidRequest     (InvalidRequest)
    1000023   index still initialising    VikingRetryLater         (RetryLater; NOT retried here)
    1000025   embedding error             VikingUnavailable        (BackendUnavailable; retried, bounded)
    1000028   internal error              VikingUnavailable        (BackendUnavailable; retried)
    1000029   rate limited                VikingRateLimited        (BackendRateLimited; retried w/ backoff)
    HTTP 429                              VikingRateLimited
    HTTP 5xx / timeout / reset            VikingUnavailable
    connection never established          VikingNotSent            (NotSent: any call may be retried)
    other non-zero code / 4xx             VikingInvalidRequest

Every error carries `code`, `http_status` and `request_id` (never request headers or bodies), and
its message is scrubbed of the client's secrets before it is built.
"""

from __future__ import annotations

from typing import Any

from adapters.errors import BackendError, BackendMisconfigured, BackendConflict, InvalidRequest, BackendNotFound, NotSent, PermissionDenied, BackendRateLimited, RetryLater, BackendUnavailable
from adapters.shared.http import status_category

__all__ = [
    "VikingError",
    "VikingPermissionDenied",
    "VikingInvalidRequest",
    "VikingCollectionMissing",
    "VikingNotFound",
    "VikingRetryLater",
    "VikingUnavailable",
    "VikingRateLimited",
    "VikingNotSent",
    "error_for",
    "CODE_AUTH",
    "CODE_INVALID",
    "CODE_NO_COLLECTION",
    "CODE_NOT_FOUND",
    "CODE_BAD_FILTER",
    "CODE_INDEX_INIT",
    "CODE_EMBEDDING",
    "CODE_INTERNAL",
    "CODE_RATE_LIMIT",
]

CODE_AUTH = 1000001
CODE_INVALID = 1000003
CODE_NO_COLLECTION = 1000005
CODE_NOT_FOUND = 1000011
CODE_BAD_FILTER = 1000019
CODE_INDEX_INIT = 1000023
CODE_EMBEDDING = 1000025
CODE_INTERNAL = 1000028
CODE_RATE_LIMIT = 1000029


class VikingError(BackendError):
    """Mixin data for every Viking failure: the service code, HTTP status and request id."""

    code: int | None = None
    http_status: int | None = None
    request_id: str | None = None

    def _set(self, code: int | None, http_status: int | None, request_id: str | None) -> None:
        self.code = code
        self.http_status = http_status
        self.request_id = request_id


class VikingPermissionDenied(PermissionDenied, VikingError):
    pass


class VikingInvalidRequest(InvalidRequest, VikingError):
    pass


class VikingCollectionMissing(BackendMisconfigured, InvalidRequest, VikingError):
    """The configured collection does not exist: a configuration error, never retried."""


class VikingNotFound(BackendNotFound, VikingError):
    pass


class VikingRetryLater(RetryLater, VikingError):
    """1000023: the index is still being built (minutes after a collection's first write), so a
    retry inside the same call cannot help; the caller retries later."""

    retry_in_call = False


class VikingUnavailable(BackendUnavailable, VikingError):
    pass


class VikingRateLimited(BackendRateLimited, VikingError):
    pass


class VikingNotSent(NotSent, VikingUnavailable):
    """The request never reached the service (connect failure): safe to retry any write."""


#: The shared HTTP status categories (`adapters.shared.http.status_category`) as Viking leaves. A bare
#: 404 / 409 without a Viking code is a wrong URL or a gateway, never "no such memory".
_LEAF_OF_CATEGORY: dict[type[BackendError], type["VikingError"]] = {
    InvalidRequest: VikingInvalidRequest,
    PermissionDenied: VikingPermissionDenied,
    BackendNotFound: VikingInvalidRequest,
    BackendConflict: VikingInvalidRequest,
    BackendRateLimited: VikingRateLimited,
    BackendUnavailable: VikingUnavailable,
}


def error_for(
    *,
    code: int | None,
    http_status: int | None,
    message: str,
    request_id: str | None,
    retry_after: float | None = None,
    backend: str = "viking",
) -> VikingError:
    """The typed error for a failed answer. `message` must already be scrubbed of secrets."""
    detail = f"{message} (code={code}, http={http_status}, request_id={request_id})"
    kw: dict[str, Any] = {"backend": backend}
    err: VikingError
    if code == CODE_AUTH:
        err = VikingPermissionDenied(detail, **kw)
    elif code == CODE_NO_COLLECTION:
        err = VikingCollectionMissing(detail, **kw)
    elif code in (CODE_INVALID, CODE_BAD_FILTER):
        err = VikingInvalidRequest(detail, **kw)
    elif code == CODE_NOT_FOUND:
        err = VikingNotFound(detail, **kw)
    elif code == CODE_INDEX_INIT:
        err = VikingRetryLater(detail, **kw)
    elif code == CODE_RATE_LIMIT:
        err = VikingRateLimited(detail, retry_after=retry_after, **kw)
    elif code in (CODE_EMBEDDING, CODE_INTERNAL):
        err = VikingUnavailable(detail, **kw)
    else:  # no known code: the shared status mapping, framed as Viking leaves
        category = status_category(http_status or 400) or InvalidRequest
        leaf = _LEAF_OF_CATEGORY.get(category, VikingInvalidRequest)
        err = leaf(detail, retry_after=retry_after, **kw) if leaf is VikingRateLimited else leaf(detail, **kw)
    err._set(code, http_status, request_id)
    return err
