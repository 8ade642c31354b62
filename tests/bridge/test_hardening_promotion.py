"""A promotion never changes a memory the caller may not forget.

Rule (bridge/policy/__init__.py `decide_promotion`, `may_change_status`): an operation may change the
status of a memory only where the caller may also forget it; a promotion never supersedes a
source outside the caller's tenant; a non-admin promotion of another tenant's memory is refused
(not filed as a proposal); promotion only widens.
"""

from __future__ import annotations

import pytest

from adapters.scopes import ScopeKey
from bridge import MemoryBridge, NotPermitted
from bridge.policy import Policy, PolicyConfig
from tests.kit import make_identity

GLOBAL_TEXT = "Public holiday calendar 2027: offices close on 1 May"


@pytest.fixture
async def world(tmp_path):
    """A deployment where only tenant `platform` may write global memory."""
    b = MemoryBridge.open_local(tmp_path / "home", policy=Policy(PolicyConfig(global_writer_tenants=frozenset({"platform"}))))
    writer = make_identity("gw", tenant="platform", roles=("global_admin", "admin"), departments=(), workspace=None)
    shared = await b.remember(writer, GLOBAL_TEXT, "fact", visibility="global")
    yield b, shared
    await b.aclose()


async def _status(b: MemoryBridge, scope: str, memory_id: str) -> str:
    return (await b.backend.get(ScopeKey.parse(scope), memory_id)).status.value


async def _denied(b: MemoryBridge, tenant: str, operation: str) -> list:
    rows = await b.state.audit.query(b.policy.audit_view(make_identity("auditor", tenant=tenant, roles=("admin",))), action="denied")
    return [r for r in rows if r.detail.get("operation") == operation]


async def test_admin_of_another_tenant_cannot_supersede_a_global_memory(world):
    """The HIGH finding: globex's admin (no global_admin, not a global-writer tenant) promoting a
    global memory into globex is refused, and every tenant keeps seeing the global original."""
    b, shared = world
    globex_admin = make_identity("boss", tenant="globex", roles=("admin",), departments=(), workspace=None)
    with pytest.raises(NotPermitted):
        await b.promote(globex_admin, shared.ref, "tenant")
    assert await _status(b, shared.scope, shared.memory_id) == "active", "the global original was superseded by another tenant's admin"
    assert await b.backend.list(ScopeKey.tenant("globex")) == [], "a copy of the global memory landed in globex/tenant"
    for reader in (make_identity("alice"), make_identity("zed", tenant="globex"), make_identity("p", tenant="platform")):
        seen = {i.memory_id for i in (await b.recall(reader, GLOBAL_TEXT)).items}
        assert shared.memory_id in seen, f"{reader.principal} lost the global memory {shared.memory_id}"
    assert await _denied(b, "globex", "promote"), "the refused promotion left no denied audit row"


async def test_global_admin_outside_the_writer_tenants_cannot_supersede_a_global_memory(world):
    """Holding `global_admin` is not enough: the role comes from the tenant's own IdP."""
    b, shared = world
    pretender = make_identity("boss", tenant="globex", roles=("admin", "global_admin"), departments=(), workspace=None)
    for to in ("tenant", "global"):
        with pytest.raises(NotPermitted):
            await b.promote(pretender, shared.ref, to)
    assert await _status(b, shared.scope, shared.memory_id) == "active"
    assert [m.id for m in await b.backend.list(ScopeKey.global_())] == [shared.memory_id]


async def test_non_admin_promotion_of_another_tenants_memory_is_refused_not_proposed(world):
    """A member of globex whose user id equals the global memory's author ('gw') is still not its
    author: the promotion is refused outright and no pending proposal is filed anywhere."""
    b, shared = world
    namesake = make_identity("gw", tenant="globex", departments=("eng",), workspace="alpha")
    for to in ("tenant", "department", "workspace"):
        with pytest.raises(NotPermitted):
            await b.promote(namesake, shared.ref, to)
    for key in await b.backend.list_scopes("globex"):
        assert await b.backend.list(key) == [], f"a refused promotion filed something in {key}"
    assert await _status(b, shared.scope, shared.memory_id) == "active"
    # and another tenant's non-global scope is not even looked at
    acme_fact = await b.remember(make_identity("carol"), "acme alpha uses Kafka", "fact")
    with pytest.raises(NotPermitted):
        await b.promote(make_identity("carol", tenant="globex"), acme_fact.ref, "tenant")
    assert await _status(b, acme_fact.scope, acme_fact.memory_id) == "active"


