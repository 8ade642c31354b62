"""`Recall.only_scopes` narrows a recall to named scopes that are already readable; it never widens.

Contract style: each refusal has a positive control, and the backend is watched so "only that
scope" means the backend was asked for that scope alone (not a wider search filtered after).
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from bridge.errors import InvalidInput, NotPermitted
from bridge.operations import IssueGrant, Recall
from tests.kit import make_identity

ALICE = make_identity("alice")
BOB = make_identity("bob")
ADMIN = make_identity("dave", roles=("admin",))
ALICE_PRIVATE = ScopeKey.private("acme", "alice")
BOB_PRIVATE = ScopeKey.private("acme", "bob")
ALPHA = ScopeKey.workspace("acme", "alpha")


async def _world(bridge: MemoryBridge) -> None:
    await bridge.remember(ALICE, "alice prefers green tea", "preference")
    await bridge.remember(ALICE, "alpha drinks green tea at standups", "fact", visibility="workspace")
    await bridge.remember(BOB, "bob secretly prefers green tea too", "preference")


def _watch(bridge: MemoryBridge, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    asked: list[tuple[str, ...]] = []
    real = bridge.backend.search

    async def watching(query: Any) -> Any:
        asked.append(tuple(sorted(str(k) for k in query.scopes.keys)))
        return await real(query)

    monkeypatch.setattr(bridge.backend, "search", watching)
    return asked


async def test_only_own_scope_returns_only_that_scopes_hits_and_asks_the_backend_for_it_alone(bridge: MemoryBridge, monkeypatch: pytest.MonkeyPatch) -> None:
    await _world(bridge)
    everything = await bridge.execute(ALICE, Recall(query="green tea", min_score=0.0))
    assert {i.scope for i in everything.items} == {str(ALICE_PRIVATE), str(ALPHA)}  # control: both scopes hold hits
    asked = _watch(bridge, monkeypatch)
    narrowed = await bridge.execute(ALICE, Recall(query="green tea", min_score=0.0, only_scopes=(ALICE_PRIVATE,)))
    assert [i.content for i in narrowed.items] == ["alice prefers green tea"]
    assert narrowed.scopes_searched == (str(ALICE_PRIVATE),)
    assert asked == [(str(ALICE_PRIVATE),)], f"the backend was asked for {asked}"


async def test_user_b_cannot_name_user_a_private_scope_in_only_scopes(bridge: MemoryBridge) -> None:
    await _world(bridge)
    for scopes in ((BOB_PRIVATE,), (ALICE_PRIVATE, BOB_PRIVATE), (ScopeKey.private("globex", "alice"),), (ScopeKey.workspace("acme", "beta"),)):
        with pytest.raises(NotPermitted):
            await bridge.execute(ALICE, Recall(query="green tea", only_scopes=scopes))
    rows = await bridge.state.audit.query(bridge.policy.audit_view(ADMIN), action="denied")
    assert len([r for r in rows if r.actor == ALICE.principal and r.detail.get("operation") == "recall"]) == 4


async def test_only_scopes_may_name_a_granted_scope(bridge: MemoryBridge) -> None:
    sales = ScopeKey.department("acme", "sales")
    await bridge.remember(make_identity("sam", departments=("sales",), roles=("approver",)), "sales serves green tea to clients", "standard", visibility="department", department_id="sales")
    with pytest.raises(NotPermitted):
        await bridge.execute(ALICE, Recall(query="green tea", min_score=0.0, only_scopes=(sales,)))
    await bridge.execute(ADMIN, IssueGrant(grantee_user_id="alice", scope=sales, ttl_seconds=600, reason="joint tea audit"))
    granted = await bridge.execute(ALICE, Recall(query="green tea", min_score=0.0, only_scopes=(sales,)))
    assert [i.content for i in granted.items] == ["sales serves green tea to clients"]
    assert granted.items[0].grant_id is not None


@pytest.mark.parametrize("value", [(), [], ("not a scope",), (None,), "acme/user/alice"])
def test_only_scopes_must_name_scopes(value: object) -> None:
    with pytest.raises(InvalidInput):
        Recall(query="q", only_scopes=value)  # type: ignore[arg-type]
