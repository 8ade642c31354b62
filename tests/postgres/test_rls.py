"""The second wall: row-level security keyed on the ScopeSet the transaction declared.

Every test here runs SQL the way a bug would — no WHERE clause, a forgotten filter — as the
runtime role, against a real PostgreSQL, and checks the database itself returns (or changes)
nothing outside the declared ScopeSet.
"""

from __future__ import annotations

from typing import Any, AsyncIterator

import psycopg
import pytest
import pytest_asyncio

from adapters.base import Hit, SearchQuery, Status
from adapters.errors import BackendMisconfigured
from adapters.postgres import PostgresBackend
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from contract_tests.postgres_server import TestDatabase
from tests.postgres.pgkit import as_app, note

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
GLOBEX = ScopeKey.tenant("globex")


@pytest_asyncio.fixture
async def backend(pg_db: TestDatabase) -> AsyncIterator[PostgresBackend]:
    b = PostgresBackend(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    await b.open()
    try:
        yield b
    finally:
        await b.aclose()


async def _world(backend: PostgresBackend) -> dict[str, str]:
    ids = {}
    for scope, text in ((ALICE, "alice likes green tea"), (BOB, "bob's salary is 93k"), (GLOBEX, "globex merger plan")):
        ids[text] = (await backend.put(scope, note(text), idempotency_key=f"k-{scope}")).id
    return ids


def _declared_select(db: TestDatabase, sql: str, open_scopes: list[str], pairs: list[str] = (), ids: list[str] = ()) -> list[tuple[Any, ...]]:  # type: ignore[assignment]
    with as_app(db) as conn, conn.transaction():
        conn.execute(
            "SELECT set_config('viking_bridge.scopes', %s, true), set_config('viking_bridge.memories', %s, true),"
            " set_config('viking_bridge.memory_ids', %s, true)", ("\x1f".join(open_scopes), "\x1f".join(pairs), "\x1f".join(ids)),
        )
        return conn.execute(sql).fetchall()


async def test_query_without_a_where_clause_returns_only_the_declared_scopes(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    await _world(backend)
    rows = _declared_select(pg_db, "SELECT scope, content FROM memories", [str(ALICE)])
    assert rows == [(str(ALICE), "alice likes green tea")], f"RLS let a filterless query see {rows}"
    assert _declared_select(pg_db, "SELECT count(*) FROM memories", [str(ALICE), str(GLOBEX)]) == [(2,)]


async def test_transaction_that_declares_nothing_sees_and_writes_nothing(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    await _world(backend)
    with as_app(pg_db) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        assert conn.execute("DELETE FROM memories").rowcount == 0
        assert conn.execute("UPDATE memories SET content = 'pwned'").rowcount == 0
    assert len(await backend.list(BOB)) == 1 and (await backend.list(BOB))[0].content == "bob's salary is 93k"


async def test_runtime_role_cannot_change_rows_outside_the_declared_scopes(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    ids = await _world(backend)
    with as_app(pg_db) as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('viking_bridge.scopes', %s, true)", (str(ALICE),))
            assert conn.execute("UPDATE memories SET content = 'pwned'").rowcount == 1  # alice's own row only
            assert conn.execute("DELETE FROM memories WHERE id = %s", (ids["bob's salary is 93k"],)).rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # WITH CHECK: no row lands outside the declared scopes
            with conn.transaction():
                conn.execute("SELECT set_config('viking_bridge.scopes', %s, true)", (str(ALICE),))
                conn.execute("UPDATE memories SET scope = %s WHERE scope = %s", (str(BOB), str(ALICE)))
    assert [m.content for m in await backend.list(BOB)] == ["bob's salary is 93k"]


async def test_restricted_entry_sees_only_its_injected_ids_even_without_where(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    second = await backend.put(BOB, note("bob's second note"), idempotency_key="k2")
    await _world(backend)
    rows = _declared_select(pg_db, "SELECT id FROM memories", [], [f"{BOB}\x1e{second.id}"], [second.id])
    assert rows == [(second.id,)]
    # an id of the right memory under the wrong scope is not a pair the transaction declared
    assert _declared_select(pg_db, "SELECT id FROM memories", [], [f"{ALICE}\x1e{second.id}"], [second.id]) == []


class FilterDroppingBackend(PostgresBackend):
    """Deliberately broken: its searches forget the ScopeSet in the WHERE clause (the vector
    ranking and the reading of the winners' rows alike) and skip the adapter's own hit check.
    Only the database's policy stands between it and a leak."""

    @staticmethod
    def _vector_statement(params: dict[str, Any], *, rows: bool) -> str:
        from adapters.postgres.recall import M_COLUMNS

        ranked = "SELECT id, scope, embedding <#> %(q)s AS distance, seq FROM memories ORDER BY distance, seq LIMIT %(limit)s"  # no WHERE at all
        if not rows:
            return f"SELECT scope, id, -distance FROM ({ranked}) top ORDER BY distance, seq"
        return f"WITH top AS ({ranked}) SELECT {M_COLUMNS}, -top.distance FROM top JOIN memories m ON m.id = top.id ORDER BY top.distance"

    @staticmethod
    def _rows_statement(params: dict[str, Any]) -> str:
        from adapters.postgres.recall import M_COLUMNS

        return f"SELECT {M_COLUMNS} FROM memories m WHERE m.id = ANY(%(top)s)"  # the winners' ids, nothing of the ScopeSet

    def _hits(self, scopes: ScopeSet, ranked: Any, rows: Any) -> list[Hit]:
        by_id = {row[1]: row for row in rows}
        return [Hit(m, m.scope, score) for _, mid, score in ranked if mid in by_id and (m := self._decode(by_id[mid])) is not None]


async def test_broken_query_without_scope_filter_still_leaks_nothing_because_of_rls(pg_db: TestDatabase) -> None:
    broken = FilterDroppingBackend(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    await broken.open()
    try:
        ids = await _world(broken)
        # both channels (the lexical one finds nothing of Alice's for these words), then the vector one alone
        for lexical in (True, False):
            broken.lexical_channel = lexical
            result = await broken.search(SearchQuery(ScopeSet.of(ALICE), "bob's salary is 93k", limit=10))
            seen = {(str(h.scope), h.memory.content) for h in result.hits}
            assert seen == {(str(ALICE), "alice likes green tea")}, f"a filterless search as the runtime role returned {seen}"
            restricted = ScopeSet((ScopeEntry(GLOBEX, memory_ids=frozenset({"m-not-there"})),))
            assert (await broken.search(SearchQuery(restricted, "globex merger plan"))).hits == ()
        vector = (await broken._embed(["bob's salary is 93k"]))[0]
        assert [h.memory.id for h in await broken.search_vector(ScopeSet.of(ALICE), vector)] == [ids["alice likes green tea"]]
        # control: the same broken statement as a superuser (row-level security does not bind it) returns every row
        with psycopg.connect(pg_db.admin_url, autocommit=True) as conn:
            conn.execute("SET search_path TO viking_bridge, public")
            text = FilterDroppingBackend._rows_statement({})
            assert len(conn.execute(text, {"top": list(ids.values())}).fetchall()) == 3
    finally:
        await broken.aclose()


async def test_same_broken_query_as_the_owner_would_leak_which_is_why_the_owner_is_refused(pg_db: TestDatabase, backend: PostgresBackend) -> None:
    """Control: the table is readable without the policy (by a superuser), so the RLS tests above
    are not passing merely because the rows are missing."""
    await _world(backend)
    with psycopg.connect(pg_db.admin_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM viking_bridge.memories").fetchone() == (3,)
    for url in (pg_db.owner_url, pg_db.admin_url):  # the owner is a member of itself; the admin is a superuser
        refused = PostgresBackend(url, migrate_url=pg_db.owner_url, pool_size=1)
        with pytest.raises(BackendMisconfigured, match="row-level security would not bind it"):
            await refused.open()


async def test_runtime_role_cannot_switch_row_security_off(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    await _world(backend)
    with as_app(pg_db) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # row_security=off refuses a query RLS would filter
            conn.execute("SET row_security = off")
            conn.execute("SELECT count(*) FROM memories").fetchone()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER TABLE memories DISABLE ROW LEVEL SECURITY")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DROP POLICY memories_in_scope_set ON memories")


async def test_list_scopes_names_a_tenants_scopes_without_reading_rows_and_forgets_emptied_ones(backend: PostgresBackend) -> None:
    ids = await _world(backend)
    assert await backend.list_scopes("acme") == [ALICE, BOB]
    assert await backend.list_scopes("globex") == [GLOBEX]
    assert await backend.delete(BOB, ids["bob's salary is 93k"])
    assert await backend.list_scopes("acme") == [ALICE]


async def test_put_many_lands_all_or_nothing_and_says_which_it_created(backend: PostgresBackend) -> None:
    first = await backend.put(ALICE, note("already there"), idempotency_key="k-1")
    batch = await backend.put_many([(ALICE, note("already there"), "k-1"), (BOB, note("new for bob"), "k-2"), (ALICE, note("new for alice"), "k-3")])
    assert [(m.created, m.scope) for m in batch] == [(False, ALICE), (True, BOB), (True, ALICE)] and batch[0].id == first.id
    from adapters.errors import BackendConflict

    with pytest.raises(BackendConflict):  # one conflicting item: the whole batch rolls back
        await backend.put_many([(GLOBEX, note("would land"), "k-4"), (ALICE, note("other content"), "k-1")])
    assert await backend.list(GLOBEX) == []


async def test_concurrent_updates_of_one_memory_are_never_lost(backend: PostgresBackend) -> None:
    """Each update reads and writes under the row lock: two patches of different fields both stick."""
    import asyncio

    from adapters.base import MemoryPatch

    stored = await backend.put(ALICE, note("alice likes green tea"), idempotency_key="k-u")
    await asyncio.gather(backend.update(ALICE, stored.id, MemoryPatch(confidence=0.5)), backend.update(ALICE, stored.id, MemoryPatch(status=Status.PENDING)))
    final = await backend.get(ALICE, stored.id)
    assert (final.confidence, final.status) == (0.5, Status.PENDING)
    with pytest.raises(Exception) as err:
        await backend.update(BOB, stored.id, MemoryPatch(confidence=0.1))  # another scope: not found, nothing changed
    assert type(err.value).__name__ == "BackendNotFound" and (await backend.get(ALICE, stored.id)).confidence == 0.5


async def test_ann_index_serves_only_its_scope_and_never_widens_a_search(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    for n in range(30):
        await backend.put(ALICE, note(f"alice project note {n} about green tea"), idempotency_key=f"a{n}")
        await backend.put(BOB, note(f"bob project note {n} about green tea"), idempotency_key=f"b{n}")
    name = await backend.create_ann_index(ALICE)
    hits = (await backend.search(SearchQuery(ScopeSet.of(ALICE), "bob project note 3 about green tea", limit=10))).hits
    assert len(hits) == 10 and {h.scope for h in hits} == {ALICE}
    both = (await backend.search(SearchQuery(ScopeSet.of(ALICE, BOB), "bob project note 3 about green tea", limit=5))).hits
    assert both[0].memory.content == "bob project note 3 about green tea"  # the exact branch still ranks bob's scope
    later = PostgresBackend(pg_db.app_url, pool_size=1)  # another replica learns the ANN scope at open
    await later.open()
    try:
        assert later._ann_scopes == {str(ALICE)}
    finally:
        await later.aclose()
    with as_app(pg_db) as conn:
        (predicate,) = conn.execute("SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = %s::regclass", (name,)).fetchone()
    assert str(ALICE) in predicate


# -- the runtime role's reach beyond `memories`: scope names and the cursor key --------------

def _as_runtime(db: TestDatabase, sql: str, tenant: str | None = None) -> list[tuple[Any, ...]]:
    with as_app(db) as conn, conn.transaction():
        if tenant is not None:
            conn.execute("SELECT set_config('viking_bridge.tenant', %s, true)", (tenant,))
        return conn.execute(sql).fetchall()


async def test_runtime_role_reads_no_scope_name_of_a_tenant_its_transaction_did_not_declare(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    """Scope names carry user, team and workspace ids: a filterless read of the per-scope counts
    sees nothing, and a transaction that declared acme sees acme's scopes only, never globex's."""
    await _world(backend)
    assert _as_runtime(pg_db, "SELECT scope FROM memory_scopes") == [], "undeclared: the runtime role read scope names"
    seen = {s for (s,) in _as_runtime(pg_db, "SELECT scope FROM memory_scopes", tenant="acme")}
    assert seen == {str(ALICE), str(BOB)}, f"declared acme, saw {seen}"
    assert set(await backend.list_scopes("acme")) == {ALICE, BOB}
    assert await backend.list_scopes("globex") == [GLOBEX]
    assert await backend.count() == 3  # the operator's total still counts every row (a number, no names)


async def test_runtime_role_cannot_select_the_cursor_key(backend: PostgresBackend, pg_db: TestDatabase) -> None:
    """The key that signs every list cursor is not readable by a plain SELECT as the runtime role."""
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _as_runtime(pg_db, "SELECT value FROM backend_meta WHERE name = 'cursor_key'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _as_runtime(pg_db, "SELECT * FROM backend_meta")
    await _world(backend)
    await backend.put(ALICE, note("alice walks to work"), idempotency_key="k-second")
    first = await backend.list_page(ALICE, limit=1)  # cursors still sign and verify
    assert first.next_cursor is not None
    second = await backend.list_page(ALICE, limit=1, cursor=first.next_cursor)
    assert {m.content for m in (*first.memories, *second.memories)} == {"alice likes green tea", "alice walks to work"}
