"""Every way a backend call can fail, as one tree (pattern: httpx/_exceptions.py).

Each leaf is also a member of its category in the project's one tree (`identity.errors`, drawn
whole in `bridge/errors.py`), shown on the right, so `except NotFound` (the category) catches a
backend's `BackendNotFound` and the CLI / service map every backend failure without knowing the
adapter. The leaves carry a `Backend` prefix where the category has the same word, so no two
classes of the project share a name.

    BackendError (VikingBridgeError)
     ├── InvalidRequest ............................ InvalidInput   the call itself is wrong
     │    ├── EmptyScopeError (= EmptyScopeSetError)  no scope / empty ScopeSet: there is no "all"
     │    ├── UnsupportedFilter                       a filter the backend cannot express: never widen
     │    └── EmbedderMismatch                        a store built with another embedder
     ├── BackendMisconfigured ...................... ConfigurationError   fix the deployment
     │    ├── KeyStoreError (openviking)              the key store is unreadable, too wide, undecryptable
     │    └── EmbeddingMisconfigured (embedding)      the model answers vectors of another shape
     ├── CorruptRecord ............................. CorruptStorage  a stored record that does not decode;
     │                                                 never returned (dropped + alarmed, `adapters.shared.envelope`)
     ├── BackendNotFound ........................... NotFound       no such memory *in that scope*
     ├── BackendConflict ........................... Conflict       key reused for other content, a race,
     │                                                 two scopes mapped onto one backend principal
     ├── PermissionDenied .......................... (BackendError) the backend refused the credential
     ├── TenantNotRouted ........................... NotPermitted   a routed service's table names no
     │                                                 backend for that tenant: refused, never defaulted
     ├── BackendUnavailable ........................ Unavailable    transient: network, 5xx, overload
     │    ├── NotSent                                 the request never left: any call may be retried
     │    ├── BackendRateLimited                      429 / rate-limit code; `retry_after` if known
     │    ├── RetryLater                              not ready yet (an index initialising)
     │    └── EmbeddingUnavailable (embedding)        the embedding endpoint failed
     └── WrongContext .............................. ConfigurationError (+ RuntimeError)  the sync
                                                       facade was called inside a running event loop

A fan-out where some scopes failed is not an exception: `SearchResult.failed_scopes` names them
and `failure_reasons` says why (every backend call of a search that fails lands there; `search`
raises only for a malformed query or a configuration it cannot run). The bridge raises
`RecallIncomplete` carrying the reasons; it never presents fewer scopes as complete.

Messages never contain secrets (`adapters.shared.http.redact`). `backend` names the adapter, `scope`
the ScopeKey involved.
"""

from __future__ import annotations

from typing import Any

from identity import errors as _root

__all__ = [
    "BackendError",
    "InvalidRequest",
    "EmptyScopeError",
    "UnsupportedFilter",
    "EmbedderMismatch",
    "BackendMisconfigured",
    "CorruptRecord",
    "BackendNotFound",
    "BackendConflict",
    "PermissionDenied",
    "TenantNotRouted",
    "BackendUnavailable",
    "NotSent",
    "BackendRateLimited",
    "RetryLater",
    "WrongContext",
]


class BackendError(_root.VikingBridgeError):
    """Base of every adapter failure."""

    retryable: bool = False

    # `scope` is the `adapters.scopes.ScopeKey` the failure happened in. It is typed `object`
    # because this module sits below `adapters.scopes` (which raises these errors): naming the
    # class here would make the two modules import each other. Only its text reaches a message.
    def __init__(self, message: str, *, backend: str | None = None, scope: object | None = None) -> None:
        self.backend = backend
        self.scope = scope
        prefix = f"[{backend}] " if backend else ""
        suffix = f" (scope {scope})" if scope is not None else ""
        super().__init__(f"{prefix}{message}{suffix}")


class InvalidRequest(BackendError, _root.InvalidInput):
    """The request is malformed or asks for something this backend will not do."""


class EmptyScopeError(InvalidRequest):
    """A call named no scope (or an empty ScopeSet / memory-id restriction). Raised instead of
    ever searching 'all'. `adapters.scopes.EmptyScopeSetError` is the same class."""


class UnsupportedFilter(InvalidRequest):
    """A filter the backend cannot express. Raised instead of silently dropping it."""


class EmbedderMismatch(InvalidRequest):
    """The store's vectors were made by a different embedder than the one supplied."""


class BackendMisconfigured(BackendError, _root.ConfigurationError):
    """The adapter cannot run as configured (a missing collection, an unusable key store)."""


class CorruptRecord(BackendError, _root.CorruptStorage):
    """A stored record that is not a well-formed viking-bridge record, or names another place
    than the one it was read from. Adapters never return it: they drop it and raise an alarm."""


class BackendNotFound(BackendError, _root.NotFound):
    """No memory with that id in that scope."""


class BackendConflict(BackendError, _root.Conflict):
    """The write conflicts with existing state (e.g. idempotency key reused for other content)."""


class PermissionDenied(BackendError):
    """The backend refused the credential or principal."""


class TenantNotRouted(BackendError, _root.NotPermitted):
    """A routed service (several backends, one per tenant) holds no backend for this tenant.
    Refused rather than sent to some default backend, where the tenant's memories would land
    beside another tenant's and never be found again where the table later puts them."""


class BackendUnavailable(BackendError, _root.Unavailable):
    """A transient failure; the call may succeed if retried."""

    retryable = True
    #: False where retrying inside the same call cannot help (an index that takes minutes).
    retry_in_call: bool = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)


class NotSent(BackendUnavailable):
    """The request never reached the server (connection refused, pool exhausted): nothing was
    applied, so even a write that is not idempotent may be retried."""


class BackendRateLimited(BackendUnavailable):
    """The backend asked us to slow down; `retry_after` seconds when it said so."""


class RetryLater(BackendUnavailable):
    """The backend is not ready yet (e.g. an index still initialising)."""


class WrongContext(BackendError, _root.ConfigurationError, RuntimeError):
    """A blocking facade was called from inside a running event loop (await the async API)."""
