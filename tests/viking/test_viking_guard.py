"""Every hit is attributed to a queried scope and checked against the ScopeSet, or dropped."""

from __future__ import annotations

import json

import pytest

from adapters.base import SearchQuery
from adapters.errors import BackendNotFound
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from adapters.viking import VikingBackend
from adapters.viking.mapping import RECORD_FIELD, principal_for
from contract_tests.viking_simulator import VikingSimulator
from tests.viking.vikingkit import mem

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
WS = ScopeKey.workspace("acme", "alpha")


def foreign_row(*, user_ids: object, summary: str, scope_string: str | None, mid: str = "vb" + "0" * 32) -> dict:
    info: dict = {"summary": summary}
    if scope_string is not None:
        env = {"v": 1, "id": mid, "scope": scope_string, "kind": "fact", "status": "active", "confidence": 1.0, "subject_user_id": None,
               "metadata": {}, "provenance": {"author_user_id": "x", "author_agent_id": "y"}, "created_at": 1.0, "updated_at": 1.0}
        info[RECORD_FIELD] = json.dumps(env)
    return {"id": "evil1", "score": 0.99, "memory_type": "sys_event_v1", "user_id": user_ids, "assistant_id": [], "group_id": mid, "time": 1, "memory_info": info}


@pytest.mark.parametrize(
    "row",
    [
        foreign_row(user_ids=[principal_for(BOB)], summary="bob secret tea", scope_string=str(BOB)),  # another scope's principal
        foreign_row(user_ids=[principal_for(BOB)], summary="bob secret tea", scope_string=str(ALICE)),  # lies about its scope
        foreign_row(user_ids=[principal_for(ALICE)], summary="bob secret tea", scope_string=str(BOB)),  # stored scope disagrees
        foreign_row(user_ids=[principal_for(ALICE), principal_for(BOB)], summary="bob secret tea", scope_string=str(ALICE)),  # two owners
        foreign_row(user_ids=[], summary="bob secret tea", scope_string=str(ALICE)),  # no owner at all
        foreign_row(user_ids=[principal_for(ALICE)], summary="bob secret tea", scope_string=None),  # no record, no capture record
        foreign_row(user_ids="bob", summary="bob secret tea", scope_string=str(ALICE)),
    ],
    ids=["other-principal", "lying-scope", "scope-mismatch", "two-owners", "no-owner", "unattributable-extraction", "raw-id"],
)
async def test_service_returning_a_foreign_hit_is_dropped(sim: VikingSimulator, backend: VikingBackend, row: dict) -> None:
    await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    sim.foreign_hits.append(row)
    result = await backend.search(SearchQuery(ScopeSet.of(ALICE), "tea", limit=10))
    assert [h.memory.content for h in result.hits] == ["alice likes tea"], "a foreign hit leaked through the guard"
    assert all(h.scope == ALICE for h in result.hits)


async def test_search_filter_is_pushed_down_per_scope(sim: VikingSimulator, backend: VikingBackend) -> None:
    await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    await backend.put(BOB, mem("bob likes tea"), idempotency_key="b1")
    result = await backend.search(SearchQuery(ScopeSet.of(ALICE, WS), "tea", limit=10))
    assert [h.memory.content for h in result.hits] == ["alice likes tea"]
    sent = sim.calls_to("/search")[-1]["filter"]["user_id"]
    assert principal_for(BOB) not in sent and set(sent) == {principal_for(ALICE), principal_for(WS)}


async def test_memory_id_restriction_returns_only_the_injected_memories(backend: VikingBackend) -> None:
    keep = await backend.put(WS, mem("ws decision: use tea"), idempotency_key="w1")
    await backend.put(WS, mem("ws other tea note"), idempotency_key="w2")
    await backend.put(ALICE, mem("alice tea"), idempotency_key="a1")
    scopes = ScopeSet.from_entries([ScopeEntry(ALICE), ScopeEntry(WS, memory_ids=frozenset({keep.id}), grant_id="inj-1")])
    result = await backend.search(SearchQuery(scopes, "tea", limit=10))
    assert sorted(h.memory.content for h in result.hits) == ["alice tea", "ws decision: use tea"]


async def test_get_update_delete_with_another_scopes_id_are_not_found(sim: VikingSimulator, backend: VikingBackend) -> None:
    from adapters.base import MemoryPatch

    bobs = await backend.put(BOB, mem("bob private"), idempotency_key="b1")
    with pytest.raises(BackendNotFound):
        await backend.get(ALICE, bobs.id)
    with pytest.raises(BackendNotFound):
        await backend.update(ALICE, bobs.id, MemoryPatch(content="hijacked"))
    assert await backend.delete(ALICE, bobs.id) is False
    still = await backend.get(BOB, bobs.id)
    assert still.content == "bob private"
    with pytest.raises(BackendNotFound):
        await backend.get(ALICE, "vb%*..")


async def test_identity_keys_in_metadata_never_move_a_record(backend: VikingBackend) -> None:
    m = await backend.put(ALICE, mem("alice note", metadata={"user_id": "bob", "scope": str(BOB), "vb_record": "x"}), idempotency_key="a1")
    assert m.scope == ALICE
    assert (await backend.list(BOB)) == []
    got = await backend.get(ALICE, m.id)
    assert got.metadata["scope"] == str(BOB) and got.scope == ALICE


async def test_rows_without_scope_metadata_are_never_returned(sim: VikingSimulator, backend: VikingBackend) -> None:
    from contract_tests.backends.viking import insert_unscoped

    tenant = ScopeKey.tenant("acme")
    await insert_unscoped(backend, "acme", "raw tea row without metadata")
    await backend.put(tenant, mem("tenant tea policy"), idempotency_key="t1")
    result = await backend.search(SearchQuery(ScopeSet.of(tenant), "tea", limit=10))
    assert [h.memory.content for h in result.hits] == ["tenant tea policy"]
    assert [m.content for m in await backend.list(tenant)] == ["tenant tea policy"]
