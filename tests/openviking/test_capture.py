"""Conversation capture: per-scope sessions, server-side extraction surfaced as private-scope hits.

The model stub answers OpenViking 0.5.2's extraction prompt with a real SDK program (one
`sdk.create_preferences` per preference message), so the server itself writes the files.
"""

from __future__ import annotations

import pytest

from adapters.base import ConversationMessage, MemoryPatch, Provenance, SearchQuery, Status
from adapters.errors import InvalidRequest, BackendNotFound
from adapters.openviking import OpenVikingBackend
from adapters.openviking.extraction import CaptureRecord, encode_capture
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from contract_tests.openviking_server.model_stub import sdk_program

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")


def test_stub_reply_is_an_sdk_program_for_the_extraction_prompt():
    prompt = ("... restricted Python memory SDK ...\n## Conversation History\n"
              "[0][user][user]: remember: I prefer \"aisle\" seats\n[1][assistant][assistant]: I prefer nothing\n"
              "[2][user][user]: what time is it?\n")
    program = sdk_program(prompt)
    assert program.splitlines() == [
        'pref_0 = sdk.create_preferences(user="""user""", topic="""prefer_aisle_seats""", content="""- I prefer \\"aisle\\" seats""")',
        "sdk.commit()",
    ]


async def _capture(backend, scope, text, key, author):
    receipt = await backend.capture(scope, [ConversationMessage("user", text), ConversationMessage("assistant", "Noted.")],
                                    session_key=key, provenance=Provenance(author, "coder", session_id=f"client-{author}",
                                                                           source_message_ids=("m1",)))
    task = await backend.wait_for_capture(scope, receipt, deadline=90)
    assert task["status"] == "completed", task
    assert task["result"]["memories_extracted"], task["result"]
    return receipt


async def _hits(backend, scopes, text, **kw):
    result = await backend.search(SearchQuery(ScopeSet.of(*scopes), text, limit=20, **kw))
    assert result.complete, result.failure_reasons
    return result.hits


async def test_extracted_memories_surface_in_the_captured_scope_only(backend):
    assert backend.capabilities.server_side_extraction
    ra = await _capture(backend, ALICE, "remember: I prefer window seats on long flights", "fp-1:client-session-1", "alice")
    rb = await _capture(backend, BOB, "I prefer black coffee in the morning", "fp-1:client-session-1", "bob")
    assert ra.backend_session_id != rb.backend_session_id

    hits = await _hits(backend, [ALICE], "window seats flights")
    mine = [h for h in hits if "window seats" in h.memory.content]
    assert len(mine) == 1, [h.memory.content for h in hits]
    hit = mine[0]
    assert hit.scope == ALICE and hit.memory.scope == ALICE and hit.memory.kind == "preference"
    assert hit.memory.status is Status.ACTIVE
    assert hit.memory.provenance.author_user_id == "alice" and hit.memory.provenance.session_id == "client-alice"
    assert hit.memory.provenance.source_message_ids == ("m1",)
    assert hit.memory.metadata["backend_session_id"] == ra.backend_session_id
    assert all("coffee" not in h.memory.content for h in hits), "bob's extracted memory surfaced in alice's scope"

    # nowhere else: not bob's scope, not alice's agent scope, not shared scopes
    others = [BOB, ScopeKey.agent("acme", "coder", "alice"), ScopeKey.tenant("acme"), ScopeKey.workspace("acme", "alpha")]
    assert all("window seats" not in h.memory.content for h in await _hits(backend, others, "window seats flights"))
    bob_hits = await _hits(backend, [BOB], "black coffee morning")
    assert [h.scope for h in bob_hits if "coffee" in h.memory.content] == [BOB]

    # filters: a kind that is not "preference" and a status without ACTIVE exclude it
    assert not [h for h in await _hits(backend, [ALICE], "window seats", kinds=frozenset({"fact"})) if "window" in h.memory.content]
    assert not await _hits(backend, [ALICE], "window seats", statuses=frozenset({Status.PENDING}))
    assert [h.memory.id for h in await _hits(backend, [ALICE], "window seats", kinds=frozenset({"preference"}))] == [hit.memory.id]

    # memory_ids restriction, get, list, read-only update, delete
    restricted = await backend.search(SearchQuery(ScopeSet.of(ScopeEntry(ALICE, memory_ids=frozenset({hit.memory.id}))), "window", limit=5))
    assert [h.memory.id for h in restricted.hits] == [hit.memory.id]
    assert (await backend.get(ALICE, hit.memory.id)).content == hit.memory.content
    with pytest.raises(BackendNotFound):
        await backend.get(BOB, hit.memory.id)
    assert hit.memory.id in {m.id for m in await backend.list(ALICE)}
    with pytest.raises(InvalidRequest):
        await backend.update(ALICE, hit.memory.id, MemoryPatch(status=Status.SUPERSEDED))
    assert not await backend.delete(BOB, hit.memory.id)
    assert await backend.delete(ALICE, hit.memory.id)
    assert all("window seats" not in h.memory.content for h in await _hits(backend, [ALICE], "window seats flights"))


