"""The contract hook `insert_unscoped` plants files the server DOES return, and the adapter drops.

If the raw `find` did not return the planted files, the contract test
`test_rows_without_scope_metadata_are_never_returned` could not fail; this test proves it can.
"""

from __future__ import annotations

from adapters.base import SearchQuery
from adapters.scopes import ScopeKey, ScopeSet
from contract_tests.backends.openviking import insert_unscoped
from tests.openviking.ovhelpers import mem, unique


async def test_planted_unscoped_files_are_found_by_the_server_but_never_returned(backend):
    text = unique("orphan payroll export row ")
    own = await backend.put(ScopeKey.private("acme", "alice"), mem("alice's own note about lunch"), idempotency_key="k1")
    own_uri = backend.mapper.principal(own.scope).memory_uri(own.id)
    await insert_unscoped(backend, "acme", text)
    scopes = [ScopeKey.private("acme", "alice"), ScopeKey.agent("acme", "assistant", "alice"), ScopeKey.tenant("acme"),
              ScopeKey.workspace("acme", "alpha"), ScopeKey.department("acme", "sales")]
    raw_hits = 0
    for scope in scopes:
        p = backend.mapper.principal(scope)
        auth = await backend._auth(p, create=False)
        assert auth is not None, f"the hook provisioned nothing for {scope}"
        found = await backend.client.find(auth, text, target_uri=p.user_root if p.peer is None else p.memory_dir, limit=20, level=2)
        raw_hits += sum(1 for m in found.get("memories", []) if m.get("uri", "").endswith(".md") and m.get("uri") != own_uri)
    assert raw_hits >= 7, f"the server returned only {raw_hits} planted files; the contract test would be vacuous"
    result = await backend.search(SearchQuery(ScopeSet.of(*scopes), text, limit=50))
    assert result.complete
    assert all(h.memory.content != text for h in result.hits), [str(h.scope) for h in result.hits if h.memory.content == text]
    assert set(await backend.list_scopes("acme")) == {ScopeKey.private("acme", "alice")}
