"""The bridge-state protocols (bridge/state/protocols.py) run against the SQLite state AND the
PostgreSQL state: the protocol suite of tests/bridge/test_state_migrations.py (imported, so it is
literally the same assertions) plus a few more, so PostgreSQL cannot drift from what SQLite keeps.
PostgreSQL-only guarantees (privileges, replicas) follow."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import AsyncIterator

import psycopg
import pytest
import pytest_asyncio

from adapters.base import StoreMarker
from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput
from bridge.state.postgres import PostgresState
from bridge.state.records import AuditView, Grant, InjectDepth, InjectionManifest
from bridge.state.sqlite import SqliteState
from contract_tests.postgres_server import TestDatabase
from identity.model import MemoryIdentity
from tests.bridge.test_state_migrations import (  # noqa: F401  (the SQLite/memory protocol suite, re-run here over `state` below)
    test_audit_views_filters_and_order,
    test_audit_pages_back_with_before_seq_and_filters_by_actor,
    test_grants_roundtrip_revoke_and_purge,
    test_manifest_chain_and_revoke_tree,
    test_manifest_purges,
    test_a_stored_memory_gets_exactly_one_row_however_many_attempts_it_took,
    test_store_marker_only_moves_forward,
    test_write_intents_close_with_their_audit_row_or_recover,
)
from tests.postgres.pgkit import as_app, connect

ALICE = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="coder", session_id="s1")
BOB = MemoryIdentity(tenant_id="acme", user_id="bob", agent_id="coder", session_id="s2")
GLOBEX = MemoryIdentity(tenant_id="globex", user_id="gina", agent_id="coder", session_id="s3")
SCOPE = ScopeKey.private("acme", "alice")


@pytest_asyncio.fixture(params=["sqlite", "postgres"])
async def state(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[object]:
    if request.param == "sqlite":
        s: object = SqliteState(tmp_path / "bridge.sqlite3")
    else:
        db: TestDatabase = request.getfixturevalue("pg_db")
        s = PostgresState(db.app_url, migrate_url=db.owner_url, pool_size=2)
    try:
        yield s
    finally:
        s.close()  # type: ignore[attr-defined]


# -- audit ----------------------------------------------------------------------------------
async def test_audit_rows_come_back_newest_first_inside_their_view_only(state) -> None:  # type: ignore[no-untyped-def]
    a = await state.audit.append(ALICE, "write", memory_ids=["m1"], scopes=[SCOPE], detail={"n": 1})
    b = await state.audit.append(BOB, "recall", memory_ids=["m11", "m2"])
    c = await state.audit.append(GLOBEX, "write", memory_ids=["m1"])
    assert a < b < c
    tenant = await state.audit.query(AuditView("acme", None))
    assert [e.seq for e in tenant] == [b, a]
    assert [e.seq for e in await state.audit.query(AuditView("acme", "alice"))] == [a]
    assert [e.seq for e in await state.audit.query(AuditView("acme", None), memory_id="m1")] == [a]  # whole ids: m11 is not m1
    assert [e.seq for e in await state.audit.query(AuditView("acme", None), action="recall")] == [b]
    assert [e.seq for e in await state.audit.query(AuditView("acme", None), since_seq=a)] == [b]
    first = tenant[-1]
    assert (first.actor, first.scopes, first.detail, first.memory_ids) == (ALICE.principal, (str(SCOPE),), {"n": 1}, ("m1",))


async def test_unknown_audit_action_cannot_be_recorded(state) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput):
        await state.audit.append(ALICE, "rewrite_history")
    assert not await state.audit.has_rows()


async def test_write_intent_closes_with_its_audit_row(state) -> None:  # type: ignore[no-untyped-def]
    intent = await state.audit.begin_intent(ALICE, "remember", SCOPE, "key-1")
    (announced,) = await state.audit.open_intents()
    assert (announced.intent_id, announced.scope, announced.backend_key, announced.actor) == (intent, SCOPE, "key-1", ALICE.principal)
    await state.audit.append(ALICE, "write", memory_ids=["m1"], closes_intent=intent, store_marker=StoreMarker("store-a", 1))
    assert await state.audit.open_intents() == []
    assert await state.audit.bound_store() == StoreMarker("store-a", 1)


async def test_recovered_write_is_audited_in_the_intents_actors_name(state) -> None:  # type: ignore[no-untyped-def]
    intent = await state.audit.begin_intent(ALICE, "remember", SCOPE, "key-1")
    (pending,) = await state.audit.open_intents()
    seq = await state.audit.recover_intent(pending, ("m9",))
    (row,) = await state.audit.query(AuditView("acme", "alice"), action="recovered")
    assert (row.seq, row.actor, row.memory_ids, row.detail["intent"]) == (seq, ALICE.principal, ("m9",), intent)
    assert await state.audit.open_intents() == []


async def test_a_write_slower_than_the_grace_is_audited_once_when_another_replica_reconciled_it(state) -> None:  # type: ignore[no-untyped-def]
    """A replica's open checks may reconcile an intent whose writer is still alive (its put took
    longer than the intent grace). When that writer then closes the intent, the `recovered` row
    already audits the memory: the writer gets that row's seq and writes no second row."""
    intent = await state.audit.begin_intent(ALICE, "remember", SCOPE, "key-1")
    (pending,) = await state.audit.open_intents()
    recovered = await state.audit.recover_intent(pending, ("m9",))
    assert await state.audit.append(ALICE, "write", memory_ids=["m9"], closes_intent=intent) == recovered
    rows = await state.audit.query(AuditView("acme", None), memory_id="m9")
    assert [r.action for r in rows] == ["recovered"]


