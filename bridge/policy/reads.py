"""Who may read what by reference: the permission rules of the read API.

Pure functions over `bridge.policy.Policy`, kept beside it so the policy module stays one screen
of rules per concern: get a memory by reference, list a scope, the approval queue, in-place
edits, listing grants. Same rules as recall: a default scope or an active grant, never another
tenant's scope; a non-active memory only for its author, its approvers and whoever may change it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import NotPermitted
from bridge.policy import ROLE_ADMIN, Policy, Role
from bridge.state.records import Grant, InjectionManifest
from identity.model import MemoryIdentity

__all__ = ["default_read_scopes", "HISTORY_HIDDEN_ACTIONS", "read_reason", "may_see_status", "approves_anything", "approvable_scopes", "may_edit", "grants_subject", "export_scopes", "exports", "may_purge_expired"]


def read_reason(policy: Policy, identity: MemoryIdentity, key: ScopeKey, grants: Iterable[Grant], now: float) -> str:
    """Why `identity` may read memories of `key` by reference: a default scope or an active
    grant (same rules as recall). `NotPermitted` otherwise — never another tenant's scope."""
    for own, reason in policy.own_scopes(identity):
        if own == key:
            return reason
    if key.tenant_id != identity.tenant_id:
        raise NotPermitted(f"{identity.principal} may not read {key}: cross-tenant reads are never allowed")
    return f"authorised by grant {policy.authorise_grant(identity, key, grants, now).grant_id}"


def default_read_scopes(policy: Policy, identity: MemoryIdentity, teams: Iterable[str]) -> list[tuple[ScopeKey, str]]:
    """What "all my memories" and "this id" (no scope named) may look in: the scopes the
    identity reads by default plus the teams its agent belongs to, each with why. Grants and
    injections are not included: a scope-less read never gives a wider view than recall's
    default, so a memory outside it is answered as absent, exactly like one that does not exist."""
    scopes = list(policy.own_scopes(identity))
    scopes += [(ScopeKey.team(identity.tenant_id, team), f"member of team {team}") for team in sorted(set(teams))]
    return scopes


#: Audit rows left out of a memory's edit history: who *read* it is not a change to it.
HISTORY_HIDDEN_ACTIONS = frozenset({"recall", "export"})


def may_see_status(policy: Policy, identity: MemoryIdentity, key: ScopeKey, status: Status, author_user_id: str) -> bool:
    """Active memories are for every reader; a pending or superseded one only for its author,
    the approvers of its scope, and whoever may change it."""
    if status is Status.ACTIVE:
        return True
    return author_user_id == identity.user_id or policy.may_approve(identity, key)


def approves_anything(identity: MemoryIdentity) -> bool:
    """Whether an approval queue exists for this identity at all (approver or tenant admin)."""
    return identity.has_role(Role.APPROVER) or identity.has_role(Role.ADMIN)


def approvable_scopes(policy: Policy, identity: MemoryIdentity, tenant_scopes: Iterable[ScopeKey]) -> list[ScopeKey]:
    """The scopes whose pending memories await this identity (the approval queue)."""
    shared = (Visibility.WORKSPACE, Visibility.DEPARTMENT, Visibility.TENANT)
    return sorted((k for k in set(tenant_scopes) if k.visibility in shared and policy.may_approve(identity, k)), key=str)


def may_edit(policy: Policy, identity: MemoryIdentity, key: ScopeKey, author_user_id: str, author_tenant_id: str | None) -> bool:
    """Edit in place exactly where the caller may look the memory up to change it and may also
    forget it — so a child can never edit what a parent injected into it."""
    return policy.may_fetch_for_change(identity, key) and policy.may_change_status(identity, key, author_user_id, author_tenant_id)


def grants_subject(identity: MemoryIdentity, grantee_user_id: str | None) -> str:
    """Whose grants the caller may list: their own; anyone's of the tenant for its admin."""
    if grantee_user_id is None or grantee_user_id == identity.user_id:
        return identity.user_id
    if not identity.has_role(Role.ADMIN):
        raise NotPermitted(f"listing the grants of another user needs the {ROLE_ADMIN!r} role")
    return grantee_user_id


def export_scopes(policy: Policy, identity: MemoryIdentity, tenant_scopes: Iterable[ScopeKey]) -> list[ScopeKey]:
    """What an export (the GDPR right of access, a tenant's data portability) may walk: for a
    tenant admin every scope of the tenant; for anyone else the scopes they read by default
    (`exports` then keeps, in shared scopes, only what they wrote or what is about them).
    Never another tenant's scope, never the global scope (it is nobody's export)."""
    tenant = identity.tenant_id
    if identity.has_role(Role.ADMIN):
        return sorted({k for k in tenant_scopes if k.tenant_id == tenant}, key=str)
    return [k for k, _ in policy.own_scopes(identity) if k.tenant_id == tenant]


