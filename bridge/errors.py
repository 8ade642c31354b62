"""viking-bridge's one error tree — import errors from here (pattern: httpx/_exceptions.py).

    VikingBridgeError                          identity.errors (the root; bottom layer)
     ├── ConfigurationError                    start-up: a bad setting, file or dependency
     │    ├── IncompatibleSchema               a state file migrated by newer code
     │    ├── IdentityConfigurationError       a mis-configured identity provider
     │    │    ├── UnusableKey                 a JWK that may never verify tokens
     │    │    └── InvalidSetting              identity.settings: a bad provider setting
     │    ├── BackendMisconfigured             adapters: EmbeddingMisconfigured, WrongContext
     │    └── RoleFileError                    bridge/roles: a role file field (`path`, `field`)
     ├── IdentityError                         establishing who is asking
     │    ├── Unauthenticated                  401: InvalidCredential, ExpiredCredential
     │    ├── Forbidden                        403: SessionIdentityMismatch, UnknownSession,
     │    │                                    ImpersonationRefused (a request field named another)
     │    ├── InvalidIdentityInput             (also InvalidInput) a malformed identity field
     │    └── IdentityProviderUnavailable      503 (also Unavailable): JWKS unreachable,
     │                                         NonceCacheFull (replay cache at its cap)
     ├── InvalidInput (ValueError)             400/422: empty/over-long text, unknown purpose
     │    │                                    or kind, malformed reference, id grammar
     │    ├── InvalidIdError                   identity.ids: an id that breaks the grammar
     │    ├── RequestTooLarge                  413/414: a body or query over the door's limit
     │    ├── IncompleteRequest                408: a body that did not arrive within the door's limit
     │    ├── UnsupportedMediaType             415: a body the API cannot read (not JSON)
     │    └── InvalidRequest                   adapters: EmptyScopeError, UnsupportedFilter,
     │                                         EmbedderMismatch
     ├── NotPermitted                          403: the policy refuses (write a visibility,
     │    │                                    approve, forget another's memory, no grant)
     │    ├── ManifestError                    misuse of an injection manifest
     │    ├── RoleRefused                      bridge/roles: the role file does not allow it
     │    ├── NamespaceRefused                 doors/langgraph: a namespace the caller may not use
     │    └── TenantNotRouted                  adapters/routing: no backend for the tenant in the table
     ├── NotFound                              404: no such memory/grant/manifest there
     ├── Conflict                              409: idempotency key reused for other content
     │    └── QuotaExceeded                    409: a write past a tenant's or user's storage quota
     ├── RecallIncomplete                      503: a scope (or the whole fan-out) failed;
     │                                         carries failed_scopes and the adapters' reasons
     ├── RequestRateLimited                    429: the caller's token bucket at the door is empty
     ├── Unavailable                           503, retryable: network, overload, held lock
     │    ├── RequestTimeout                   the door's per-request timeout
     │    ├── StorageUnavailable               a state/store file is locked, full or failing
     │    │                                    (local: StorageBusy, StorageFull, StorageIOError)
     │    └── BackendUnavailable               adapters: NotSent, BackendRateLimited, RetryLater,
     │                                         EmbeddingUnavailable
     ├── CorruptStorage                        a damaged, emptied or foreign store file (`path`)
     │                                         (CorruptRecord, local CorruptStore/DamagedRecord)
     └── BackendError                          adapters.errors: every adapter failure, each
                                               also a member of the category above it names
                                               (PermissionDenied: the backend refused the key)

Each message names what was wrong and, where useful, the setting or role that would allow it.
The CLI and the HTTP service map this tree to exit codes / problem+json in one place each.
`ServiceProblem` (doors/cli/remote.py) re-raises a service's problem+json on the client side.
"""

from __future__ import annotations

from identity.errors import (
    Conflict,
    ConfigurationError,
    CorruptStorage,
    ExpiredCredential,
    Forbidden,
    IdentityConfigurationError,
    IdentityError,
    IdentityProviderUnavailable,
    IncompatibleSchema,
    InvalidCredential,
    InvalidIdentityInput,
    InvalidInput,
    NonceCacheFull,
    NotFound,
    NotPermitted,
    SessionIdentityMismatch,
    StorageUnavailable,
    Unauthenticated,
    Unavailable,
    UnknownSession,
    UnusableKey,
    VikingBridgeError,
)
from identity.model import MemoryIdentity

