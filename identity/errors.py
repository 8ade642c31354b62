"""The root of viking-bridge's one error tree, and the identity branch of it.

The root lives here because `identity` is the bottom layer: `adapters` and `bridge` both import
it, so every package can subclass the same categories. The whole tree, with the bridge's and
the adapters' leaves, is drawn in `bridge/errors.py`, the public place to import errors from.

    VikingBridgeError                     the one root; every raise in the project is a member
     ├── ConfigurationError               the process cannot run as configured (start-up)
     ├── Unauthenticated                  no credential, or one that does not verify (401)
     ├── Forbidden                        a verified identity that may not do this (403)
     ├── InvalidInput (ValueError)        the request is malformed; fix the input (400/422)
     ├── NotPermitted                     the policy refuses this operation (403)
     ├── NotFound                         no such thing in a place the caller may look (404)
     ├── Conflict                         reuse of a key for other content, a version race (409)
     ├── Unavailable                      transient; the same call may succeed later (503)
     │    └── StorageUnavailable          a store file is locked by another process, or the disk is full
     └── CorruptStorage                   a store file is damaged or belongs to another store

    ConfigurationError
     └── IncompatibleSchema               a store file was written by a newer version (names the file)

Identity's own leaves (kept under `IdentityError` so `except IdentityError` still works):

    IdentityError
     ├── InvalidIdentityInput     (also InvalidInput) an identity API called with a wrong-type value
     ├── Unauthenticated ... InvalidCredential, ExpiredCredential
     ├── Forbidden ......... SessionIdentityMismatch, UnknownSession
     ├── IdentityProviderUnavailable  (also Unavailable) the key source is unreachable; never a pass
     │    └── NonceCacheFull          the replay cache holds its maximum of live nonces; retry later
     └── IdentityConfigurationError   (also ConfigurationError) a mis-configured provider
          └── UnusableKey             (also ValueError) a JWK / JWKS document we never verify with

Messages never contain a credential, a secret or memory content.
"""

from __future__ import annotations


class VikingBridgeError(Exception):
    """Root of every error viking-bridge raises on purpose."""

    #: True where retrying the same call later may succeed (drives HTTP 503 + Retry-After).
    retryable: bool = False


class ConfigurationError(VikingBridgeError):
    """A setting, file or dependency makes the process unable to run; raised at start-up."""


class InvalidInput(VikingBridgeError, ValueError):
    """The request is malformed; fix the input. Also a `ValueError` for plain-Python callers."""


class NotPermitted(VikingBridgeError):
    """The authenticated identity may not perform this operation (the policy said no)."""


class NotFound(VikingBridgeError):
    """No such memory, grant, manifest or session where the caller may look."""


class Conflict(VikingBridgeError):
    """The request conflicts with stored state (an idempotency key reused for other content)."""


class Unavailable(VikingBridgeError):
    """A transient failure (network, overload, a held lock); the call may succeed if retried."""

    retryable = True
    #: Seconds after which a retry may succeed, when the source said so (HTTP Retry-After).
    retry_after: float | None = None


class StorageUnavailable(Unavailable):
    """A store file is locked by another process (past the busy timeout) or the disk is full."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class CorruptStorage(VikingBridgeError):
    """A store file is damaged, emptied, replaced or bound to another store; names the file."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class IncompatibleSchema(ConfigurationError):
    """A store's recorded schema version is newer than this code knows: it was written by a
    newer release. Refused at open (never downgraded, never written), naming the file."""

    def __init__(self, message: str, *, path: str | None, component: str, found: int, known: int) -> None:
        self.path = path
        self.component = component
        self.found = found
        self.known = known
        super().__init__(message)


# -- the identity branch -----------------------------------------------------------------


class IdentityError(VikingBridgeError):
    """Base of every identity failure."""


class InvalidIdentityInput(IdentityError, InvalidInput):
    """An identity API was called with a value of the wrong type or shape (a session call with
    no `MemoryIdentity`, a non-string key id): a caller's bug, not a credential problem (400).
    Ids that break the grammar raise `identity.ids.InvalidIdError`, also an `InvalidInput`."""


class Unauthenticated(IdentityError):
    """Nobody could be established from the credential presented (HTTP 401)."""


class InvalidCredential(Unauthenticated):
    """The credential is malformed, forged, unknown or revoked."""


class ExpiredCredential(Unauthenticated):
    """The credential is outside its validity window (exp/nbf, timestamp replay window)."""


class Forbidden(IdentityError):
    """The caller is known but not allowed to do what it asked (HTTP 403)."""


class SessionIdentityMismatch(Forbidden):
    """A session id is bound to a different identity than the one now presenting it."""


class UnknownSession(Forbidden):
    """A session id that no identity has bound yet was named as a fork parent."""


class IdentityProviderUnavailable(IdentityError, Unavailable):
    """The provider could not verify the credential now (key source unreachable). Fail closed."""


class NonceCacheFull(IdentityProviderUnavailable):
    """The gateway's replay cache is full of *live* nonces. Refusing new requests until some
    expire is the only safe choice: evicting a live nonce would let its request be replayed."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class IdentityConfigurationError(IdentityError, ConfigurationError):
    """The provider cannot run as configured; raised at start-up, naming the setting."""


class UnusableKey(IdentityConfigurationError, ValueError):
    """A JWK or JWKS document we will not verify with (symmetric, private, wrong use or
    algorithm, malformed). From configuration it stops start-up; from a fetched key set the
    entry is skipped, or the fetch counts as failed."""
