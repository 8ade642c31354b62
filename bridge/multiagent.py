"""Injection manifests: a parent agent hands a child agent exactly the memories of one task.

Seeds 000 and 002: a child sees its own memory, team (workspace) memory, and exactly what its
parent injected — marked `injected_by`, read-only, nothing else of the parent's. Rules:

- only memories the parent itself may read *now* (through its own scopes, not through another
  manifest) can be injected, so a child cannot re-inject what it was given unless the manifest
  says `may_reinject` (and then only to its own children, for the same user);
- an agent cannot inject into itself;
- a manifest is bound to (tenant, user, child agent) and expires;
- depth: `minimal` (the task's top 3), `standard` (top 8), `full` (top 20) of the parent's
  readable memories for the task text, or an explicit list of memory ids.
"""

from __future__ import annotations

import enum
import json
import time
import uuid
from dataclasses import dataclass

from adapters.scopes import ScopeKey
from bridge.errors import ManifestError
from bridge.sqlite import Database
from identity.model import MemoryIdentity

_SCHEMA = """
CREATE TABLE IF NOT EXISTS manifests (
    manifest_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    parent_agent_id TEXT NOT NULL,
    child_agent_id TEXT NOT NULL,
    task TEXT NOT NULL,
    depth TEXT NOT NULL,
    entries TEXT NOT NULL,
    may_reinject INTEGER NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
)
"""


class InjectDepth(str, enum.Enum):
    MINIMAL = "minimal"
    STANDARD = "standard"
    FULL = "full"

    @property
    def limit(self) -> int:
        return {"minimal": 3, "standard": 8, "full": 20}[self.value]


@dataclass(frozen=True)
class InjectionManifest:
    manifest_id: str
    tenant_id: str
    user_id: str
    parent_agent_id: str
    child_agent_id: str
    task: str
    depth: InjectDepth
    entries: tuple[tuple[ScopeKey, str], ...]  # (scope, memory id)
    may_reinject: bool
    created_at: float
    expires_at: float

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(mid for _, mid in self.entries)

    def by_scope(self) -> dict[ScopeKey, frozenset[str]]:
        out: dict[ScopeKey, set[str]] = {}
        for key, mid in self.entries:
            out.setdefault(key, set()).add(mid)
        return {k: frozenset(v) for k, v in out.items()}


class ManifestStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        db.executescript(_SCHEMA)

    def create(
        self,
        parent: MemoryIdentity,
        child_agent_id: str,
        task: str,
        depth: InjectDepth,
        entries: list[tuple[ScopeKey, str]],
        *,
        ttl_seconds: float,
        may_reinject: bool,
        expires_at_most: float | None = None,
    ) -> InjectionManifest:
        if child_agent_id == parent.agent_id:
            raise ManifestError(f"agent {parent.agent_id} cannot inject memories into itself")
        if not entries:
            raise ManifestError("nothing to inject: the parent may read none of the requested memories for this task")
        now = time.time()
        expires = now + ttl_seconds if expires_at_most is None else min(now + ttl_seconds, expires_at_most)
        manifest = InjectionManifest(
            uuid.uuid4().hex, parent.tenant_id, parent.user_id, parent.agent_id, child_agent_id, task, depth,
            tuple(entries), may_reinject, now, expires,
        )
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO manifests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    manifest.manifest_id, manifest.tenant_id, manifest.user_id, manifest.parent_agent_id, child_agent_id,
                    task, depth.value, json.dumps([[str(k), m] for k, m in entries]), int(may_reinject), now, manifest.expires_at,
                ),
            )
        return manifest

    def load_for(self, child: MemoryIdentity, manifest_id: str) -> InjectionManifest:
        """The manifest if it was made for exactly this child; `ManifestError` otherwise."""
        rows = self.db.query("SELECT * FROM manifests WHERE manifest_id = ?", (manifest_id,))
        if not rows:
            raise ManifestError(f"no injection manifest {manifest_id!r}")
        mid, tenant, user, parent_agent, child_agent, task, depth, entries, reinject, created, expires = rows[0]
        if (tenant, user, child_agent) != (child.tenant_id, child.user_id, child.agent_id):
            raise ManifestError(f"manifest {manifest_id} was not issued to {child.principal}")
        if time.time() >= expires:
            raise ManifestError(f"manifest {manifest_id} expired")
        return InjectionManifest(
            mid, tenant, user, parent_agent, child_agent, task, InjectDepth(depth),
            tuple((ScopeKey.parse(k), m) for k, m in json.loads(entries)), bool(reinject), created, expires,
        )

    def revoke(self, parent: MemoryIdentity, manifest_id: str, *, as_admin: bool = False) -> None:
        """Expire a manifest now. Its issuer (same tenant, user and agent) or a tenant admin."""
        with self.db.transaction() as conn:
            row = conn.execute("SELECT tenant_id, user_id, parent_agent_id FROM manifests WHERE manifest_id = ?", (manifest_id,)).fetchone()
            issuer = row is not None and tuple(row) == (parent.tenant_id, parent.user_id, parent.agent_id)
            if row is None or not (issuer or (as_admin and row[0] == parent.tenant_id)):
                raise ManifestError(f"no manifest {manifest_id!r} issued by {parent.principal}")
            conn.execute("UPDATE manifests SET expires_at = ? WHERE manifest_id = ?", (time.time(), manifest_id))

    def purge_memory_ids(self, memory_ids: set[str]) -> int:
        """Remove forgotten memories from every manifest (forget leaves no trace here)."""
        changed = 0
        with self.db.transaction() as conn:
            for mid, entries in conn.execute("SELECT manifest_id, entries FROM manifests").fetchall():
                kept = [e for e in json.loads(entries) if e[1] not in memory_ids]
                if len(kept) != len(json.loads(entries)):
                    conn.execute("UPDATE manifests SET entries = ? WHERE manifest_id = ?", (json.dumps(kept), mid))
                    changed += 1
        return changed

    def purge_user(self, tenant_id: str, user_id: str) -> int:
        """Delete every manifest issued for `user_id` (erasure: their task texts go too)."""
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM manifests WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id)).rowcount