__all__ = [
    "VikingBridgeError", "UnsupportedMediaType", "ConfigurationError", "IdentityConfigurationError", "IdentityError",
    "Unauthenticated", "InvalidCredential", "ExpiredCredential", "Forbidden",
    "SessionIdentityMismatch", "UnknownSession", "IdentityProviderUnavailable", "InvalidInput",
    "NotPermitted", "ManifestError", "NotFound", "Conflict", "RecallIncomplete", "Unavailable",
    "CorruptStorage", "BridgeError", "IncompatibleSchema", "InvalidIdentityInput", "NonceCacheFull",
    "StorageUnavailable", "UnusableKey", "RoleFileError", "RoleRefused", "QuotaExceeded",
    "ImpersonationRefused", "RequestTooLarge", "RequestRateLimited", "RequestTimeout", "IncompleteRequest",
]

#: Kept for callers of the first release: the bridge's errors are the whole tree now.
BridgeError = VikingBridgeError


class ManifestError(NotPermitted):
    """An injection manifest was misused (self-injection, wrong child, expired, revoked,
    re-injection without permission)."""


class QuotaExceeded(Conflict):
    """A write would take a tenant or a user past a storage quota (count of memories or bytes of
    content); nothing of it was written. HTTP 409, problem type `quota-exceeded`.

    `level` is "tenant" or "user"; `measure` is "memories" or "bytes"; `used` what is held now,
    `requested` what the write needed, `limit` the quota (`bridge.policy.quotas`)."""

    def __init__(self, message: str, *, level: str, measure: str, used: int, requested: int, limit: int) -> None:
        self.level, self.measure, self.used, self.requested, self.limit = level, measure, used, requested, limit
        super().__init__(message)


class RoleFileError(ConfigurationError):
    """A role file (bridge/roles/) that cannot be used: unreadable, not TOML, or a field with a
    wrong value. `path` is the file, `field` the dotted location in it (`agents.intent.tiers`)."""

    def __init__(self, path: str, field: str, problem: str) -> None:
        self.path, self.field, self.problem = path, field, problem
        super().__init__(f"role file {path}: {field}: {problem}" if field else f"role file {path}: {problem}")


class RoleRefused(NotPermitted):
    """The loaded role file does not allow this: an agent without a role, an injection into an
    agent the parent may not inject into, a re-injection or write-back the role does not permit."""


class RecallIncomplete(VikingBridgeError):
    """Some readable scopes could not be searched; nothing is returned as if it were complete.

    `failed_scopes` names them; `reasons` carries each adapter's failure text (never secrets).
    """

    retryable = True

    def __init__(self, message: str, failed_scopes: tuple = (), reasons: tuple[str, ...] = ()) -> None:
        self.failed_scopes = tuple(failed_scopes)
        self.reasons = tuple(reasons)
        super().__init__(message)


# The errors a door raises before any operation runs (the HTTP service's edge; MCP reuses them).

class ImpersonationRefused(Forbidden):
    """A request field named another identity than the credential's (403). It carries the
    authenticated caller so the door can audit the attempt as a `denied` row."""

    def __init__(self, message: str, *, who: MemoryIdentity) -> None:
        super().__init__(message)
        self.who = who


class RequestTooLarge(InvalidInput):
    """The body or the query string is over the service's limit (413, or 414 for a query)."""

    def __init__(self, message: str, *, status: int = 413) -> None:
        self.status = status
        super().__init__(message)


class IncompleteRequest(InvalidInput):
    """The request's body did not arrive within the door's read limit (408, and the connection is
    closed): a client that announces more than it sends, or drips it, must not hold a worker."""


class UnsupportedMediaType(InvalidInput):
    """A request body in a media type the API does not read (415): every body is JSON."""


class RequestRateLimited(VikingBridgeError):
    """This identity's token bucket at the door is empty (429); `retry_after` says when a token is
    back. Not a backend's rate limit (that is `adapters.errors.BackendRateLimited`, an Unavailable)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class RequestTimeout(Unavailable):
    """The operation did not finish within the service's per-request timeout (503, retryable)."""
