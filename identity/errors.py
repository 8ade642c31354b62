"""Every way establishing an identity can fail.

    IdentityError
     ├── Unauthenticated        no credential, or one that does not verify (HTTP 401)
     │    ├── InvalidCredential  bad signature, unknown key, malformed token, wrong HMAC
     │    └── ExpiredCredential  expired / not yet valid / outside the replay window
     ├── Forbidden              a verified credential that may not do this (HTTP 403)
     │    ├── SessionIdentityMismatch   continuing a session bound to someone else
     │    └── UnknownSession            forking a session that was never bound
     ├── IdentityProviderUnavailable   the credential could not be checked right now, e.g. the
     │                                 JWKS endpoint is unreachable (HTTP 503; never a pass)
     └── IdentityConfigurationError    the provider itself is mis-configured (start-up error)

Messages never contain the credential itself.
"""

from __future__ import annotations


class IdentityError(Exception):
    """Base of every identity failure."""


class Unauthenticated(IdentityError):
    """Nobody could be established from the credential presented."""


class InvalidCredential(Unauthenticated):
    """The credential is malformed, forged, unknown or revoked."""


class ExpiredCredential(Unauthenticated):
    """The credential is outside its validity window (exp/nbf, timestamp replay window)."""


class Forbidden(IdentityError):
    """The caller is known but not allowed to do what it asked."""


class SessionIdentityMismatch(Forbidden):
    """A session id is bound to a different identity than the one now presenting it."""


class UnknownSession(Forbidden):
    """A session id that no identity has bound yet was named as a fork parent."""


class IdentityProviderUnavailable(IdentityError):
    """The provider could not verify the credential now (key source unreachable). Fail closed."""


class IdentityConfigurationError(IdentityError):
    """The provider cannot run as configured; raised at start-up, naming the setting."""