async def test_store_marker_only_moves_forward_and_only_for_its_store(state) -> None:  # type: ignore[no-untyped-def]
    assert await state.audit.bound_store() is None
    await state.audit.bind_store(StoreMarker("store-a", 5))
    await state.audit.append(ALICE, "write", store_marker=StoreMarker("store-a", 3))
    assert await state.audit.bound_store() == StoreMarker("store-a", 5)
    await state.audit.append(ALICE, "write", store_marker=StoreMarker("store-b", 9))
    assert await state.audit.bound_store() == StoreMarker("store-a", 5)
    await state.audit.append(ALICE, "write", store_marker=StoreMarker("store-a", 7))
    assert await state.audit.bound_store() == StoreMarker("store-a", 7)
    await state.audit.bind_store(StoreMarker("store-b", 0))  # an explicit re-initialisation
    assert await state.audit.bound_store() == StoreMarker("store-b", 0)


# -- grants ---------------------------------------------------------------------------------
def _grant(gid: str, user: str = "carol", expires: float = 2e9) -> Grant:
    return Grant(gid, "acme", user, None, ScopeKey.department("acme", "eng"), "root", "audit", 1e9, expires)


async def test_grants_load_as_stored_and_a_revocation_happens_once(state) -> None:  # type: ignore[no-untyped-def]
    await state.grants.add(_grant("g1"))
    await state.grants.add(_grant("g2", user="dave"))
    assert await state.grants.get("g1") == _grant("g1")
    assert [g.grant_id for g in await state.grants.for_grantee("acme", "carol")] == ["g1"]
    assert await state.grants.revoke("g1", 1.5e9) is True
    assert await state.grants.revoke("g1", 1.6e9) is False
    assert (await state.grants.get("g1")).revoked_at == 1.5e9
    assert await state.grants.purge_grantee("acme", "dave") == 1
    assert await state.grants.get("g2") is None and await state.grants.get("nope") is None


# -- manifests ------------------------------------------------------------------------------
def _manifest(mid: str, parent: str | None = None, *, user: str = "alice", expires: float = 2e9, ids: tuple[str, ...] = ("m1", "m2")) -> InjectionManifest:
    return InjectionManifest(mid, "acme", user, "planner", "coder", "task", InjectDepth.MINIMAL, tuple((SCOPE, i) for i in ids), False, 1e9, expires, parent)


async def test_manifests_load_as_stored_and_chain_nearest_first(state) -> None:  # type: ignore[no-untyped-def]
    root, child, grandchild = _manifest("r"), _manifest("c", "r"), _manifest("g", "c", ids=("m2",))
    for m in (root, child, grandchild):
        await state.manifests.add(m)
    assert await state.manifests.get("c") == child
    assert [m.manifest_id for m in await state.manifests.chain(grandchild)] == ["c", "r"]
    dangling = _manifest("d", "vanished")
    assert await state.manifests.chain(dangling) == []


