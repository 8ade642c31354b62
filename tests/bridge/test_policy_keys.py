"""Who may manage API keys (bridge/policy/keys.py), each rule at its edges: a key is an identity
someone else will act as, so issuing one hands out authority. Pure functions, no store."""

from __future__ import annotations

import pytest

from bridge.errors import NotFound, NotPermitted
from bridge.policy.keys import check_issuable_roles, check_key_tenant, require_key_admin
from tests.kit import make_identity

ADMIN = make_identity("root", roles=["admin"])
GLOBAL_ADMIN = make_identity("root", roles=["admin", "global_admin"])
MEMBER = make_identity("alice")


def test_only_a_tenant_admin_manages_keys():
    require_key_admin(ADMIN, "issuing a key")
    with pytest.raises(NotPermitted, match="admin"):
        require_key_admin(MEMBER, "issuing a key")


@pytest.mark.parametrize("role", ["admin", "approver"])
def test_a_tenant_admin_issues_keys_with_the_tenant_roles(role):
    check_issuable_roles(ADMIN, [role])
    check_issuable_roles(ADMIN, ["admin", "approver"])


def test_a_tenant_role_is_issuable_without_holding_it():
    """The role rule stands apart from the admin rule (`require_key_admin` runs first): the two
    tenant roles are issuable by whoever reaches it, held or not."""
    check_issuable_roles(make_identity("root", roles=["admin"]), ["approver"])
    check_issuable_roles(make_identity("root", roles=["global_admin"]), ["admin"])


def test_an_admin_cannot_mint_a_key_wider_than_themself():
    with pytest.raises(NotPermitted, match="'global_admin' role: they do not hold it"):
        check_issuable_roles(ADMIN, ["approver", "global_admin"])
    with pytest.raises(NotPermitted, match="'superuser'"):
        check_issuable_roles(ADMIN, ["superuser"])
    check_issuable_roles(GLOBAL_ADMIN, ["global_admin", "admin"])
    check_issuable_roles(ADMIN, [])


def test_a_key_of_another_tenant_is_reported_as_absent():
    check_key_tenant(ADMIN, "k1", "acme")
    for other in ("globex", None):
        with pytest.raises(NotFound, match="no API key k1 in tenant acme"):
            check_key_tenant(ADMIN, "k1", other)
