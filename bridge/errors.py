"""Errors the bridge itself raises (backend and identity errors pass through unchanged).

    BridgeError
     ├── InvalidInput          bad request: empty/over-long text, unknown purpose or kind,
     │                         budget below one item, malformed reference (also a ValueError)
     ├── NotPermitted          the identity may not do this: write a visibility, approve,
     │    │                    forget someone else's memory, use a missing or expired grant
     │    └── ManifestError    misuse of an injection manifest (self-injection, wrong child,
     │                         expired, re-injection without permission)
     └── RecallIncomplete      a scope failed mid fan-out; fail closed instead of a silent subset

    adapters.errors.BackendError ... backend failures (see adapters/errors.py)
    identity.errors.IdentityError .. authentication and session-binding failures

Each message names what was wrong and, where useful, the setting or role that would allow it.
"""

from __future__ import annotations


class BridgeError(Exception):
    """Base of the bridge's own errors."""


class InvalidInput(BridgeError, ValueError):
    """The request is malformed; fix the input."""


class NotPermitted(BridgeError):
    """The authenticated identity may not perform this operation."""


class ManifestError(NotPermitted):
    """An injection manifest was misused."""


class RecallIncomplete(BridgeError):
    """Some readable scopes could not be searched; nothing is returned as if it were complete."""

    def __init__(self, message: str, failed_scopes: tuple = ()) -> None:
        self.failed_scopes = failed_scopes
        super().__init__(message)
