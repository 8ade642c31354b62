"""Security and reliability guarantees every adapter must prove (each is a way a memory could
leak, or change or vanish without an audit row, whatever the backend):

- no tenant's admin changes a memory it may not forget (global memory included), and
  promotion only widens;
- revoking a manifest ends every manifest derived from it;
- erasure pages through any scope size, audits what it removed even when it stops early, and a
  re-run finishes;
- a write that lost its audit row to a crash is audited as `recovered` when the bridge next opens;
- a retried write whose first attempt landed (the response was lost) is stored once.
"""

from __future__ import annotations

import pytest

import bridge.handlers.erasure as erasure
from adapters.errors import BackendNotFound, BackendUnavailable
from adapters.scopes import ScopeKey
from bridge.errors import ManifestError, NotPermitted
from bridge.facade import MemoryBridge
from contract_tests.harness import ContractEnv, describe_identity, leak_message

pytestmark = pytest.mark.asyncio

BIG = 20000
GLOBAL_TEXT = "Public holiday calendar 2027: every office closes on the first of May"
PLAN = "Deployment runbook: drain the canary before the database migration"


def _require(env: ContractEnv, method: str) -> None:
    if not callable(getattr(env.backend, method, None)):
        pytest.skip(f"{env.backend.name}: has no {method}(); this guarantee needs it (adapters/base.py protocol)")


async def _all_by(env: ContractEnv, tenant: str, user: str) -> dict[str, str]:
    """Every stored memory (any status) by or about `user` in `tenant`, id -> scope."""
    found = {}
    for key in [*await env.backend.list_scopes(tenant), ScopeKey.global_()]:
        for m in await env.backend.list(key):
            if user in (m.provenance.author_user_id, m.subject_user_id) and (key.tenant_id == tenant or key.tenant_id is None):
                found[m.id] = str(key)
    return found


# -- an admin changes only what it may forget; promotion only widens -------------------------------


async def test_another_tenants_admin_cannot_supersede_a_global_memory(contract: ContractEnv) -> None:
    """Globex's admin (no global_admin, not a global-writer tenant) promoting
    a global memory into its tenant is refused; the global original stays active and every
    tenant keeps seeing it."""
    ids, bridge = contract.ids, contract.bridge
    writer = await ids.login("gw", roles=("global_admin", "admin"))
    shared = await bridge.remember(writer, GLOBAL_TEXT, "fact", visibility="global")
    attacker = await ids.login("boss", tenant="globex", roles=("admin",))
    with pytest.raises(NotPermitted):
        await bridge.promote(attacker, shared.ref, "tenant")
    stored = await contract.backend.get(ScopeKey.global_(), shared.memory_id)
    assert stored.status.value == "active", leak_message(
        "a promotion never changes the status of a memory outside the caller's tenant", attacker, shared.memory_id, shared.scope,
        reproduce=contract.reproduce, detail=f"global original is {stored.status.value} after {describe_identity(attacker)} promoted it",
    )
    copies = await contract.backend.list(ScopeKey.tenant("globex"))
    assert not copies, f"a refused promotion by {attacker.principal} still copied {[c.id for c in copies]} into globex/tenant; reproduce: {contract.reproduce}"
    for reader in (await ids.login("alice"), await ids.login("zed", tenant="globex")):
        await contract.recall(reader, GLOBAL_TEXT, must_see=[shared.memory_id], budget_tokens=BIG)


async def test_promotion_never_narrows_a_tenant_memory(contract: ContractEnv) -> None:
    """An admin 'promoting' acme/tenant to a workspace is refused and the tenant copy
    stays visible to members outside that workspace."""
    ids, bridge = contract.ids, contract.bridge
    admin = await ids.login("dave", roles=("admin",), workspace="alpha")
    policy = await bridge.remember(admin, "Tenant policy: MFA on every account, no exceptions", "fact", visibility="tenant")
    with pytest.raises(NotPermitted):
        await bridge.promote(admin, policy.ref, "workspace")
    stored = await contract.backend.get(ScopeKey.tenant("acme"), policy.memory_id)
    assert stored.status.value == "active", f"narrowing promotion by {admin.principal} left tenant memory {policy.memory_id} {stored.status.value}; reproduce: {contract.reproduce}"
    outsider = await ids.login("sam", workspace="beta", departments=("sales",))
    await contract.recall(outsider, "Tenant policy MFA on every account", must_see=[policy.memory_id], budget_tokens=BIG)


# -- revoking a manifest ends its derived manifests ------------------------------------------------