@pytest.mark.parametrize("to, extra", [("workspace", {}), ("department", {"department_id": "eng"})])
async def test_admin_cannot_narrow_a_tenant_memory_by_promotion(world, to, extra):
    """Promotion only widens: an admin 'promoting' acme/tenant to a workspace or department is
    refused, and the tenant copy stays active for every member."""
    b, _ = world
    admin = make_identity("dave", roles=("admin",))
    tenant_memory = await b.remember(admin, "Tenant policy: MFA on every account", "fact", visibility="tenant")
    with pytest.raises(NotPermitted, match="only widens"):
        await b.promote(admin, tenant_memory.ref, to, **extra)
    assert await _status(b, tenant_memory.scope, tenant_memory.memory_id) == "active"
    outsider = make_identity("sam", departments=("sales",), workspace="beta")
    seen = {i.memory_id for i in (await b.recall(outsider, "Tenant policy MFA on every account")).items}
    assert tenant_memory.memory_id in seen, "a member outside the narrowed scope lost the tenant memory"
    narrowed = ScopeKey.workspace("acme", "alpha") if to == "workspace" else ScopeKey.department("acme", "eng")
    assert await b.backend.list(narrowed) == []


async def test_admin_cannot_narrow_a_department_memory_to_a_workspace(world):
    b, _ = world
    admin = make_identity("dave", roles=("admin", "approver"))
    standard = await b.remember(admin, "every service exposes /health", "standard")
    assert standard.scope == "acme/dept/eng" and standard.status == "active"
    with pytest.raises(NotPermitted, match="only widens"):
        await b.promote(admin, standard.ref, "workspace")
    assert await _status(b, standard.scope, standard.memory_id) == "active"


@pytest.mark.parametrize("source_visibility", ["private", "workspace"])
async def test_approver_who_may_not_forget_the_source_leaves_it_active(world, source_visibility):
    """A status change only where the caller may forget: an approver (not admin) approving
    a promotion proposal whose source they may not forget activates the proposal and leaves the
    source active, audited as `source_left_active`."""
    b, _ = world
    alice = make_identity()
    kind = "note" if source_visibility == "private" else "fact"
    source = await b.remember(alice, "Use ruff for linting every repository", kind, visibility=source_visibility)
    proposal = await b.promote(alice, source.ref, "department", department_id="eng")
    assert proposal.status == "pending" and proposal.scope == "acme/dept/eng"
    carol = make_identity("carol", roles=("approver",))
    assert not b.policy.may_forget(carol, ScopeKey.parse(source.scope), "alice")  # the premise
    approved = await b.approve(carol, proposal.ref)
    assert approved.status == "active"
    assert await _status(b, source.scope, source.memory_id) == "active", "an approver superseded a memory they may not forget"
    (row,) = await b.audit_events(carol, action="approve")
    assert row.detail["source_left_active"] == source.memory_id and row.detail["superseded"] == []
    assert source.memory_id not in row.memory_ids


async def test_admin_approval_still_supersedes_a_source_of_its_own_tenant(world):
    """The positive control: where the approver may forget the source, it is superseded."""
    b, _ = world
    alice = make_identity()
    source = await b.remember(alice, "Use ruff for linting every repository", "note")
    proposal = await b.promote(alice, source.ref, "tenant")
    await b.approve(make_identity("dave", roles=("admin",)), proposal.ref)
    assert await _status(b, source.scope, source.memory_id) == "superseded"


async def test_no_status_change_crosses_a_tenant(world):
    """Every status-changing operation (approve, forget,
    promote) refuses a memory of another tenant, whatever roles the caller's IdP asserts."""
    b, shared = world
    pending = await b.remember(make_identity("alice"), "every service exposes /health", "standard")
    admin_fact = await b.remember(make_identity("dave", roles=("admin",)), "Tenant policy: MFA", "fact", visibility="tenant")
    outsider = make_identity("alice", tenant="globex", roles=("admin", "approver", "global_admin"))
    for call in (
        lambda: b.approve(outsider, pending.ref),
        lambda: b.forget(outsider, admin_fact.ref),
        lambda: b.forget(outsider, shared.ref),
        lambda: b.promote(outsider, admin_fact.ref, "global"),
        lambda: b.promote(outsider, pending.ref, "tenant"),
    ):
        with pytest.raises(NotPermitted):
            await call()
    assert await _status(b, pending.scope, pending.memory_id) == "pending"
    assert await _status(b, admin_fact.scope, admin_fact.memory_id) == "active"
    assert await _status(b, shared.scope, shared.memory_id) == "active"
    assert [m.id for m in await b.backend.list(ScopeKey.global_())] == [shared.memory_id]
    assert len(await _denied(b, "globex", "approve")) == 1 and len(await _denied(b, "globex", "forget")) == 2