async def test_a_capture_record_naming_another_scope_surfaces_nothing(api_key_server):
    """The record check is live: rewrite alice's capture record to name bob's scope, and a fresh
    adapter (no cache) no longer surfaces alice's extracted memory anywhere."""
    from contract_tests.backends.openviking import fresh_backend

    async with fresh_backend("api_key") as backend:
        receipt = await _capture(backend, ALICE, "remember: I prefer the quiet carriage on trains", "k1", "alice")
        p = backend.mapper.principal(ALICE)
        if not any("quiet carriage" in h.memory.content for h in await _hits(backend, [ALICE], "quiet carriage trains")):
            # The premise has failed rarely and never under observation: say what the server returned and
            # what the adapter's index held, so the next failure names its cause.
            raw = await backend._call(p, False, lambda a: backend.client.find(
                a, "quiet carriage trains", target_uri=f"{p.user_root}/memories", limit=20, level=2, read_content=False))
            index = await backend._extraction_index(p, force=True)
            pytest.fail(f"premise: alice's extracted memory is not a hit; find returned {raw!r}; "
                        f"index files {sorted(index.files)!r}, captures {sorted(index.captures)!r}")
        forged = encode_capture(CaptureRecord(receipt.backend_session_id, str(BOB), Provenance("bob", "coder"), 0.0))
        await backend._call(p, False, lambda a: backend.client.write(
            a, f"{p.user_root}/memories/vbcap/{receipt.backend_session_id}.md", forged, wait=True))
        fresh = OpenVikingBackend(backend.client, root_key=backend._root.key, mode="api_key", key_store=backend._keys,
                                  namespace=backend.mapper.namespace)
        assert not [h for h in await _hits(fresh, [ALICE, BOB], "quiet carriage trains") if "quiet carriage" in h.memory.content]


async def test_capture_is_refused_outside_private_scopes(api_backend):
    for scope in (ScopeKey.workspace("acme", "alpha"), ScopeKey.agent("acme", "coder", "alice"), ScopeKey.tenant("acme")):
        with pytest.raises(InvalidRequest):
            await api_backend.capture(scope, [ConversationMessage("user", "x")], session_key="k", provenance=Provenance("alice", "coder"))
    with pytest.raises(InvalidRequest):
        await api_backend.capture(ALICE, [], session_key="k", provenance=Provenance("alice", "coder"))


async def test_erasure_removes_extracted_memories_that_list_scopes_cannot_see(backend, tmp_path):
    """forget_subject must reach what the server extracted (those files carry no bridge record)."""
    from bridge.facade import MemoryBridge
    from identity.model import MemoryIdentity

    await _capture(backend, BOB, "remember: I prefer aisle seats near the wing", "fp-2:client-session-9", "bob")
    await _capture(backend, ALICE, "remember: I prefer window seats on long flights", "fp-3:client-session-9", "alice")
    assert [h for h in await _hits(backend, [BOB], "aisle seats wing") if "aisle" in h.memory.content]
    bridge = MemoryBridge.with_backend(backend, tmp_path / "bridge")
    admin = MemoryIdentity(tenant_id="acme", user_id="dave", agent_id="assistant", roles=frozenset({"admin"}), session_id="erase-1")
    await bridge.forget_subject(admin, "bob")
    assert [h for h in await _hits(backend, [BOB], "aisle seats wing") if "aisle" in h.memory.content] == []
    assert await backend.list(BOB) == []
    assert [h for h in await _hits(backend, [ALICE], "window seats flights") if "window seats" in h.memory.content], "erasure touched alice"
    events = await bridge.audit_events(admin, action="forget_subject")
    assert events[0].detail["backend_traces"] == 1
