"""Every way a backend call can fail, as one tree (pattern: httpx/_exceptions.py).

    BackendError
     ├── InvalidRequest            the call itself is wrong; retrying cannot help
     │    ├── EmptyScopeError       no scope / empty ScopeSet: there is no "search everything"
     │    ├── UnsupportedFilter     a filter the backend cannot express: raise, never widen
     │    └── EmbedderMismatch      a store opened with an embedder other than the one it was built with
     ├── NotFound                  no such memory *in that scope* (another scope's id is also NotFound)
     ├── Conflict                  an idempotency key reused with different content, a version race
     ├── PermissionDenied          the backend refused the principal (bad key, wrong account)
     ├── Unavailable               transient: network, 5xx, overload — retryable
     │    ├── RateLimited           429 / backend rate-limit code; `retry_after` seconds if known
     │    └── RetryLater            the backend is not ready yet (index initialising)

A fan-out where some scopes failed is not an exception: `SearchResult.failed_scopes` names them
and the bridge decides (by default it raises; it never presents fewer scopes as complete).

Messages never contain secrets. `backend` names the adapter, `scope` the ScopeKey involved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from identity import errors as _root

if TYPE_CHECKING:
    from adapters.scopes import ScopeKey


class BackendError(_root.VikingBridgeError):
    """Base of every adapter failure."""

    retryable: bool = False

    def __init__(self, message: str, *, backend: str | None = None, scope: "ScopeKey | None" = None) -> None:
        self.backend = backend
        self.scope = scope
        prefix = f"[{backend}] " if backend else ""
        suffix = f" (scope {scope})" if scope is not None else ""
        super().__init__(f"{prefix}{message}{suffix}")


class InvalidRequest(BackendError, _root.InvalidInput):
    """The request is malformed or asks for something this backend will not do."""


class EmptyScopeError(InvalidRequest):
    """A call named no scope. Raised instead of ever searching 'all'."""


class UnsupportedFilter(InvalidRequest):
    """A filter the backend cannot express. Raised instead of silently dropping it."""


class EmbedderMismatch(InvalidRequest):
    """The store's vectors were made by a different embedder than the one supplied."""


class NotFound(BackendError, _root.NotFound):
    """No memory with that id in that scope."""


class Conflict(BackendError, _root.Conflict):
    """The write conflicts with existing state (e.g. idempotency key reused for other content)."""


class PermissionDenied(BackendError):
    """The backend refused the credential or principal."""


class Unavailable(BackendError, _root.Unavailable):
    """A transient failure; the call may succeed if retried."""

    retryable = True


class RateLimited(Unavailable):
    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)


class RetryLater(Unavailable):
    """The backend is not ready yet (e.g. an index still initialising)."""
