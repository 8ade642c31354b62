"""Who may read and write where: the permission policy of seed 003 and DESIGN.md.

Everything here is a pure function of the authenticated `MemoryIdentity` (plus grants and
manifests the bridge has verified). Nothing here reads a request body, metadata or memory
content, and nothing here knows about HTTP or any backend.

Reading (default): own private, own agent-owned (same agent only), the current workspace, own
departments, own tenant's shared scope, global. Anything else only through an explicit grant,
labelled with the grant and weighed lower.

Writing: preferences/profile/events -> private; facts/decisions -> workspace; agent experience
and procedures -> agent-owned (or workspace if asked); department standards -> department as
`pending` until an approver approves; tenant and global only for admins; a prompt can never
raise visibility because the visibility is an argument checked here against roles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adapters.base import Status
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet, Visibility
from bridge.errors import NotPermitted
from bridge.vocabulary import Kind, Purpose
from identity.model import MemoryIdentity

__all__ = ["PolicyConfig", "Policy", "WriteDecision", "ROLE_ADMIN", "ROLE_APPROVER", "ROLE_GLOBAL_ADMIN"]

ROLE_ADMIN = "admin"  # tenant admin: visibility changes, tenant-wide writes, grants, audit
ROLE_APPROVER = "approver"  # approves pending department/workspace memories
ROLE_GLOBAL_ADMIN = "global_admin"  # may write the global scope — only in a global-writer tenant

# Seed 003 default weights, and the purpose orderings it describes.
_CHAT_WEIGHTS = {
    Visibility.PRIVATE: 1.00,
    Visibility.AGENT: 0.97,
    Visibility.WORKSPACE: 0.95,
    Visibility.DEPARTMENT: 0.85,
    Visibility.TENANT: 0.70,
    Visibility.GLOBAL: 0.50,
}
_CODING_WEIGHTS = {
    Visibility.WORKSPACE: 1.00,
    Visibility.AGENT: 0.95,
    Visibility.DEPARTMENT: 0.90,
    Visibility.PRIVATE: 0.85,
    Visibility.TENANT: 0.65,
    Visibility.GLOBAL: 0.50,
}
_CHAT_KINDS = {Kind.PROFILE: 1.0, Kind.PREFERENCE: 1.0, Kind.EVENT: 0.95}
_CODING_KINDS = {Kind.DECISION: 1.0, Kind.FACT: 1.0, Kind.PROCEDURE: 0.97, Kind.EXPERIENCE: 0.95, Kind.STANDARD: 0.93, Kind.PREFERENCE: 0.9}

_DEFAULT_VISIBILITY = {
    Kind.PROFILE: Visibility.PRIVATE,
    Kind.PREFERENCE: Visibility.PRIVATE,
    Kind.EVENT: Visibility.PRIVATE,
    Kind.NOTE: Visibility.PRIVATE,
    Kind.FACT: Visibility.WORKSPACE,
    Kind.DECISION: Visibility.WORKSPACE,
    Kind.PROCEDURE: Visibility.AGENT,
    Kind.EXPERIENCE: Visibility.AGENT,
    Kind.STANDARD: Visibility.DEPARTMENT,
}


@dataclass(frozen=True)
class PolicyConfig:
    """Tunable numbers. Weights are in [0, 1]; grants always weigh at most `grant_weight`."""

    scope_weights: dict[Purpose, dict[Visibility, float]] = field(
        default_factory=lambda: {Purpose.CHAT: dict(_CHAT_WEIGHTS), Purpose.CODING: dict(_CODING_WEIGHTS)}
    )
    kind_weights: dict[Purpose, dict[Kind, float]] = field(
        default_factory=lambda: {Purpose.CHAT: dict(_CHAT_KINDS), Purpose.CODING: dict(_CODING_KINDS)}
    )
    other_kind_weight: float = 0.9
    grant_weight: float = 0.6  # cross-scope results rank below the caller's own scopes
    injected_weight: float = 0.9
    include_global: bool = True
    # Tenants whose `global_admin`s may write the global scope every tenant reads. Empty by
    # default: a role is asserted by the tenant's own IdP, so without this list any tenant's
    # admin could inject text into every other tenant's context.
    global_writer_tenants: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WriteDecision:
    scope: ScopeKey
    status: Status
    reason: str


class Policy:
    def __init__(self, config: PolicyConfig | None = None) -> None:
        self.config = config or PolicyConfig()
        self._kind_weights = {p: {k.value: w for k, w in ws.items()} for p, ws in self.config.kind_weights.items()}
        # Default ScopeSets by (fingerprint, purpose): the fingerprint covers every field they
        # depend on, and a ScopeSet is immutable, so a hit is exactly what a rebuild would give.
        self._default_sets: dict[tuple[str, Purpose], ScopeSet] = {}

    # -- reading ------------------------------------------------------------------------
    def own_scopes(self, identity: MemoryIdentity) -> list[tuple[ScopeKey, str]]:
        """The scopes an identity reads by default, with the reason each is readable."""
        t = identity.tenant_id
        scopes = [
            (ScopeKey.private(t, identity.user_id), "own private memory"),
            (ScopeKey.agent(t, identity.agent_id, identity.user_id), f"memory of agent {identity.agent_id} for this user"),
        ]
        if identity.workspace_id:
            scopes.append((ScopeKey.workspace(t, identity.workspace_id), f"current workspace {identity.workspace_id}"))
        for dept in sorted(identity.department_ids):
            scopes.append((ScopeKey.department(t, dept), f"member of department {dept}"))
        scopes.append((ScopeKey.tenant(t), f"shared memory of tenant {t}"))
        if self.config.include_global:
            scopes.append((ScopeKey.global_(), "global public memory"))
        return scopes

    def scope_weight(self, purpose: Purpose, visibility: Visibility) -> float:
        return self.config.scope_weights[purpose][visibility]

    def kind_weight(self, purpose: Purpose, kind: str) -> float:
        # keyed by the kind's string value: no enum construction per hit on the recall path
        return self._kind_weights[purpose].get(kind, self.config.other_kind_weight)

    def readable_scopes(
        self,
        identity: MemoryIdentity,
        purpose: Purpose,
        *,
        granted: list[tuple[ScopeKey, str]] | None = None,
        injected: list[tuple[ScopeKey, frozenset[str], str, str]] | None = None,
    ) -> ScopeSet:
        """The ScopeSet for one recall.

        `granted`: (scope, grant_id) pairs the bridge has verified are active grants for this
        identity. `injected`: (scope, memory_ids, manifest_id, parent principal) from a verified
        injection manifest. A scope already readable in full is not narrowed by an injection.
        """
        if not granted and not injected:
            cache_key = (identity.fingerprint, purpose)
            cached = self._default_sets.get(cache_key)
            if cached is None:
                if len(self._default_sets) >= 65536:
                    self._default_sets.clear()
                cached = self._default_sets[cache_key] = self._build_scopes(identity, purpose, None, None)
            return cached
        return self._build_scopes(identity, purpose, granted, injected)

    def _build_scopes(
        self,
        identity: MemoryIdentity,
        purpose: Purpose,
        granted: list[tuple[ScopeKey, str]] | None,
        injected: list[tuple[ScopeKey, frozenset[str], str, str]] | None,
    ) -> ScopeSet:
        entries: dict[ScopeKey, ScopeEntry] = {}
        for key, reason in self.own_scopes(identity):
            entries[key] = ScopeEntry(key, self.scope_weight(purpose, key.visibility), reason)
        for key, grant_id in granted or ():
            if key.tenant_id not in (identity.tenant_id, None):
                raise NotPermitted(f"grant {grant_id} names scope {key} of another tenant; cross-tenant reads are never allowed")
            if key in entries:
                continue
            weight = min(self.config.grant_weight, self.scope_weight(purpose, key.visibility))
            entries[key] = ScopeEntry(key, weight, f"authorised by grant {grant_id}", grant_id=grant_id)
        for key, ids, manifest_id, parent in injected or ():
            if key.tenant_id not in (identity.tenant_id, None):
                raise NotPermitted(f"manifest {manifest_id} names scope {key} of another tenant")
            if key in entries and entries[key].memory_ids is None:
                continue
            weight = self.config.injected_weight * self.scope_weight(purpose, key.visibility)
            entries[key] = ScopeEntry(key, weight, f"injected by {parent}", grant_id=manifest_id, memory_ids=frozenset(ids))
        return ScopeSet.from_entries(entries.values())

    # -- writing ------------------------------------------------------------------------
    def default_visibility(self, kind: Kind) -> Visibility:
        return _DEFAULT_VISIBILITY[kind]

    def decide_write(self, identity: MemoryIdentity, kind: Kind, visibility: Visibility | None, *, department_id: str | None = None) -> WriteDecision:
        """Where a new memory lands and with which status; `NotPermitted` if it may not."""
        v = visibility or self.default_visibility(kind)
        t = identity.tenant_id
        if v is Visibility.WORKSPACE and not identity.workspace_id:
            if visibility is None:  # default for facts/decisions outside a workspace: stay private
                v = Visibility.PRIVATE
            else:
                raise NotPermitted("cannot write to a workspace: the authenticated session has no workspace_id")
        if v is Visibility.PRIVATE:
            return WriteDecision(ScopeKey.private(t, identity.user_id), Status.ACTIVE, "own private memory")
        if v is Visibility.AGENT:
            return WriteDecision(ScopeKey.agent(t, identity.agent_id, identity.user_id), Status.ACTIVE, f"memory of agent {identity.agent_id}")
        if v is Visibility.WORKSPACE:
            assert identity.workspace_id is not None
            return WriteDecision(ScopeKey.workspace(t, identity.workspace_id), Status.ACTIVE, "current workspace")
        if v is Visibility.DEPARTMENT:
            dept = department_id or (next(iter(identity.department_ids)) if len(identity.department_ids) == 1 else None)
            if dept is None:
                raise NotPermitted(
                    "department writes need department_id when the identity belongs to "
                    f"{len(identity.department_ids)} departments"
                )
            if dept not in identity.department_ids:
                raise NotPermitted(f"not a member of department {dept!r}; department memory can only be proposed by members")
            status = Status.ACTIVE if identity.has_role(ROLE_APPROVER) else Status.PENDING
            return WriteDecision(ScopeKey.department(t, dept), status, "department shared (approval required)" if status is Status.PENDING else "department shared, written by an approver")
        if v is Visibility.TENANT:
            if not identity.has_role(ROLE_ADMIN):
                raise NotPermitted(f"writing tenant-wide memory needs the {ROLE_ADMIN!r} role; propose it with promote() instead")
            return WriteDecision(ScopeKey.tenant(t), Status.ACTIVE, "tenant shared, written by an admin")
        if v is Visibility.GLOBAL:
            self.require_global_writer(identity)
            return WriteDecision(ScopeKey.global_(), Status.ACTIVE, "global, written by a global admin")
        raise NotPermitted(f"unknown visibility {v!r}")  # pragma: no cover - enum is closed

    def is_global_writer(self, identity: MemoryIdentity) -> bool:
        return identity.has_role(ROLE_GLOBAL_ADMIN) and identity.tenant_id in self.config.global_writer_tenants

    def require_global_writer(self, identity: MemoryIdentity) -> None:
        if not self.is_global_writer(identity):
            raise NotPermitted(
                f"writing global memory needs the {ROLE_GLOBAL_ADMIN!r} role in a tenant listed in "
                "PolicyConfig.global_writer_tenants (global memory reaches every tenant)"
            )

    def is_own_scope(self, identity: MemoryIdentity, key: ScopeKey) -> bool:
        """True for the identity's own private scope and its own agent's scope."""
        return key in (
            ScopeKey.private(identity.tenant_id, identity.user_id),
            ScopeKey.agent(identity.tenant_id, identity.agent_id, identity.user_id),
        )

    def may_approve(self, identity: MemoryIdentity, key: ScopeKey) -> bool:
        if key.tenant_id != identity.tenant_id:
            return False
        if identity.has_role(ROLE_ADMIN):
            return True
        if not identity.has_role(ROLE_APPROVER):
            return False
        if key.visibility is Visibility.DEPARTMENT:
            return key.owner_id in identity.department_ids
        if key.visibility is Visibility.WORKSPACE:
            return key.owner_id == identity.workspace_id
        return False

    def may_forget(self, identity: MemoryIdentity, key: ScopeKey, author_user_id: str, author_tenant_id: str | None = None) -> bool:
        """Own scopes; memories one authored in a readable shared scope; anything for an admin;
        global memories for a global writer of the tenant that wrote them."""
        if key.visibility is Visibility.GLOBAL:
            return self.is_global_writer(identity) and author_tenant_id == identity.tenant_id
        if key.tenant_id != identity.tenant_id:
            return False
        if identity.has_role(ROLE_ADMIN):
            return True
        if self.is_own_scope(identity, key):
            return True
        readable = {k for k, _ in self.own_scopes(identity)}
        return key in readable and key.visibility is not Visibility.GLOBAL and author_user_id == identity.user_id
