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
     │    ├── Forbidden                        403: SessionIdentityMismatch, UnknownSession
     │    ├── InvalidIdentityInput             (also InvalidInput) a malformed identity field
     │    └── IdentityProviderUnavailable      503 (also Unavailable): JWKS unreachable,
     │                                         NonceCacheFull (replay cache at its cap)
     ├── InvalidInput (ValueError)             400/422: empty/over-long text, unknown purpose
     │    │                                    or kind, malformed reference, id grammar
     │    ├── InvalidIdError                   identity.ids: an id that breaks the grammar
     │    └── InvalidRequest                   adapters: EmptyScopeError, UnsupportedFilter,
     │                                         EmbedderMismatch
     ├── NotPermitted                          403: the policy refuses (write a visibility,
     │    │                                    approve, forget another's memory, no grant)
     │    ├── ManifestError                    misuse of an injection manifest
     │    └── RoleRefused                      bridge/roles: the role file does not allow it
     ├── NotFound                              404: no such memory/grant/manifest there
     ├── Conflict                              409: idempotency key reused for other content
     │    └── QuotaExceeded                    409: a write past a tenant's or user's storage quota
     ├── RecallIncomplete                      503: a scope (or the whole fan-out) failed;
     │                                         carries failed_scopes and the adapters' reasons
     ├── Unavailable                           503, retryable: network, overload, held lock
     │    ├── StorageUnavailable               a state/store file is locked, full or failing
     │    │                                    (local: StorageBusy, StorageFull, StorageIOError)
     │    └── adapters' Unavailable            NotSent, RateLimited, RetryLater, EmbeddingUnavailable
     ├── CorruptStorage                        a damaged, emptied or foreign store file (`path`)
     │                                         (CorruptRecord, local CorruptStore/DamagedRecord)
     └── BackendError                          adapters.errors: every adapter failure, each
                                               also a member of the category above it names
                                               (PermissionDenied: the backend refused the key)

Each message names what was wrong and, where useful, the setting or role that would allow it.
The CLI and the HTTP service map this tree to exit codes / problem+json in one place each.
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
    RecallIncomplete,
    SessionIdentityMismatch,
    StorageUnavailable,
    Unauthenticated,
    Unavailable,
    UnknownSession,
    UnusableKey,
    VikingBridgeError,
)

__all__ = [
    "VikingBridgeError", "ConfigurationError", "IdentityConfigurationError", "IdentityError",
    "Unauthenticated", "InvalidCredential", "ExpiredCredential", "Forbidden",
    "SessionIdentityMismatch", "UnknownSession", "IdentityProviderUnavailable", "InvalidInput",
    "NotPermitted", "ManifestError", "NotFound", "Conflict", "RecallIncomplete", "Unavailable",
    "CorruptStorage", "BridgeError", "IncompatibleSchema", "InvalidIdentityInput", "NonceCacheFull",
    "StorageUnavailable", "UnusableKey", "RoleFileError", "RoleRefused", "QuotaExceeded",
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
