"""Who may read what by reference: the permission rules of the read API (issue 11).

Pure functions over `bridge.policy.Policy`, kept beside it so the policy module stays one screen
of rules per concern: get a memory by reference, list a scope, the approval queue, in-place
edits, listing grants. Same rules as recall: a default scope or an active grant, never another
tenant's scope; a non-active memory only for its author, its approvers and whoever may change it.
"""

from __future__ import annotations

from typing import Iterable

from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import NotPermitted
from bridge.policy import ROLE_ADMIN, Policy, Role
from bridge.state.records import Grant
from identity.model import MemoryIdentity

__all__ = ["read_reason", "may_see_status", "approves_anything", "approvable_scopes", "may_edit", "grants_subject", "export_scopes", "exports"]


def read_reason(policy: Policy, identity: MemoryIdentity, key: ScopeKey, grants: Iterable[Grant], now: float) -> str:
    """Why `identity` may read memories of `key` by reference: a default scope or an active
    grant (same rules as recall). `NotPermitted` otherwise — never another tenant's scope."""
    for own, reason in policy.own_scopes(identity):
        if own == key:
            return reason
    if key.tenant_id != identity.tenant_id:
        raise NotPermitted(f"{identity.principal} may not read {key}: cross-tenant reads are never allowed")
    return f"authorised by grant {policy.authorise_grant(identity, key, grants, now).grant_id}"


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