async def _reinjection(env: ContractEnv):
    ids, bridge = env.ids, env.bridge
    parent = await ids.login("alice", agent="assistant", workspace="alpha")
    child = await ids.login("alice", agent="researcher", workspace="alpha")
    grandchild = await ids.login("alice", agent="summariser", workspace="alpha")
    memory = await bridge.remember(parent, PLAN, "procedure")
    source = await bridge.inject(parent, "researcher", "prepare the deployment", memory_refs=[memory.ref], may_reinject=True)
    derived = await bridge.inject(child, "summariser", "summarise it", memory_refs=[memory.ref], from_manifest_id=source.manifest_id)
    await env.recall(grandchild, PLAN, manifest_id=derived.manifest_id, must_see=[memory.memory_id], budget_tokens=BIG)
    return parent, child, grandchild, memory, source, derived


async def _assert_manifest_ended(env: ContractEnv, grandchild, memory, manifest_id: str, how: str) -> None:
    try:
        seen = await env.bridge.recall(grandchild, PLAN, manifest_id=manifest_id, budget_tokens=BIG)
    except ManifestError:
        pass
    else:
        pytest.fail(leak_message(f"a manifest ends when {how}", grandchild, memory.memory_id, memory.scope, reproduce=env.reproduce,
                                 detail=f"recall through {manifest_id} still succeeded with {len(seen.items)} item(s)"), pytrace=False)
    with pytest.raises(ManifestError):
        await env.bridge.write_back(grandchild, manifest_id, "Summary: drain first, then migrate", "fact")


async def test_revoking_a_manifest_ends_every_manifest_derived_from_it(contract: ContractEnv) -> None:
    """The grand-child's manifest dies with its source."""
    parent, _, grandchild, memory, source, derived = await _reinjection(contract)
    await contract.bridge.revoke_manifest(parent, source.manifest_id)
    await _assert_manifest_ended(contract, grandchild, memory, derived.manifest_id, "its source is revoked")


async def test_the_issuer_and_a_tenant_admin_can_revoke_a_derived_manifest(contract: ContractEnv) -> None:
    """The original issuer can revoke the grand-child's manifest directly; so can a
    tenant admin; another tenant's admin cannot."""
    parent, child, grandchild, memory, source, derived = await _reinjection(contract)
    with pytest.raises(ManifestError):
        await contract.bridge.revoke_manifest(await contract.ids.login("boss", tenant="globex", roles=("admin",)), derived.manifest_id)
    await contract.bridge.revoke_manifest(parent, derived.manifest_id)
    await _assert_manifest_ended(contract, grandchild, memory, derived.manifest_id, "its original issuer revokes it")
    await contract.recall(child, PLAN, manifest_id=source.manifest_id, must_see=[memory.memory_id], budget_tokens=BIG)
    await contract.bridge.revoke_manifest(await contract.ids.login("dave", roles=("admin",)), source.manifest_id)
    with pytest.raises(ManifestError):
        await contract.bridge.recall(child, PLAN, manifest_id=source.manifest_id)


# -- erasure at any scope size, and its audit ------------------------------------------------------


async def _bob_and_carol(env: ContractEnv, n: int):
    bob = await env.ids.login("bob", workspace="alpha")
    carol = await env.ids.login("carol", workspace="alpha")
    for i in range(n):
        await env.bridge.remember(bob, f"bob prefers dark theme variant {i}", "preference")
        await env.bridge.remember(bob, f"alpha fact recorded by bob number {i}", "fact")
        await env.bridge.remember(carol, f"alpha fact recorded by carol number {i}", "fact")
    return bob, carol


