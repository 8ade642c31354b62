"""The bridge's own state — audit log, grants, manifests — behind protocols.

`protocols.py` says what every implementation must guarantee; `sqlite/` is the embedded
default (one WAL file, versioned migrations), `memory.py` a process-local one for tests and
throw-away bridges. `postgres/` is the shared one (several replicas) behind the same protocols; `common.py` holds
the logic they all share (the manifest chain walk, the quota check), `records.py` the records. Repositories store and load; every permission decision is `bridge.policy`'s.
"""

from bridge.state.protocols import AuditLog, BridgeState, GrantRepository, ManifestRepository, WriteIntent
from bridge.state.records import AuditEvent, AuditView, Grant, InjectDepth, InjectionManifest

__all__ = [
    "AuditLog", "BridgeState", "GrantRepository", "ManifestRepository", "WriteIntent",
    "AuditEvent", "AuditView", "Grant", "InjectDepth", "InjectionManifest",
]