def exports(identity: MemoryIdentity, key: ScopeKey, status: Status, author_user_id: str, subject_user_id: str | None) -> bool:
    """Whether one memory of an exported scope goes into the caller's export (see `export_scopes`)."""
    if status is Status.FORGOTTEN or key.tenant_id != identity.tenant_id:
        return False
    if identity.has_role(Role.ADMIN):
        return True
    if key in (ScopeKey.private(identity.tenant_id, identity.user_id), ScopeKey.agent(identity.tenant_id, identity.agent_id, identity.user_id)):
        return True
    return identity.user_id in (author_user_id, subject_user_id)


# -- the admin console: tenant-admin views, and "who can read this and why" ---------
__all__ += ["require_tenant_admin", "may_inspect", "Audience", "Reader", "default_audience", "readers_of"]


def require_tenant_admin(identity: MemoryIdentity, what: str) -> None:
    """The console's tenant-wide views (every grant, every manifest, per-scope counts, readers
    of a memory) are for the tenant's admins; the tenant is always the admin's own."""
    if not identity.has_role(Role.ADMIN):
        raise NotPermitted(f"{what} needs the {ROLE_ADMIN!r} role of the tenant")


def may_inspect(identity: MemoryIdentity, key: ScopeKey) -> None:
    """A tenant admin may ask who reads any memory of their own tenant (or a global one, which
    every tenant reads); a memory of another tenant is refused before it is looked up."""
    require_tenant_admin(identity, "asking who can read a memory")
    if key.visibility is not Visibility.GLOBAL and key.tenant_id != identity.tenant_id:
        raise NotPermitted(f"{identity.principal} may not inspect {key}: it is not a scope of tenant {identity.tenant_id}")


@dataclass(frozen=True)
class Audience:
    """A class of identities, as a pattern over identity fields (None = any value): exactly the
    identities whose default scopes (`Policy.own_scopes`) include one scope key."""

    tenant_id: str | None = None  # None only for the global scope: every tenant
    user_id: str | None = None
    agent_id: str | None = None
    workspace_id: str | None = None
    department_id: str | None = None
    task_id: str | None = None

    def matches(self, identity: MemoryIdentity) -> bool:
        return (
            self.tenant_id in (None, identity.tenant_id) and self.user_id in (None, identity.user_id)
            and self.agent_id in (None, identity.agent_id) and self.workspace_id in (None, identity.workspace_id)
            and (self.department_id is None or self.department_id in identity.department_ids)
            and self.task_id in (None, identity.task_id)
        )

    def describe(self) -> str:
        if self.tenant_id is None:
            return "every identity of every tenant"
        parts = [f"user {self.user_id}" if self.user_id else "every identity"]
        if self.agent_id:
            parts.append(f"acting through agent {self.agent_id}")
        if self.workspace_id:
            parts.append(f"whose session is in workspace {self.workspace_id}")
        if self.department_id:
            parts.append(f"who belongs to department {self.department_id}")
        if self.task_id:
            parts.append(f"working on task {self.task_id}")
        return " ".join(parts) + f" of tenant {self.tenant_id}"


def default_audience(policy: Policy, key: ScopeKey) -> Audience | None:
    """Who reads `key` by default, mirroring `Policy.own_scopes` (tests/bridge/test_admin_ops.py
    checks the two agree identity by identity). None: nobody (global memory switched off).
    A visibility this function does not know fails closed: `NotPermitted`, never "everyone"."""
    t = key.tenant_id
    if key.visibility is Visibility.PRIVATE:
        return Audience(t, user_id=key.owner_id)
    if key.visibility is Visibility.AGENT:
        return Audience(t, user_id=key.user_id, agent_id=key.owner_id)
    if key.visibility is Visibility.TASK:
        return Audience(t, user_id=key.user_id, agent_id=key.owner_id, task_id=key.task_id)
    if key.visibility is Visibility.TEAM:
        return None  # nobody by default: a team is read by its member agents (`team_members` below)
    if key.visibility is Visibility.WORKSPACE:
        return Audience(t, workspace_id=key.owner_id)
    if key.visibility is Visibility.DEPARTMENT:
        return Audience(t, department_id=key.owner_id)
    if key.visibility is Visibility.TENANT:
        return Audience(t)
    if key.visibility is Visibility.GLOBAL:
        return Audience(None) if policy.config.include_global else None
    raise NotPermitted(f"no reader rule is known for visibility {key.visibility.value!r}")


