"""The error tree mapped ONCE to RFC 9457 problem+json. Never a stack trace, never a secret.

    Unauthenticated (InvalidCredential, ExpiredCredential) ... 401 + WWW-Authenticate
    Forbidden, NotPermitted (ManifestError) .................. 403
    NotFound ................................................. 404
    QuotaExceeded ............................................ 409, type quota-exceeded (+ level, measure, used, requested, limit)
    Conflict ................................................. 409
    RequestTooLarge .......................................... 413 (body) / 414 (query string)
    UnsupportedMediaType ..................................... 415 (a body that is not JSON)
    IncompleteRequest ........................................ 408 + Connection: close (body not sent in time)
    InvalidInput ............................................. 400
    request that does not fit its model (FastAPI validation) . 422 (malformed JSON: 400)
    RequestRateLimited ....................................... 429 + Retry-After
    Unavailable, RecallIncomplete, RequestTimeout ............ 503 + Retry-After
    CorruptStorage, ConfigurationError ....................... 503 (operator must act; no retry hint)
    anything else ............................................ 500, "internal error" + request id only

The order below is the order of the checks: the most specific category first (an
`IdentityProviderUnavailable` is both an identity error and `Unavailable`: it is a 503).
`type` is a URN naming the category; `detail` is the error's message (messages never carry a
credential or memory content; they may echo the caller's own input back to the caller), with
every absolute server path replaced by `<server path>`: a store's or a state file's location is
the operator's business (it is in the server's log), never an API client's.
"""

from __future__ import annotations

import math
import re
from typing import Any

from bridge.errors import (
    Conflict, ConfigurationError, CorruptStorage, Forbidden, IncompleteRequest, InvalidInput, NotFound, NotPermitted, RecallIncomplete,
    QuotaExceeded, RequestRateLimited, RequestTooLarge, Unauthenticated, Unavailable, UnsupportedMediaType,
)

__all__ = ["problem_for", "problem_body", "without_server_paths", "PROBLEM_TYPE", "MEDIA_TYPE"]

MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE = "urn:viking-bridge:problem:"





_TABLE: tuple[tuple[type[BaseException], int, str, str], ...] = (
    (RequestTooLarge, 413, "request-too-large", "Request too large"),
    (IncompleteRequest, 408, "incomplete-request", "Request timeout"),
    (UnsupportedMediaType, 415, "unsupported-media-type", "Unsupported media type"),
    (RequestRateLimited, 429, "rate-limited", "Too many requests"),
    (Unauthenticated, 401, "unauthenticated", "Authentication required"),
    (CorruptStorage, 503, "storage-needs-attention", "Storage needs attention"),
    (ConfigurationError, 503, "misconfigured", "Service misconfigured"),
    (RecallIncomplete, 503, "recall-incomplete", "Recall incomplete"),
    (Unavailable, 503, "unavailable", "Temporarily unavailable"),
    (Forbidden, 403, "forbidden", "Forbidden"),
    (NotPermitted, 403, "not-permitted", "Not permitted"),
    (NotFound, 404, "not-found", "Not found"),
    (QuotaExceeded, 409, "quota-exceeded", "Storage quota exceeded"),
    (Conflict, 409, "conflict", "Conflict"),
    (InvalidInput, 400, "invalid-input", "Invalid input"),
)


#: An absolute POSIX path of two or more segments, not part of a URL and not the API's own routes.
_SERVER_PATH = re.compile(r"(?<![\w/.:~-])(?!/api/)/(?:[^\s/'\"()\[\]{},;]+/)+[^\s/'\"()\[\]{},;]*")


def without_server_paths(text: str) -> str:
    """`text` with each absolute file-system path replaced by `<server path>`."""
    return _SERVER_PATH.sub("<server path>", text)


def problem_body(status: int, slug: str, title: str, detail: str, request_id: str, **extra: Any) -> dict[str, Any]:
    body = {"type": PROBLEM_TYPE + slug, "title": title, "status": status, "detail": without_server_paths(detail), "instance": f"urn:request:{request_id}", "request_id": request_id}
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


def _retry_after(exc: BaseException) -> int | None:
    value = getattr(exc, "retry_after", None)
    if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
        return max(1, math.ceil(value))
    return 1 if getattr(exc, "retryable", False) else None


def problem_for(exc: BaseException, request_id: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, problem body, extra headers) for any exception; unknown ones are a bare 500."""
    for kind, status, slug, title in _TABLE:
        if isinstance(exc, kind):
            if isinstance(exc, RequestTooLarge):
                status = exc.status
            headers: dict[str, str] = {}
            retry = _retry_after(exc) if status in (429, 503) and not isinstance(exc, (CorruptStorage, ConfigurationError)) else None
            if retry is not None:
                headers["Retry-After"] = str(retry)
            if isinstance(exc, IncompleteRequest):  # the rest of the body may still come: never read it as a request
                headers["Connection"] = "close"
            extra: dict[str, Any] = {"error": type(exc).__name__, "retry_after": retry}
            if isinstance(exc, RecallIncomplete):
                extra["failed_scopes"] = [str(s) for s in exc.failed_scopes]
            if isinstance(exc, QuotaExceeded):
                extra.update(level=exc.level, measure=exc.measure, used=exc.used, requested=exc.requested, limit=exc.limit)
            return status, problem_body(status, slug, title, str(exc)[:2000], request_id, **extra), headers
    return 500, problem_body(500, "internal", "Internal error", "the service failed; quote the request id to its operator", request_id), {}
