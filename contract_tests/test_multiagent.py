"""Multi-agent visibility and injection safety (seeds 000 and 002).

A child agent sees its own memory, team memory, and exactly what its parent injected — labelled
`injected_by`, read-only; it cannot inject into itself or re-inject without `may_reinject`; what
it writes back carries `derived_from` = the injected memory ids.
"""

from __future__ import annotations

import pytest

from adapters.scopes import ScopeKey
from bridge.errors import ManifestError, NotPermitted
from contract_tests.harness import ContractEnv, fail_leak

pytestmark = pytest.mark.asyncio

BIG = 20000
TEXT = "Deployment runbook step: drain the canary before the database migration"


async def _family(env: ContractEnv):
    ids, bridge = env.ids, env.bridge
    parent = await ids.login("alice", agent="assistant", workspace="alpha")
    child = await ids.login("alice", agent="researcher", workspace="alpha")
    injected = await bridge.remember(parent, TEXT + " (step 1)", "procedure")
    withheld = await bridge.remember(parent, TEXT + " (step 2, parent only)", "procedure")
    assert injected.scope == withheld.scope == "acme/agent/assistant/alice"
    manifest = await bridge.inject(parent, "researcher", "prepare the deployment", memory_refs=[injected.ref])
    return parent, child, injected, withheld, manifest


async def test_child_sees_exactly_what_the_parent_injected_labelled_and_read_only(contract: ContractEnv) -> None:
    """Seeds 000/002: a child sees exactly what its parent injected, labelled injected_by, and
    cannot forget or promote it; nothing else of the parent's agent memory reaches it."""
    bridge = contract.bridge
    parent, child, injected, withheld, manifest = await _family(contract)
    guarantee = "a child sees exactly what its parent injected (labelled injected_by, read-only)"

    seen = await contract.recall(child, TEXT, manifest_id=manifest.manifest_id, must_see=[injected.memory_id], budget_tokens=BIG)
    contract.assert_not_seen(seen, [withheld], guarantee=guarantee, reader=child)
    (item,) = [i for i in seen.items if i.memory_id == injected.memory_id]
    assert item.injected_by == f"{parent.user_id}@{parent.agent_id}", f"{guarantee}: injected_by={item.injected_by!r}"
    assert item.grant_id == manifest.manifest_id and item.scope == injected.scope
    for other in seen.items:
        if other.scope == "acme/agent/assistant/alice" and other.memory_id != injected.memory_id:
            fail_leak(guarantee, child, other, reproduce=contract.reproduce)

    sentinel = await bridge.remember(child, "Researcher note: the canary runbook lives in the wiki", "procedure")
    plain = await contract.recall(child, TEXT, must_see=[sentinel.memory_id], budget_tokens=BIG)
    contract.assert_not_seen(plain, [injected, withheld], guarantee=guarantee + " (only with the manifest)", reader=child)

    with pytest.raises(NotPermitted):
        await bridge.forget(child, injected.ref)
    with pytest.raises(NotPermitted):
        await bridge.promote(child, injected.ref, "workspace")
    stranger = await contract.ids.login("alice", agent="other", workspace="alpha")
    bob = await contract.ids.login("bob", agent="researcher", workspace="alpha")
    for who in (stranger, bob):
        with pytest.raises(ManifestError):
            await bridge.recall(who, TEXT, manifest_id=manifest.manifest_id)
    still = await contract.backend.get(ScopeKey.parse(injected.scope), injected.memory_id)
    assert still.content == TEXT + " (step 1)"


async def test_child_cannot_inject_into_itself(contract: ContractEnv) -> None:
    """Seed 002: an agent cannot inject memories into itself (neither parent nor child)."""
    parent, child, injected, _, manifest = await _family(contract)
    with pytest.raises(ManifestError):
        await contract.bridge.inject(parent, parent.agent_id, "self", memory_refs=[injected.ref])
    with pytest.raises(ManifestError):
        await contract.bridge.inject(child, child.agent_id, "self", memory_refs=[injected.ref], from_manifest_id=manifest.manifest_id)


async def test_child_cannot_reinject_without_may_reinject(contract: ContractEnv) -> None:
    """Seed 002: a child cannot pass on what it was given unless the manifest says may_reinject."""
    bridge = contract.bridge
    parent, child, injected, _, manifest = await _family(contract)
    with pytest.raises(ManifestError):
        await bridge.inject(child, "summariser", "pass it on", memory_refs=[injected.ref], from_manifest_id=manifest.manifest_id)
    with pytest.raises(ManifestError):  # nor by naming the memory directly: it is not in the child's own scopes
        await bridge.inject(child, "summariser", "pass it on", memory_refs=[injected.ref])

    allowed = await bridge.inject(parent, "researcher", "prepare the deployment", memory_refs=[injected.ref], may_reinject=True)
    onward = await bridge.inject(child, "summariser", "pass it on", memory_refs=[injected.ref], from_manifest_id=allowed.manifest_id)
    grandchild = await contract.ids.login("alice", agent="summariser", workspace="alpha")
    await contract.recall(grandchild, TEXT, manifest_id=onward.manifest_id, must_see=[injected.memory_id], budget_tokens=BIG)


async def test_write_back_carries_derived_from(contract: ContractEnv) -> None:
    """Seed 002: a child's result is written back with derived_from = the injected memory ids."""
    parent, child, injected, _, manifest = await _family(contract)
    result = await contract.bridge.write_back(child, manifest.manifest_id, "Research result: canary drain takes four minutes", "fact")
    stored = await contract.backend.get(ScopeKey.parse(result.scope), result.memory_id)
    assert stored.provenance.derived_from == (injected.memory_id,), f"derived_from={stored.provenance.derived_from}"
    assert stored.provenance.author_agent_id == "researcher"
    seen = await contract.recall(parent, "canary drain takes four minutes", must_see=[result.memory_id], budget_tokens=BIG)
    (item,) = [i for i in seen.items if i.memory_id == result.memory_id]
    assert item.derived_from == (injected.memory_id,) and item.author == "alice@researcher"
