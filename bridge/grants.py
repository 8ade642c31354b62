"""Explicit, expiring grants: the only way a user reads a scope the policy does not give them.

A grant names one grantee user (optionally one agent), one scope of the same tenant, who issued
it, why, and when it expires. Only a tenant admin issues or revokes grants. A recall that asks
for a granted scope is checked here at recall time: a revoked or expired grant fails closed.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from adapters.scopes import ScopeKey, Visibility
from bridge.errors import NotPermitted
from bridge.policy import ROLE_ADMIN
from bridge.sqlite import Database
from identity.ids import validate_id
from identity.model import MemoryIdentity

_SCHEMA = """
CREATE TABLE IF NOT EXISTS grants (
    grant_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    grantee_user_id TEXT NOT NULL,
    grantee_agent_id TEXT,
    scope TEXT NOT NULL,
    issued_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    issued_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    revoked_at REAL
)
"""


@dataclass(frozen=True)
class Grant:
    grant_id: str
    tenant_id: str
    grantee_user_id: str
    grantee_agent_id: str | None
    scope: ScopeKey
    issued_by: str
    reason: str
    issued_at: float
    expires_at: float
    revoked_at: float | None = None

    def active(self, now: float) -> bool:
        return self.revoked_at is None and now < self.expires_at


class GrantStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        db.executescript(_SCHEMA)

    def issue(
        self,
        admin: MemoryIdentity,
        *,
        grantee_user_id: str,
        scope: ScopeKey,
        ttl_seconds: float,
        reason: str,
        grantee_agent_id: str | None = None,
    ) -> Grant:
        if not admin.has_role(ROLE_ADMIN):
            raise NotPermitted(f"issuing a grant needs the {ROLE_ADMIN!r} role")
        validate_id(grantee_user_id, "grantee_user_id")
        if grantee_agent_id is not None:
            validate_id(grantee_agent_id, "grantee_agent_id")
        if scope.tenant_id != admin.tenant_id:
            raise NotPermitted(f"scope {scope} is not in tenant {admin.tenant_id}; grants never cross tenants")
        if scope.visibility in (Visibility.PRIVATE, Visibility.AGENT):
            raise NotPermitted("private and agent-owned scopes cannot be granted; share a memory by promotion instead")
        if not (0 < ttl_seconds <= 366 * 86400):
            raise NotPermitted("a grant must expire within a year (ttl_seconds in (0, 31622400])")
        if not reason.strip():
            raise NotPermitted("a grant needs a reason; it is shown with every result it makes visible")
        now = time.time()
        grant = Grant(uuid.uuid4().hex, admin.tenant_id, grantee_user_id, grantee_agent_id, scope, admin.principal, reason.strip(), now, now + ttl_seconds)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO grants VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (grant.grant_id, grant.tenant_id, grantee_user_id, grantee_agent_id, str(scope), grant.issued_by, grant.reason, now, grant.expires_at),
            )
        return grant

    def revoke(self, admin: MemoryIdentity, grant_id: str) -> None:
        if not admin.has_role(ROLE_ADMIN):
            raise NotPermitted(f"revoking a grant needs the {ROLE_ADMIN!r} role")
        with self.db.transaction() as conn:
            changed = conn.execute(
                "UPDATE grants SET revoked_at = ? WHERE grant_id = ? AND tenant_id = ? AND revoked_at IS NULL", (time.time(), grant_id, admin.tenant_id)
            ).rowcount
        if not changed:
            raise NotPermitted(f"no active grant {grant_id!r} in tenant {admin.tenant_id}")

    def purge_grantee(self, tenant_id: str, user_id: str) -> int:
        """Delete every grant held by `user_id` (erasure); revoked or not, they name the person."""
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM grants WHERE tenant_id = ? AND grantee_user_id = ?", (tenant_id, user_id)).rowcount

    def _row(self, row: tuple) -> Grant:
        gid, tenant, user, agent, scope, by, reason, issued, expires, revoked = row
        return Grant(gid, tenant, user, agent, ScopeKey.parse(scope), by, reason, issued, expires, revoked)

    def for_identity(self, identity: MemoryIdentity) -> list[Grant]:
        rows = self.db.query("SELECT * FROM grants WHERE tenant_id = ? AND grantee_user_id = ?", (identity.tenant_id, identity.user_id))
        return [g for g in map(self._row, rows) if g.grantee_agent_id in (None, identity.agent_id)]

    def authorise(self, identity: MemoryIdentity, scope: ScopeKey) -> Grant:
        """The active grant letting `identity` read `scope`, or `NotPermitted` (fail closed)."""
        now = time.time()
        candidates = [g for g in self.for_identity(identity) if g.scope == scope]
        active = [g for g in candidates if g.active(now)]
        if active:
            return max(active, key=lambda g: g.expires_at)
        if candidates:
            raise NotPermitted(f"the grant for {scope} has expired or was revoked")
        raise NotPermitted(f"no grant lets {identity.principal} read {scope}")
