"""Typed refusals of the LangGraph store, members of the bridge's one error tree.

    NamespaceRefused (NotPermitted)     a namespace names another user, agent, tenant or a
                                        workspace the session is not in (for a write)
    UnknownNamespace (InvalidInput)     a namespace whose first label maps to no scope
    StoreIdentityMissing (Unauthenticated)  no verified identity for this run
    UnsupportedStoreOperation (InvalidInput)  a BaseStore feature the bridge cannot honour
                                        exactly (refused rather than approximated)

Never caught inside the store: a refusal always reaches the caller (and a refusal the bridge
raised itself is audited `denied` by `MemoryBridge.execute`).
"""

from __future__ import annotations

from bridge.errors import InvalidInput, NotPermitted, Unauthenticated

__all__ = ["NamespaceRefused", "UnknownNamespace", "StoreIdentityMissing", "UnsupportedStoreOperation"]


class NamespaceRefused(NotPermitted):
    """The namespace names an identity or place other than the caller's: refused, never rewritten."""


class UnknownNamespace(InvalidInput):
    """The namespace's first label is none of the mapped heads (see `namespaces.py`)."""


class StoreIdentityMissing(Unauthenticated):
    """The run carries no credential the bridge's identity providers could verify."""


class UnsupportedStoreOperation(InvalidInput):
    """A BaseStore feature (per-item TTL, a malformed filter, ...) the bridge cannot honour exactly."""
