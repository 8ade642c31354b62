"""The PostgreSQL backend's reads are one round trip each, with row-level security still bound.

A read by reference (get, an idempotency check before every write, a listing page, the scopes of
a tenant) declares its scope with `set_config(..., true)` and then selects: inside a transaction
that is BEGIN, the declaration, the SELECT and COMMIT, four round trips. Through `PgPool.read`
the two statements share one implicit transaction and one Sync. Counted at the pool on a real
server; each answer is checked too, so a read whose declaration stopped binding (row-level
security would then show it nothing) fails here as well.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from adapters.errors import BackendNotFound
from adapters.postgres import PostgresBackend
from adapters.scopes import ScopeKey
from tests.postgres.pgkit import note
from tests.postgres.test_rls import backend  # noqa: F401  (the opened backend fixture)

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")


async def test_reads_by_reference_are_one_read_each(backend: PostgresBackend, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    mine = await backend.put(ALICE, note("alice likes green tea"), idempotency_key="k1")
    theirs = await backend.put(BOB, note("bob's salary is 93k"), idempotency_key="k2")
    pool = backend._ready()
    calls: Counter[str] = Counter()
    for name in ("run", "read"):
        original = getattr(pool, name)

        async def counted(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls[_name] += 1
            return await _original(*args, **kwargs)

        monkeypatch.setattr(pool, name, counted)

    assert (await backend.get(ALICE, mine.id)).content == "alice likes green tea"
    with pytest.raises(BackendNotFound):
        await backend.get(ALICE, theirs.id)  # another scope's id: not found through this scope
    assert [m.id for m in await backend.list(ALICE)] == [mine.id]
    assert [m.id for m in (await backend.list_page(ALICE)).memories] == [mine.id]
    found = await backend.find_by_idempotency_key(ALICE, "k1")
    assert found is not None and found.id == mine.id
    assert await backend.find_by_idempotency_key(ALICE, "k2") is None
    assert sorted(map(str, await backend.list_scopes("acme"))) == sorted([str(ALICE), str(BOB)])
    assert await backend.count() == 2
    assert calls == Counter({"read": 8})