@dataclass(frozen=True)
class Reader:
    """One class of readers of one memory and the rule that lets them read it."""

    who: str
    why: str
    via: str  # "default scope", "grant", "manifest", "approval queue", "author", "admin"
    until: float | None = None  # when a grant or manifest runs out
    ref: str | None = None  # the grant or manifest id


def readers_of(
    policy: Policy, key: ScopeKey, status: Status, author_user_id: str, grants: Iterable[Grant],
    manifests: Sequence[tuple[InjectionManifest, Sequence[InjectionManifest]]], now: float,
    *, shared_with: frozenset[str] = frozenset(), team_members: frozenset[str] = frozenset(),
) -> list[Reader]:
    """Everyone who can read one memory and why, by the same rules recall and get apply.

    `grants`: grants of the memory's tenant; `manifests`: live manifests holding the memory,
    each with its chain (nearest source first); `shared_with`: the memory's `visible_to` beyond its
    owning agent (agent and task places only, the same user's agents; "*" = all of them);
    `team_members`: the member agents of a team scope. An active memory: its scope's default
    audience, its shares, the team's members, active grants on exactly that scope, manifests
    whose whole chain is live. Anything else
    (pending, superseded): its author, the approvers of its scope, the tenant's admins."""
    out: list[Reader] = []
    tenant = key.tenant_id
    if status is Status.ACTIVE:
        audience = default_audience(policy, key)
        if audience is not None:
            out.append(Reader(audience.describe(), f"{key} is one of their default scopes ({key.visibility.value})", "default scope"))
        if key.visibility in (Visibility.AGENT, Visibility.TASK):  # bridge/policy/sharing.py SHAREABLE
            for agent in sorted(shared_with):
                who = f"every agent acting for user {key.user_id}" if agent == "*" else f"agent {agent} acting for user {key.user_id}"
                out.append(Reader(who, f"agent {key.owner_id} shared it with them (visible_to)", "share"))
        if key.visibility is Visibility.TEAM and team_members:
            members = ", ".join(sorted(team_members))
            out.append(Reader(f"member agents of team {key.owner_id} ({members}), acting for any user of tenant {tenant}", f"{key} is team memory", "team"))
        for g in grants:
            if g.scope == key and g.tenant_id == tenant and g.active(now):
                who = f"user {g.grantee_user_id}" + (f" through agent {g.grantee_agent_id}" if g.grantee_agent_id else "")
                out.append(Reader(who, f"grant {g.grant_id} issued by {g.issued_by}: {g.reason}", "grant", g.expires_at, g.grant_id))
        for m, chain in manifests:
            links = (m, *chain)
            if any(not x.usable(now) for x in links) or links[-1].parent_manifest_id is not None:
                continue  # a manifest whose source expired, was revoked or erased reads nothing
            out.append(Reader(
                f"agent {m.child_agent_id} acting for user {m.user_id}", f"manifest {m.manifest_id} injected by {m.issuer} for task {m.task!r} (read-only)",
                "manifest", min(x.expires_at for x in links), m.manifest_id,
            ))
    else:
        out.append(Reader(f"its author, user {author_user_id}", f"a {status.value} memory is shown to its author", "author"))
        if key.visibility in (Visibility.DEPARTMENT, Visibility.WORKSPACE):
            place = "department" if key.visibility is Visibility.DEPARTMENT else "workspace"
            out.append(Reader(f"approvers of {place} {key.owner_id} of tenant {tenant}", f"it awaits their decision in {key}", "approval queue"))
        if tenant is not None:
            out.append(Reader(f"admins of tenant {tenant}", "tenant admins approve or reject any shared scope of their tenant", "approval queue"))
    if tenant is not None:
        out.append(Reader(f"admins of tenant {tenant}", "may look it up to edit or forget it (an edit returns its content)", "admin"))
    return out
def may_purge_expired(identity: MemoryIdentity) -> None:
    """Purging a tenant's expired memories (`PurgeExpired`): its admins only — the purge deletes
    in every scope of the tenant, which no member may do. (Kept beside the read rules so bridge/policy/__init__.py stays under its size limit.)"""
    if not identity.has_role(Role.ADMIN):
        raise NotPermitted(f"purging expired memories needs the {ROLE_ADMIN!r} role")
