"""Isolation through the LangGraph store: a namespace may name the caller's own places only.

Each refusal is typed and leaves nothing written; each has a positive control (the owner sees
the item), so a store that returns nothing cannot pass.
"""

from __future__ import annotations

import json

import pytest

from bridge.errors import NotPermitted
from bridge.facade import MemoryBridge
from bridge.doors.langgraph import BridgeStore, NamespaceRefused, UnknownNamespace
from bridge.doors.langgraph.items import encode
from tests.langgraph.storekit import Keys


async def _pair(bridge: MemoryBridge, keys: Keys) -> tuple[BridgeStore, BridgeStore]:
    alice = BridgeStore(bridge, await keys.login("alice", departments=["eng"], workspace="alpha"))
    bob = BridgeStore(bridge, await keys.login("bob", departments=["eng"], workspace="alpha"))
    return alice, bob


async def test_user_b_cannot_read_user_a_memories_by_naming_user_a_in_the_namespace(bridge: MemoryBridge, keys: Keys) -> None:
    alice, bob = await _pair(bridge, keys)
    await alice.aput(("memories", "alice"), "allergy", {"text": "allergic to penicillin"})
    assert (await alice.aget(("memories", "alice"), "allergy")).value == {"text": "allergic to penicillin"}  # type: ignore[union-attr]
    for call in (
        lambda: bob.aget(("memories", "alice"), "allergy"),
        lambda: bob.asearch(("memories", "alice")),
        lambda: bob.asearch(("memories", "alice"), query="penicillin"),
        lambda: bob.aput(("memories", "alice"), "allergy", {"text": "overwritten by bob"}),
        lambda: bob.adelete(("memories", "alice"), "allergy"),
    ):
        with pytest.raises(NamespaceRefused):
            await call()
    # bob's own namespace of the same shape is bob's private scope, and it does not hold alice's item
    assert await bob.aget(("memories",), "allergy") is None
    assert await bob.asearch((), query="allergic to penicillin") == []
    assert await bob.alist_namespaces() == []
    assert (await alice.aget(("memories", "alice"), "allergy")).value == {"text": "allergic to penicillin"}  # type: ignore[union-attr]


async def test_a_namespace_cannot_name_another_tenant_agent_or_unknown_scope(bridge: MemoryBridge, keys: Keys) -> None:
    alice, _ = await _pair(bridge, keys)
    for ns in (("tenant", "globex"), ("agent", "coder")):
        with pytest.raises(NamespaceRefused):
            await alice.aput(ns, "k", {"v": 1})
        with pytest.raises(NamespaceRefused):
            await alice.asearch(ns)
    for ns in (("users", "alice"), ("globex",), ("acme/user/bob",)):
        with pytest.raises(UnknownNamespace):
            await alice.aget(ns, "k")
    assert await alice.asearch(()) == []


async def test_a_write_to_another_workspace_is_refused_not_redirected_to_the_current_one(bridge: MemoryBridge, keys: Keys) -> None:
    alice, _ = await _pair(bridge, keys)
    with pytest.raises(NamespaceRefused):
        await alice.aput(("workspace", "beta"), "decision", {"text": "beta uses SQLite"})
    assert await alice.asearch(("workspace",)) == [], "the refused write must not have landed in alpha"
    with pytest.raises(NotPermitted):  # reading another workspace needs a grant: the bridge asks for one
        await alice.asearch(("workspace", "beta"), query="SQLite")


async def test_workspace_items_are_shared_but_not_overwritable_by_another_member(bridge: MemoryBridge, keys: Keys) -> None:
    alice, bob = await _pair(bridge, keys)
    await alice.aput(("workspace", "alpha"), "db", {"text": "alpha uses PostgreSQL"})
    seen = await bob.aget(("workspace", "alpha"), "db")
    assert seen is not None and seen.value == {"text": "alpha uses PostgreSQL"}
    await bob.aput(("workspace", "alpha"), "db", {"text": "bob's opinion: MySQL"})  # bob's own item, same key
    values = sorted(i.value["text"] for i in await alice.asearch(("workspace",)))
    assert values == ["alpha uses PostgreSQL", "bob's opinion: MySQL"], "bob's put must not overwrite alice's item"
    await bob.adelete(("workspace", "alpha"), "db")  # deletes bob's own item first
    with pytest.raises(NotPermitted):  # alice's item is not bob's to forget
        await bob.adelete(("workspace", "alpha"), "db")
    assert [i.value["text"] for i in await alice.asearch(("workspace",))] == ["alpha uses PostgreSQL"]


async def test_a_tenant_write_needs_the_admin_role(bridge: MemoryBridge, keys: Keys) -> None:
    alice, _ = await _pair(bridge, keys)
    with pytest.raises(NotPermitted):
        await alice.aput(("tenant",), "policy", {"text": "everyone may see salaries"})
    admin = BridgeStore(bridge, await keys.login("root", roles=["admin"]))
    await admin.aput(("tenant", "acme"), "policy", {"text": "expenses need receipts"})
    assert [i.value for i in await alice.asearch(("tenant",))] == [{"text": "expenses need receipts"}]


async def test_value_fields_naming_identities_change_nothing(bridge: MemoryBridge, keys: Keys) -> None:
    alice, bob = await _pair(bridge, keys)
    forged = {"text": "planted", "user_id": "alice", "tenant_id": "globex", "scope": "acme/user/alice", "visibility": "tenant", "kind": "profile"}
    await bob.aput(("memories",), "planted", forged)
    assert await alice.asearch(()) == []
    assert (await bob.aget(("memories",), "planted")).value == forged  # type: ignore[union-attr]


async def test_a_memory_whose_label_claims_another_users_namespace_is_not_shown_as_theirs(bridge: MemoryBridge, keys: Keys) -> None:
    """bob writes, through the plain API, workspace content labelled ("memories", "alice"): alice's
    store must not present it as an item of her private namespace (its source is the workspace)."""
    alice, _ = await _pair(bridge, keys)
    bob_id = await keys.login("bob", departments=["eng"], workspace="alpha")
    content, wrapper = encode(("memories", "alice"), "allergy", {"text": "alice is allergic to nothing (planted by bob)"})
    await bridge.remember(bob_id, content, "fact", visibility="workspace", metadata=wrapper)
    legacy = json.dumps({"langgraph": {"namespace": ["memories", "alice"], "key": "allergy"}, "value": {"text": "planted in the first format"}})
    await bridge.remember(bob_id, legacy, "fact", visibility="workspace")
    await alice.aput(("memories", "alice"), "allergy", {"text": "allergic to penicillin"})
    for items in (await alice.asearch(()), await alice.asearch((), query="allergic"), await alice.asearch(("memories",))):
        assert [i.value["text"] for i in items] == ["allergic to penicillin"], f"a planted label was shown: {[i.value for i in items]}"
    assert (await alice.aget(("memories", "alice"), "allergy")).value == {"text": "allergic to penicillin"}  # type: ignore[union-attr]
    assert await alice.alist_namespaces() == [("memories", "alice")]
