"""Role files on every backend: who may inject into whom, re-injection, read-only.

With a role file loaded, a child cannot inject for itself or into an agent its role does not
list, cannot modify a memory injected into it, and re-injection needs the role's permission
(`may_reinject`) as well as the manifest's. The plain `inject` obeys the roles, so these hold
through every door (`--via http` too); the federated `role_inject` case runs where the door
offers it.

Under `--via service` the role table cannot be set on a running serve process: the test's
`contract_roles` marker hands the same table to the transport, which writes it as the process's
`VIKING_BRIDGE_ROLES_FILE` before it starts (the test's replica reads the same file).
"""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from adapters.scopes import ScopeKey
from bridge.errors import ManifestError, NotPermitted, RoleRefused
from bridge.roles.loader import parse_roles
from contract_tests.harness import ContractEnv

pytestmark = pytest.mark.asyncio

BIG = 20000
TEXT = "采购规则：供应商合同剩余有效期低于阈值 15 天时阻断订单 (procurement threshold rule)"


def _roles_toml(*, reinject: bool) -> str:
    """The role file of these tests, as a deployment would write it."""
    return f"""
[router.domains.purchasing]
keywords = ["采购", "procurement", "threshold"]

[agents.coordinator]
domains = ["purchasing"]
may_inject_into = ["ontology", "verifier"]

[agents.ontology]
domains = ["purchasing"]
may_reinject = {"true" if reinject else "false"}
may_inject_into = ["verifier"]

[agents.verifier]
domains = ["purchasing"]
tiers = ["hot"]
"""


def _roles(*, reinject: bool) -> Any:
    return parse_roles(tomllib.loads(_roles_toml(reinject=reinject)), "contract-roles.toml")


#: What `--via service` writes as serve's role file (the other transports set the same table in-process).
ROLES_FILE = pytest.mark.contract_roles(_roles_toml(reinject=False))


async def _family(env: ContractEnv, *, reinject: bool = False):
    from contract_tests import harness

    if harness.TRANSPORT != "service":  # a serve process loaded the marker's file at start
        env.bridge.runtime.roles = _roles(reinject=reinject)
    ids = env.ids
    coord = await ids.login("li", agent="coordinator", workspace="procurement")
    ontology = await ids.login("li", agent="ontology", workspace="procurement")
    verifier = await ids.login("li", agent="verifier", workspace="procurement")
    rule = await env.bridge.remember(coord, TEXT, "decision", visibility="agent", metadata={"domain": "purchasing", "tier": "hot"})
    return coord, ontology, verifier, rule


@ROLES_FILE
async def test_child_cannot_inject_for_itself_or_into_an_agent_its_role_omits(contract: ContractEnv) -> None:
    coord, ontology, verifier, rule = await _family(contract)
    manifest = await contract.bridge.inject(coord, "ontology", "threshold", memory_refs=[rule.ref])
    with pytest.raises(ManifestError):
        await contract.bridge.inject(ontology, "ontology", "self", memory_refs=[rule.ref], from_manifest_id=manifest.manifest_id)
    with pytest.raises(NotPermitted):  # the verifier's role lists nobody it may inject into
        await contract.bridge.inject(verifier, "ontology", "threshold", memory_refs=[rule.ref])
    stranger = await contract.ids.login("li", agent="freelancer", workspace="procurement")
    with pytest.raises(RoleRefused):  # with a role file loaded, an agent without a role injects into nobody
        await contract.bridge.inject(stranger, "ontology", "threshold", memory_refs=[rule.ref])
    seen = await contract.recall(verifier, TEXT, budget_tokens=BIG)
    contract.assert_not_seen(seen, [rule], guarantee="no refused injection reaches the child", reader=verifier)


@ROLES_FILE
async def test_child_cannot_modify_a_memory_injected_by_role(contract: ContractEnv) -> None:
    coord, ontology, _, rule = await _family(contract)
    manifest = await contract.bridge.inject(coord, "ontology", "threshold", memory_refs=[rule.ref])
    seen = await contract.recall(ontology, TEXT, manifest_id=manifest.manifest_id, must_see=[rule.memory_id], budget_tokens=BIG)
    (item,) = [i for i in seen.items if i.memory_id == rule.memory_id]
    assert item.injected_by == "li@coordinator"
    with pytest.raises(NotPermitted):
        await contract.bridge.forget(ontology, rule.ref)
    with pytest.raises(NotPermitted):
        await contract.bridge.promote(ontology, rule.ref, "workspace")
    still = await contract.backend.get(ScopeKey.parse(rule.scope), rule.memory_id)
    assert still.content == TEXT and still.status.value == "active"


async def test_reinjection_needs_the_roles_permission(contract: ContractEnv) -> None:
    from contract_tests import harness

    if harness.TRANSPORT == "service":
        pytest.skip("the role table changes in the middle of this test; a serve process reads its role file (VIKING_BRIDGE_ROLES_FILE) once, at start")
    coord, ontology, verifier, rule = await _family(contract, reinject=False)
    with pytest.raises(RoleRefused):  # the ontology role may not re-inject, so its manifest cannot allow it
        await contract.bridge.inject(coord, "ontology", "threshold", memory_refs=[rule.ref], may_reinject=True)
    plain = await contract.bridge.inject(coord, "ontology", "threshold", memory_refs=[rule.ref])
    with pytest.raises(ManifestError):
        await contract.bridge.inject(ontology, "verifier", "pass it on", memory_refs=[rule.ref], from_manifest_id=plain.manifest_id)

    contract.bridge.runtime.roles = _roles(reinject=True)
    allowed = await contract.bridge.inject(coord, "ontology", "threshold", memory_refs=[rule.ref], may_reinject=True)
    onward = await contract.bridge.inject(ontology, "verifier", "pass it on", memory_refs=[rule.ref], from_manifest_id=allowed.manifest_id)
    await contract.recall(verifier, TEXT, manifest_id=onward.manifest_id, must_see=[rule.memory_id], budget_tokens=BIG)
    contract.bridge.runtime.roles = _roles(reinject=False)  # the role changes: the next re-injection is refused
    with pytest.raises(RoleRefused):
        await contract.bridge.inject(ontology, "verifier", "again", memory_refs=[rule.ref], from_manifest_id=allowed.manifest_id)


@ROLES_FILE
async def test_role_injection_hands_the_child_exactly_the_planned_memories(contract: ContractEnv) -> None:
    """The federated call where the door has it (the library; the service's /roles route)."""
    if "role_inject" not in dir(type(contract.bridge)):
        pytest.skip("this door (transport) has no role_inject method; the plain inject cases above cover it")
    coord, _, verifier, rule = await _family(contract)
    other = await contract.bridge.remember(coord, "内部推理：先给验证器看规则 (no domain)", "note", visibility="agent")
    fm = await contract.bridge.role_inject(coord, "verifier", TEXT, depth="full")
    assert fm.memory_ids == (rule.memory_id,)
    seen = await contract.recall(verifier, TEXT, manifest_id=fm.manifest.manifest_id, must_see=[rule.memory_id], budget_tokens=BIG)
    contract.assert_not_seen(seen, [other], guarantee="a role injection carries only routed memories", reader=verifier)
