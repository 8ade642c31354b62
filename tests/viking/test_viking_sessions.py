"""capture(): identity-bound backend sessions, server-side extraction, search-after-write lag."""

from __future__ import annotations

import pytest

from adapters.base import ConversationBackend, ConversationMessage, SearchQuery
from adapters.errors import InvalidRequest
from adapters.scopes import ScopeKey, ScopeSet
from adapters.viking import VikingBackend
from contract_tests.viking_simulator import VikingSimulator
from tests.viking.vikingkit import eventually, prov

WS = ScopeKey.workspace("acme", "alpha")
ALICE = ScopeKey.private("acme", "alice")


def msgs(*texts: str) -> list[ConversationMessage]:
    return [ConversationMessage(role="user", content=t) for t in texts] + [ConversationMessage(role="assistant", content="noted")]


async def test_backend_is_a_conversation_backend(backend: VikingBackend) -> None:
    assert isinstance(backend, ConversationBackend) and backend.capabilities.server_side_extraction


async def test_two_identities_with_the_same_client_session_never_overwrite_each_other(sim: VikingSimulator, backend: VikingBackend) -> None:
    a = await backend.capture(WS, msgs("alice says the deploy is friday"), session_key="fp-alice:chat-1", provenance=prov("alice"))
    b = await backend.capture(WS, msgs("bob says the deploy is monday"), session_key="fp-bob:chat-1", provenance=prov("bob"))
    assert a.backend_session_id != b.backend_session_id
    result = await backend.search(SearchQuery(ScopeSet.of(WS), "deploy", limit=10))
    by_author = {h.memory.content: h.memory.provenance.author_user_id for h in result.hits}
    assert by_author == {"alice says the deploy is friday": "alice", "bob says the deploy is monday": "bob"}


async def test_recapturing_a_session_replaces_only_that_session(sim: VikingSimulator, backend: VikingBackend) -> None:
    await backend.capture(ALICE, msgs("old fact about tea"), session_key="fp-alice:s1", provenance=prov("alice"))
    await backend.capture(ALICE, msgs("other session tea"), session_key="fp-alice:s2", provenance=prov("alice"))
    await backend.capture(ALICE, msgs("new fact about tea"), session_key="fp-alice:s1", provenance=prov("alice"))
    hits = (await backend.search(SearchQuery(ScopeSet.of(ALICE), "tea", limit=10))).hits
    assert sorted(h.memory.content for h in hits) == ["new fact about tea", "other session tea"]
    assert all(h.memory.scope == ALICE and h.memory.id.startswith("x") for h in hits)
    assert hits[0].memory.subject_user_id == "alice"


async def test_extracted_memories_appear_after_the_lag(sim: VikingSimulator, backend: VikingBackend) -> None:
    sim.extraction_lag = 15
    receipt = await backend.capture(ALICE, msgs("alice prefers oolong"), session_key="fp-alice:s1", provenance=prov("alice"))
    assert receipt.accepted_messages == 2
    probe = lambda: backend.search(SearchQuery(ScopeSet.of(ALICE), "oolong", limit=5))  # noqa: E731
    assert (await probe()).hits == ()
    result = await eventually(sim, probe, lambda r: bool(r.hits))
    got = result.hits[0].memory
    assert got.content == "alice prefers oolong" and got.metadata["backend_session_id"] == receipt.backend_session_id
    assert (await backend.get(ALICE, got.id)).content == got.content
    assert await backend.delete(ALICE, got.id) is True
    assert (await probe()).hits == ()


async def test_capture_limits(backend: VikingBackend) -> None:
    with pytest.raises(InvalidRequest):
        await backend.capture(ALICE, [], session_key="k", provenance=prov())
    with pytest.raises(InvalidRequest):
        await backend.capture(ALICE, [ConversationMessage("user", "x")] * 1001, session_key="k", provenance=prov())
    receipt = await backend.capture(ALICE, [ConversationMessage("user", "x")] * 1000, session_key="k", provenance=prov())
    assert receipt.accepted_messages == 1000


async def test_captured_memories_do_not_leak_to_another_scope(backend: VikingBackend) -> None:
    await backend.capture(ALICE, msgs("alice secret tea"), session_key="fp-alice:s1", provenance=prov("alice"))
    bob = ScopeKey.private("acme", "bob")
    assert (await backend.search(SearchQuery(ScopeSet.of(bob, WS), "tea", limit=10))).hits == ()