async def test_erasure_pages_through_every_scope_and_audits_what_it_removed(contract: ContractEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """With pages far smaller than the scopes, erasure still removes every memory of
    the subject, none of anyone else's, and one `forget_subject` row names each removed id."""
    _require(contract, "list_page")
    monkeypatch.setattr(erasure, "PAGE_SIZE", 2)
    await _bob_and_carol(contract, 5)
    doomed = await _all_by(contract, "acme", "bob")
    assert len(doomed) == 10
    admin = await contract.ids.login("dave", roles=("admin",))
    assert await contract.bridge.forget_subject(admin, "bob") == 10
    left = await _all_by(contract, "acme", "bob")
    assert not left, f"erasure of bob left {left}; reproduce: {contract.reproduce}"
    assert len(await _all_by(contract, "acme", "carol")) == 5, "erasure of bob removed carol's memories"
    (row,) = await contract.bridge.audit_events(admin, action="forget_subject")
    assert row.detail["complete"] is True and set(row.memory_ids) == set(doomed), f"the erasure audit row does not name what was removed: {row}"


async def test_an_interrupted_erasure_is_audited_and_a_rerun_finishes(contract: ContractEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend failing mid-erasure leaves one row with complete=False and exactly
    the ids removed so far (each really gone); a re-run removes the rest."""
    _require(contract, "list_page")
    monkeypatch.setattr(erasure, "PAGE_SIZE", 2)
    await _bob_and_carol(contract, 4)
    doomed = await _all_by(contract, "acme", "bob")
    real_delete, calls = contract.backend.delete, {"n": 0}

    async def flaky_delete(scope, memory_id):
        calls["n"] += 1
        if calls["n"] == 4:
            raise BackendUnavailable("injected outage mid-erasure", backend=contract.backend.name, scope=scope)
        return await real_delete(scope, memory_id)

    monkeypatch.setattr(contract.backend, "delete", flaky_delete)
    admin = await contract.ids.login("dave", roles=("admin",))
    with pytest.raises(BackendUnavailable):
        await contract.bridge.forget_subject(admin, "bob")
    (stopped,) = await contract.bridge.audit_events(admin, action="forget_subject")
    assert stopped.detail["complete"] is False and len(stopped.memory_ids) == 3, f"the interrupted erasure was not audited as such: {stopped}"
    for memory_id in stopped.memory_ids:
        with pytest.raises(BackendNotFound):
            await contract.backend.get(ScopeKey.parse(doomed[memory_id]), memory_id)
    monkeypatch.setattr(contract.backend, "delete", real_delete)
    assert await contract.bridge.forget_subject(admin, "bob") == len(doomed) - 3
    assert not await _all_by(contract, "acme", "bob")
    rows = await contract.bridge.audit_events(admin, action="forget_subject")
    assert [r.detail["complete"] for r in rows] == [True, False]


# -- no write without its audit row; a retried write lands once ------------------------------------


class SimulatedCrash(BaseException):
    """The process dies between the backend's commit and the audit row."""


def _reopened(env: ContractEnv) -> MemoryBridge:
    """A new bridge process over the same backend and the same bridge state."""
    return MemoryBridge(env.backend, env.bridge.state, policy=env.bridge.policy, reinitialise=True)


async def test_a_write_that_lost_its_audit_row_to_a_crash_is_recovered(contract: ContractEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stored memory has its audit row — a write committed by the backend
    whose audit row was never written is audited as `recovered` at the next open."""
    _require(contract, "find_by_idempotency_key")
    alice = await contract.ids.login("alice")
    audit = contract.bridge.state.audit
    real_append = audit.append_stored  # the row of a stored memory

    async def crashing_append(identity, action, **kwargs):
        if action == "write":
            raise SimulatedCrash()
        return await real_append(identity, action, **kwargs)

    monkeypatch.setattr(audit, "append_stored", crashing_append)
    with pytest.raises(SimulatedCrash):
        await contract.bridge.remember(alice, "committed just before the crash", "note", idempotency_key="crash-1")
    monkeypatch.undo()
    private = ScopeKey.private("acme", "alice")
    landed = [m.id for m in await contract.backend.list(private) if m.content == "committed just before the crash"]
    assert len(landed) == 1, f"premise: the backend committed the write ({landed})"
    bridge = _reopened(contract)
    recovered = await bridge.audit_events(alice, action="recovered")
    assert [r.memory_ids for r in recovered] == [(landed[0],)], leak_message(
        "every stored memory has its audit row (a crash between the backend's commit and the audit is recovered at open)",
        alice, landed[0], str(private), reproduce=contract.reproduce, detail=f"recovered rows: {recovered}",
    )
    assert await contract.bridge.state.audit.open_intents() == []


async def test_a_retried_write_whose_first_attempt_landed_is_stored_once(contract: ContractEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first put lands but its response is lost (a retryable error reaches the
    caller); the caller's retry with the same idempotency key returns that memory and the
    backend holds exactly one physical copy."""
    alice = await contract.ids.login("alice")
    real_put, calls = contract.backend.put, {"n": 0}

    async def lossy_put(scope, memory, **kwargs):
        stored = await real_put(scope, memory, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:
            raise BackendUnavailable("connection reset after the write was sent", backend=contract.backend.name, scope=scope)
        return stored

    monkeypatch.setattr(contract.backend, "put", lossy_put)
    content = "Remember: the staging database is pg-2, not pg-1"
    with pytest.raises(BackendUnavailable):
        await contract.bridge.remember(alice, content, "note", idempotency_key="retry-18")
    retry = await contract.bridge.remember(alice, content, "note", idempotency_key="retry-18")
    again = await contract.bridge.remember(alice, content, "note", idempotency_key="retry-18")
    assert retry.memory_id == again.memory_id and retry.deduplicated and again.deduplicated
    copies = [m.id for m in await contract.backend.list(ScopeKey.private("acme", "alice")) if m.content == content]
    assert copies == [retry.memory_id], f"retries stored {len(copies)} physical copies {copies} of one write; reproduce: {contract.reproduce}"
    await contract.recall(alice, content, must_see=[retry.memory_id], budget_tokens=BIG)
