"""The bridge's own state — audit log, grants, manifests — behind protocols.

`protocols.py` says what every implementation must guarantee; `sqlite.py` is the embedded
default (one WAL file, versioned migrations), `memory.py` a process-local one for tests and
throw-away bridges. A shared implementation (PostgreSQL, several replicas) implements the same
protocols. Repositories store and load; every permission decision is `bridge.policy`'s.
"""

from bridge.state.protocols import AuditLog, BridgeState, GrantRepository, ManifestRepository, WriteIntent
from bridge.state.records import AuditEvent, AuditView, Grant, InjectDepth, InjectionManifest

__all__ = [
    "AuditLog", "BridgeState", "GrantRepository", "ManifestRepository", "WriteIntent",
    "AuditEvent", "AuditView", "Grant", "InjectDepth", "InjectionManifest",
]
