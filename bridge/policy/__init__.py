"""Who may do what: every permission decision of the bridge, as pure functions.

Each method is a function of the authenticated `MemoryIdentity` plus records the bridge has
loaded and verified (grants, manifests, a stored memory's scope and provenance). Nothing here
reads a request body, caller metadata, memory content, HTTP or any backend. A refusal is a
`NotPermitted` (or `ManifestError`) naming the rule and, where one exists, the role allowing it.

Reading (default): own private, own agent-owned (same agent only), the session's task, the
current workspace, own departments, own tenant's shared scope, global. Anything else only through
a grant (labelled, weighed lower), an injection manifest, or a share / team membership
(`bridge/policy/sharing.py`).

Writing: preferences/profile/events -> private; facts/decisions -> workspace; agent experience
and procedures -> agent-owned (the task scope when the session names a task); department
standards -> department, `pending` until approved; tenant and global only for admins; a prompt
never raises visibility: the visibility is an argument checked here against roles.

Changing a status (supersede, approve) is allowed exactly where the caller may forget the memory.
Promotion only widens (private/agent < workspace < department < tenant < global), in-tenant only.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from adapters.base import Status
from adapters.scopes import ReadSource, ScopeEntry, ScopeKey, ScopeSet, Visibility
from bridge.errors import ManifestError, NotPermitted
from bridge.state.records import AuditView, Grant, InjectionManifest
from bridge.policy.config import (
    DEFAULT_VISIBILITY, PROMOTION_REACH, MAX_GRANT_TTL_SECONDS, ROLE_ADMIN, ROLE_APPROVER, ROLE_GLOBAL_ADMIN,
    PolicyConfig, PromotionDecision, Role, WriteDecision,
)
from bridge.vocabulary import Kind, Purpose
from identity.model import MemoryIdentity

__all__ = ["PolicyConfig", "Policy", "WriteDecision", "PromotionDecision", "Role", "ROLE_ADMIN", "ROLE_APPROVER", "ROLE_GLOBAL_ADMIN"]


class Policy:
    def __init__(self, config: PolicyConfig | None = None) -> None:
        self.config = config or PolicyConfig()
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
        if identity.task_id:  # seed 000 level 3: this task's working memory, no other task's
            scopes.append((ScopeKey.task(t, identity.agent_id, identity.user_id, identity.task_id), f"working memory of task {identity.task_id}"))
        if identity.workspace_id:
            scopes.append((ScopeKey.workspace(t, identity.workspace_id), f"current workspace {identity.workspace_id}"))
        for dept in sorted(identity.department_ids):
            scopes.append((ScopeKey.department(t, dept), f"member of department {dept}"))
        scopes.append((ScopeKey.tenant(t), f"shared memory of tenant {t}"))
        if self.config.include_global:
            scopes.append((ScopeKey.global_(), "global public memory"))
        return scopes

    def reads_by_default(self, identity: MemoryIdentity, key: ScopeKey) -> bool:
        return key in self.readable_scopes(identity, Purpose.CHAT)

    def scope_weight(self, purpose: Purpose, visibility: Visibility) -> float:
        return self.config.scope_weights[purpose][visibility]

    def readable_scopes(
        self,
        identity: MemoryIdentity,
        purpose: Purpose,
        *,
        grants: Sequence[Grant] = (),
        manifest: InjectionManifest | None = None,
    ) -> ScopeSet:
        """The ScopeSet for one recall.

        `grants`: active grants the caller has already matched to this identity
        (`authorise_grant`). `manifest`: a manifest `check_manifest_use` accepted. A scope
        already readable in full is not narrowed by an injection.
        """
        if not grants and manifest is None:
            cache_key = (identity.fingerprint, purpose)
            cached = self._default_sets.get(cache_key)
            if cached is None:
                if len(self._default_sets) >= 65536:
                    self._default_sets.clear()
                cached = self._default_sets[cache_key] = ScopeSet.from_entries(self._own_entries(identity, purpose).values())
            return cached
        entries = self._own_entries(identity, purpose)
        for grant in grants:
            key = grant.scope
            # never the global scope either: no grant names it (`check_grant_issue`), so a stored
            # one that does is refused, not honoured where global memory is switched off
            if key.tenant_id != identity.tenant_id or grant.tenant_id != identity.tenant_id:
                raise NotPermitted(f"grant {grant.grant_id} names scope {key}, not of tenant {identity.tenant_id}: grants never reach another tenant or the global scope")
            if key in entries:
                continue
            weight = min(self.config.grant_weight, self.scope_weight(purpose, key.visibility))
            entries[key] = ScopeEntry(key, weight, f"authorised by grant {grant.grant_id}", grant_id=grant.grant_id, source=ReadSource.GRANT)
        if manifest is not None:
            for key, ids in manifest.by_scope().items():
                if key.tenant_id not in (identity.tenant_id, None):
                    raise NotPermitted(f"manifest {manifest.manifest_id} names scope {key} of another tenant")
                if key in entries and entries[key].memory_ids is None:
                    continue
                weight = self.config.injected_weight * self.scope_weight(purpose, key.visibility)
                entries[key] = ScopeEntry(
                    key, weight, f"injected by {manifest.issuer}", grant_id=manifest.manifest_id,
                    memory_ids=ids, source=ReadSource.MANIFEST, injected_by=manifest.issuer,
                )
        return ScopeSet.from_entries(entries.values())

    def _own_entries(self, identity: MemoryIdentity, purpose: Purpose) -> dict[ScopeKey, ScopeEntry]:
        return {key: ScopeEntry(key, self.scope_weight(purpose, key.visibility), reason) for key, reason in self.own_scopes(identity)}

    def authorise_grant(self, identity: MemoryIdentity, scope: ScopeKey, grants: Iterable[Grant], now: float) -> Grant:
        """The active grant among `grants` letting `identity` read `scope`, or `NotPermitted`."""
        candidates = [
            g for g in grants
            if g.scope == scope and g.tenant_id == identity.tenant_id and g.grantee_user_id == identity.user_id
            and g.grantee_agent_id in (None, identity.agent_id)
        ]
        active = [g for g in candidates if g.active(now)]
        if active:
            return max(active, key=lambda g: g.expires_at)
        if candidates:
            raise NotPermitted(f"the grant for {scope} has expired or was revoked")
        raise NotPermitted(f"no grant lets {identity.principal} read {scope}")

    # -- writing ------------------------------------------------------------------------
    def default_visibility(self, kind: Kind) -> Visibility:
        return DEFAULT_VISIBILITY[kind]

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
        if v is Visibility.TASK and not identity.task_id:
            raise NotPermitted("cannot write task memory: the authenticated session names no task_id")
        if identity.task_id and (v is Visibility.TASK or (v is Visibility.AGENT and visibility is None)):
            return WriteDecision(ScopeKey.task(t, identity.agent_id, identity.user_id, identity.task_id), Status.ACTIVE, f"working memory of task {identity.task_id}")
        if v is Visibility.AGENT:
            return WriteDecision(ScopeKey.agent(t, identity.agent_id, identity.user_id), Status.ACTIVE, f"memory of agent {identity.agent_id}")
        if v is Visibility.WORKSPACE:
            assert identity.workspace_id is not None
            return WriteDecision(ScopeKey.workspace(t, identity.workspace_id), Status.ACTIVE, "current workspace")
        if v is Visibility.DEPARTMENT:
            dept = self._department(identity, department_id, "department writes")
            status = Status.ACTIVE if identity.has_role(Role.APPROVER) else Status.PENDING
            return WriteDecision(ScopeKey.department(t, dept), status, "department shared (approval required)" if status is Status.PENDING else "department shared, written by an approver")
        if v is Visibility.TENANT:
            if not identity.has_role(Role.ADMIN):
                raise NotPermitted(f"writing tenant-wide memory needs the {ROLE_ADMIN!r} role; propose it with promote() instead")
            return WriteDecision(ScopeKey.tenant(t), Status.ACTIVE, "tenant shared, written by an admin")
        if v is Visibility.GLOBAL:
            self.require_global_writer(identity)
            return WriteDecision(ScopeKey.global_(), Status.ACTIVE, "global, written by a global admin")
        raise NotPermitted(f"unknown visibility {v!r}")  # pragma: no cover - enum is closed

    @staticmethod
    def _department(identity: MemoryIdentity, department_id: str | None, what: str) -> str:
        dept = department_id or (next(iter(identity.department_ids)) if len(identity.department_ids) == 1 else None)
        if dept is None:
            raise NotPermitted(f"{what} need department_id when the identity belongs to {len(identity.department_ids)} departments")
        if dept not in identity.department_ids:
            raise NotPermitted(f"not a member of department {dept!r}; department memory can only be proposed by members")
        return dept

    def is_global_writer(self, identity: MemoryIdentity) -> bool:
        return identity.has_role(Role.GLOBAL_ADMIN) and identity.tenant_id in self.config.global_writer_tenants

    def require_global_writer(self, identity: MemoryIdentity) -> None:
        if not self.is_global_writer(identity):
            raise NotPermitted(
                f"writing global memory needs the {ROLE_GLOBAL_ADMIN!r} role in a tenant listed in "
                "PolicyConfig.global_writer_tenants (global memory reaches every tenant)"
            )

    # -- changing memories ----------------------------------------------------------------
    def is_own_scope(self, identity: MemoryIdentity, key: ScopeKey) -> bool:
        """True for the identity's own private scope, its own agent's scope and its task's scope."""
        return key in {k for k, _ in self.own_scopes(identity)[:3]} and key.personal_user_id == identity.user_id

    def may_fetch_for_change(self, identity: MemoryIdentity, key: ScopeKey) -> bool:
        """May the identity look a memory up by reference in `key` in order to change it?
        Its default scopes; a tenant admin any scope of their own tenant."""
        if identity.has_role(Role.ADMIN) and key.tenant_id == identity.tenant_id:
            return True
        return any(key == k for k, _ in self.own_scopes(identity))

    def may_forget(self, identity: MemoryIdentity, key: ScopeKey, author_user_id: str, author_tenant_id: str | None = None) -> bool:
        """Own scopes; memories one authored in a readable shared scope; anything of the tenant
        for its admin; global memories for a global writer of the tenant that wrote them."""
        if key.visibility is Visibility.GLOBAL:
            return self.is_global_writer(identity) and author_tenant_id == identity.tenant_id
        if key.tenant_id != identity.tenant_id:
            return False
        if identity.has_role(Role.ADMIN) or self.is_own_scope(identity, key):
            return True
        readable = {k for k, _ in self.own_scopes(identity)}
        return key in readable and author_user_id == identity.user_id

    def may_change_status(self, identity: MemoryIdentity, key: ScopeKey, author_user_id: str, author_tenant_id: str | None = None) -> bool:
        """Supersede, reject, edit: exactly where the caller may also forget the memory."""
        return self.may_forget(identity, key, author_user_id, author_tenant_id)

    def check_not_injected(self, identity: MemoryIdentity, key: ScopeKey, memory_id: str, held: Iterable[InjectionManifest]) -> None:
        """Injected memories are read-only to the child (seed 000 4.3): refuse any change to a
        memory that a live manifest handed to the calling agent of this user. `held`: the live
        manifests holding the memory. Decided by the manifest, not by authorship — the child
        acts for the same user as its parent, so "the user wrote it" (a private memory, or a
        workspace memory the user wrote through the parent) says nothing about who may change it.
        A memory the child may change in its own right stays read-only while it is injected
        into it: the refusal fails closed rather than guessing which right applies."""
        for m in held:
            if (m.tenant_id == identity.tenant_id and m.user_id == identity.user_id and m.child_agent_id == identity.agent_id
                    and (key, memory_id) in m.entries):
                raise NotPermitted(
                    f"{identity.principal} may not change {key}#{memory_id}: it was injected into agent {identity.agent_id} "
                    f"by {m.parent_agent_id} (manifest {m.manifest_id}), and injected memories are read-only"
                )

    def may_approve(self, identity: MemoryIdentity, key: ScopeKey) -> bool:
        if key.tenant_id != identity.tenant_id:
            return False
        if identity.has_role(Role.ADMIN):
            return True
        if not identity.has_role(Role.APPROVER):
            return False
        if key.visibility is Visibility.DEPARTMENT:
            return key.owner_id in identity.department_ids
        if key.visibility is Visibility.WORKSPACE:
            return key.owner_id == identity.workspace_id
        return False

    def decide_promotion(
        self, identity: MemoryIdentity, source_scope: ScopeKey, author_user_id: str, author_tenant_id: str | None,
        to: Visibility, *, department_id: str | None = None,
    ) -> PromotionDecision:
        """Promotion widens a memory's visibility: admins directly, anyone else by a pending proposal.

        Refused: another tenant's memory (global memories included) for anyone but a global
        writer of the tenant that wrote it; a target that does not widen; a non-author
        non-admin. The source is superseded only where the caller may also forget it.
        """
        t = identity.tenant_id
        own_tenant = source_scope.tenant_id == t or (source_scope.visibility is Visibility.GLOBAL and author_tenant_id == t and self.is_global_writer(identity))
        if not own_tenant:
            raise NotPermitted(f"{identity.principal} may not promote {source_scope}: it is not a memory of tenant {t}")
        admin = identity.has_role(Role.ADMIN)
        if author_user_id != identity.user_id and not admin:
            raise NotPermitted("only the author or a tenant admin may propose changing a memory's visibility")
        if to is Visibility.WORKSPACE and identity.workspace_id:
            target = ScopeKey.workspace(t, identity.workspace_id)
        elif to is Visibility.DEPARTMENT:
            target = ScopeKey.department(t, self._department(identity, department_id, "promotions to a department"))
        elif to is Visibility.TENANT:
            target = ScopeKey.tenant(t)
        elif to is Visibility.GLOBAL:
            self.require_global_writer(identity)
            target = ScopeKey.global_()
        else:
            raise NotPermitted(f"cannot promote to {to.value}: promotion only widens to workspace, department, tenant or global")
        if PROMOTION_REACH[target.visibility] <= PROMOTION_REACH[source_scope.visibility]:
            raise NotPermitted(
                f"promotion only widens: {source_scope.visibility.value} -> {target.visibility.value} does not; "
                "to narrow a memory's visibility, remember a narrower copy and forget the original"
            )
        direct = admin or to is Visibility.GLOBAL
        supersede = direct and self.may_change_status(identity, source_scope, author_user_id, author_tenant_id)
        return PromotionDecision(
            target, Status.ACTIVE if direct else Status.PENDING, supersede,
            "promoted by an admin" if direct else "promotion proposal awaiting approval",
        )

    def may_erase_subject(self, identity: MemoryIdentity, subject_user_id: str) -> None:
        """The subject themself, or a tenant admin (for users of their own tenant only)."""
        if subject_user_id != identity.user_id and not identity.has_role(Role.ADMIN):
            raise NotPermitted(f"forgetting user {subject_user_id!r} needs the {ROLE_ADMIN!r} role")

    def includes_global_of(self, tenant_id: str) -> bool:
        """Whether erasure must look in the global scope for this tenant's memories."""
        return self.config.include_global or tenant_id in self.config.global_writer_tenants

    # -- grants ---------------------------------------------------------------------------
    def check_grant_issue(self, admin: MemoryIdentity, scope: ScopeKey, ttl_seconds: float, reason: str) -> None:
        if not admin.has_role(Role.ADMIN):
            raise NotPermitted(f"issuing a grant needs the {ROLE_ADMIN!r} role")
        if scope.tenant_id != admin.tenant_id:
            raise NotPermitted(f"scope {scope} is not in tenant {admin.tenant_id}; grants never cross tenants")
        if scope.visibility in (Visibility.PRIVATE, Visibility.AGENT, Visibility.TASK, Visibility.TEAM):
            raise NotPermitted("private, agent-owned, task and team scopes cannot be granted; share by visible_to, team membership or promotion")
        if not (0 < ttl_seconds <= MAX_GRANT_TTL_SECONDS):
            raise NotPermitted(f"a grant must expire within a year (ttl_seconds in (0, {MAX_GRANT_TTL_SECONDS}])")
        if not reason.strip():
            raise NotPermitted("a grant needs a reason; it is shown with every result it makes visible")

    def check_grant_revoke(self, admin: MemoryIdentity, grant: Grant | None, grant_id: str) -> None:
        if not admin.has_role(Role.ADMIN):
            raise NotPermitted(f"revoking a grant needs the {ROLE_ADMIN!r} role")
        if grant is None or grant.tenant_id != admin.tenant_id or grant.revoked_at is not None:
            raise NotPermitted(f"no active grant {grant_id!r} in tenant {admin.tenant_id}")

    # -- injection ------------------------------------------------------------------------
    def check_inject(self, parent: MemoryIdentity, child_agent_id: str, source: InjectionManifest | None) -> None:
        """A parent never injects into itself; a re-injection needs a manifest that allows it."""
        if child_agent_id == parent.agent_id:
            raise ManifestError(f"agent {parent.agent_id} cannot inject memories into itself")
        if source is not None and not source.may_reinject:
            raise ManifestError(f"manifest {source.manifest_id} does not allow re-injection")

    def check_manifest_use(self, child: MemoryIdentity, manifest: InjectionManifest, chain: Sequence[InjectionManifest], now: float) -> None:
        """`manifest` was issued to exactly this child, and it and every manifest it was derived
        from (`chain`, nearest first) are still usable: revoking or expiring a source ends it."""
        if (manifest.tenant_id, manifest.user_id, manifest.child_agent_id) != (child.tenant_id, child.user_id, child.agent_id):
            # worded exactly as a manifest that does not exist: another tenant's (or user's, or
            # agent's) manifest id must not be told apart from a made-up one
            raise ManifestError(f"no injection manifest {manifest.manifest_id!r}")
        last = chain[-1] if chain else manifest
        if last.parent_manifest_id is not None:
            raise ManifestError(f"manifest {manifest.manifest_id} derives from {last.parent_manifest_id}, which no longer exists")
        for m in (manifest, *chain):
            if m.revoked_at is not None:
                raise ManifestError(f"manifest {manifest.manifest_id} expired: " + ("it was revoked" if m is manifest else f"its source {m.manifest_id} was revoked"))
            if now >= m.expires_at:
                raise ManifestError(f"manifest {manifest.manifest_id} expired" + ("" if m is manifest else f" (its source {m.manifest_id} did)"))

    def check_manifest_revoke(self, identity: MemoryIdentity, manifest: InjectionManifest | None, chain: Sequence[InjectionManifest], manifest_id: str) -> None:
        """The agent that issued it or any manifest it derives from, or a tenant admin."""
        if manifest is not None and manifest.tenant_id == identity.tenant_id:
            if identity.has_role(Role.ADMIN):
                return
            issuers = {(m.tenant_id, m.user_id, m.parent_agent_id) for m in (manifest, *chain)}
            if (identity.tenant_id, identity.user_id, identity.agent_id) in issuers:
                return
        raise ManifestError(f"no manifest {manifest_id!r} issued by {identity.principal}")

    # -- audit ----------------------------------------------------------------------------
    def audit_view(self, identity: MemoryIdentity) -> AuditView:
        """A tenant admin sees the tenant's rows; anyone else the rows of their own user (all
        of their agents) — by user_id, never by the ambiguous display principal."""
        return AuditView(identity.tenant_id, None if identity.has_role(Role.ADMIN) else identity.user_id)

