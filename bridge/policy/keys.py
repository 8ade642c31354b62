"""Who may manage API keys: a tenant's admins, for their own tenant, never above their own standing.

A key is an identity someone else will act as, so issuing one is handing out authority. A
tenant admin may issue keys of their own tenant with the tenant roles (`admin`, `approver`);
`global_admin` (writing the global scope every tenant reads) only an identity that holds it
itself: an admin cannot mint a key wider than they are. Listing and revoking are the tenant's
admins' too, and a key of another tenant is reported as absent, never as someone else's.
"""

from __future__ import annotations

from typing import Iterable

from bridge.errors import NotFound, NotPermitted
from bridge.policy.config import Role
from bridge.policy.reads import require_tenant_admin
from identity.model import MemoryIdentity

__all__ = ["require_key_admin", "check_issuable_roles", "check_key_tenant"]

#: Roles a tenant admin may put on a key of their tenant without holding them.
_TENANT_ROLES = frozenset({Role.ADMIN.value, Role.APPROVER.value})


def require_key_admin(identity: MemoryIdentity, what: str) -> None:
    require_tenant_admin(identity, what)


def check_issuable_roles(identity: MemoryIdentity, roles: Iterable[str]) -> None:
    for role in roles:
        if role not in _TENANT_ROLES and not identity.has_role(role):
            raise NotPermitted(f"{identity.principal} may not issue a key with the {role!r} role: they do not hold it")


def check_key_tenant(identity: MemoryIdentity, key_id: str, key_tenant: str | None) -> None:
    """A key id of another tenant (or none) is NotFound: its existence is not the caller's to learn."""
    if key_tenant != identity.tenant_id:
        raise NotFound(f"no API key {key_id} in tenant {identity.tenant_id}")