async def test_revoking_a_manifest_revokes_every_manifest_derived_from_it(state) -> None:  # type: ignore[no-untyped-def]
    for m in (_manifest("r"), _manifest("c", "r"), _manifest("g", "c"), _manifest("other")):
        await state.manifests.add(m)
    assert await state.manifests.revoke_tree("r", 1.5e9) == 3
    assert [(await state.manifests.get(i)).revoked_at for i in ("r", "c", "g", "other")] == [1.5e9, 1.5e9, 1.5e9, None]
    assert await state.manifests.revoke_tree("r", 1.6e9) == 0


async def test_manifest_purges_remove_exactly_what_they_name(state) -> None:  # type: ignore[no-untyped-def]
    await state.manifests.add(_manifest("a"))
    await state.manifests.add(_manifest("b", ids=("m3",)))
    await state.manifests.add(_manifest("old", expires=1.0))
    await state.manifests.add(_manifest("bobs", user="bob"))
    assert await state.manifests.count_active("acme", "alice", 1.5e9) == 2
    assert await state.manifests.purge_memory_ids({"m1"}) == 3  # a, old, bobs held m1
    assert (await state.manifests.get("a")).memory_ids == ("m2",)
    assert await state.manifests.purge_expired(1.5e9) == 1
    assert await state.manifests.purge_user("acme", "bob") == 1
    assert await state.manifests.get("bobs") is None and await state.manifests.get("b") is not None


# -- PostgreSQL only: privileges and replicas -----------------------------------------------
async def test_runtime_role_cannot_update_delete_or_truncate_audit_rows(pg_db: TestDatabase) -> None:
    state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1)
    try:
        await state.audit.append(ALICE, "write", memory_ids=["m1"])
    finally:
        state.close()
    with as_app(pg_db) as conn:
        for statement in ("UPDATE audit SET actor = 'nobody'", "DELETE FROM audit", "TRUNCATE audit"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    with connect(pg_db.owner_url) as conn:  # the owner has the privilege; the trigger still refuses
        for statement in ("UPDATE audit SET actor = 'nobody'", "DELETE FROM audit", "TRUNCATE audit"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                conn.execute(statement)
        assert conn.execute("SELECT actor FROM audit").fetchall() == [(ALICE.principal,)]


async def test_runtime_role_cannot_unrevoke_a_grant_or_rewrite_it(pg_db: TestDatabase) -> None:
    state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1)
    try:
        await state.grants.add(_grant("g1"))
    finally:
        state.close()
    with as_app(pg_db) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # only revoked_at is updatable
            conn.execute("UPDATE grants SET expires_at = 9e9, scope = 'acme/tenant'")


async def test_two_replicas_recovering_one_intent_audit_it_once(pg_db: TestDatabase) -> None:
    a = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    b = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    try:
        await a.audit.begin_intent(ALICE, "remember", SCOPE, "key-1")
        (pending,) = await b.audit.open_intents()
        seqs = await asyncio.gather(a.audit.recover_intent(pending, ("m9",)), b.audit.recover_intent(pending, ("m9",)))
        rows = await a.audit.query(AuditView("acme", None), action="recovered")
        assert len(rows) == 1 and set(seqs) == {rows[0].seq}
    finally:
        a.close()
        b.close()


def test_two_states_opening_a_fresh_database_at_once_both_open(pg_db: TestDatabase) -> None:
    opened: list[object] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def open_one() -> None:
        barrier.wait()
        try:
            opened.append(PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in opened:
        s.close()  # type: ignore[attr-defined]
    assert not errors and len(opened) == 3
    with connect(pg_db.owner_url) as conn:
        rows = conn.execute("SELECT component, count(*) FROM schema_version GROUP BY component ORDER BY component").fetchall()
    assert rows == [("api_keys", 2), ("audit", 1), ("audit_carried", 1), ("grants", 1), ("manifests", 1), ("nonces", 1), ("session_bindings", 1), ("sharing", 1), ("usage", 1)]


async def test_a_replica_opening_mid_write_leaves_a_young_intent_to_its_writer(pg_db: TestDatabase) -> None:
    writer = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1)
    opener = PostgresState(pg_db.app_url, pool_size=1, intent_grace_s=300)
    try:
        intent = await writer.audit.begin_intent(ALICE, "remember", SCOPE, "key-live")
        assert await opener.audit.open_intents() == []  # not reconciled: it may still be in flight
        assert [i.intent_id for i in await writer.audit.open_intents()] == [intent]  # grace 0: a restart sees it
    finally:
        writer.close()
        opener.close()
