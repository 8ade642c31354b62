"""viking-bridge's one error tree — import errors from here (pattern: httpx/_exceptions.py).

    VikingBridgeError                          identity.errors (the root; bottom layer)
     ├── ConfigurationError                    start-up: a bad setting, file or dependency
     │    └── IdentityConfigurationError       a mis-configured identity provider
     ├── IdentityError                         establishing who is asking
     │    ├── Unauthenticated                  401: InvalidCredential, ExpiredCredential
     │    ├── Forbidden                        403: SessionIdentityMismatch, UnknownSession
     │    └── IdentityProviderUnavailable      503 (also Unavailable): JWKS unreachable
     ├── InvalidInput (ValueError)             400/422: empty/over-long text, unknown purpose
     │    │                                    or kind, malformed reference, id grammar
     │    └── InvalidIdError                   identity.ids: an id that breaks the grammar
     ├── NotPermitted                          403: the policy refuses (write a visibility,
     │    │                                    approve, forget another's memory, no grant)
     │    └── ManifestError                    misuse of an injection manifest
     ├── NotFound                              404: no such memory/grant/manifest there
     ├── Conflict                              409: idempotency key reused for other content
     ├── RecallIncomplete                      503: a scope failed mid fan-out (fail closed)
     ├── Unavailable                           503, retryable: network, overload, held lock
     ├── CorruptStorage                        a damaged, emptied or foreign store file
     └── BackendError                          adapters.errors: every adapter failure, each
                                               also a member of the category above it names
                                               (InvalidRequest -> InvalidInput, NotFound,
                                               Conflict, PermissionDenied, Unavailable ...)

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
    InvalidCredential,
    InvalidInput,
    NotFound,
    NotPermitted,
    RecallIncomplete,
    SessionIdentityMismatch,
    Unauthenticated,
    Unavailable,
    UnknownSession,
    VikingBridgeError,
)

__all__ = [
    "VikingBridgeError", "ConfigurationError", "IdentityConfigurationError", "IdentityError",
    "Unauthenticated", "InvalidCredential", "ExpiredCredential", "Forbidden",
    "SessionIdentityMismatch", "UnknownSession", "IdentityProviderUnavailable", "InvalidInput",
    "NotPermitted", "ManifestError", "NotFound", "Conflict", "RecallIncomplete", "Unavailable",
    "CorruptStorage", "BridgeError",
]

#: Kept for callers of the first release: the bridge's errors are the whole tree now.
BridgeError = VikingBridgeError


class ManifestError(NotPermitted):
    """An injection manifest was misused (self-injection, wrong child, expired, revoked,
    re-injection without permission)."""
