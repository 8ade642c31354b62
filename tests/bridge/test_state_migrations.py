"""The bridge's own state: a first-release `bridge.sqlite3` opens with today's code, and both
state implementations (SQLite, in-memory) keep the same protocol (bridge/state/protocols.py).

The first release (commit 19449a0) created its tables without a schema version, and kept a
manifest's entries as a JSON list in `manifests.entries`. `FIRST_RELEASE_SCHEMA` below is that
release's DDL verbatim (bridge/audit.py, bridge/grants.py, bridge/multiagent.py there), frozen
here on purpose: the test must keep describing the files users really have even if someone
edits migration 1.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from adapters.base import StoreMarker
from adapters.scopes import ScopeKey
from bridge import InvalidInput, MemoryBridge
from bridge.state.memory import MemoryState
from bridge.state.records import AuditView, Grant, InjectDepth, InjectionManifest
from bridge.state.sqlite import SqliteState
from bridge.recall.scopes import load_manifest_for
from tests.kit import make_identity

FIRST_RELEASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, tenant_id TEXT NOT NULL, actor TEXT NOT NULL,
    user_id TEXT NOT NULL, actor_fingerprint TEXT NOT NULL, session_id TEXT NOT NULL, action TEXT NOT NULL,
    memory_ids TEXT NOT NULL, scopes TEXT NOT NULL, grant_ids TEXT NOT NULL, detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_tenant ON audit (tenant_id, seq);
CREATE INDEX IF NOT EXISTS audit_by_user ON audit (tenant_id, user_id, seq);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TABLE IF NOT EXISTS grants (
    grant_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, grantee_user_id TEXT NOT NULL, grantee_agent_id TEXT,
    scope TEXT NOT NULL, issued_by TEXT NOT NULL, reason TEXT NOT NULL, issued_at REAL NOT NULL,
    expires_at REAL NOT NULL, revoked_at REAL
);
CREATE TABLE IF NOT EXISTS manifests (
    manifest_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, parent_agent_id TEXT NOT NULL,
    child_agent_id TEXT NOT NULL, task TEXT NOT NULL, depth TEXT NOT NULL, entries TEXT NOT NULL,
    may_reinject INTEGER NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL
);
"""

ALICE, BOB, ZED = make_identity(), make_identity("bob"), make_identity("zed", tenant="globex")
AGENT_SCOPE = "acme/agent/orchestrator/alice"


def _first_release_file(path: Path) -> dict[str, object]:
    """A bridge.sqlite3 as the first release left it: two writes, one manifest, one grant."""
    now = time.time()
    ids = {"m1": uuid.uuid4().hex, "m2": uuid.uuid4().hex, "other": uuid.uuid4().hex, "manifest": uuid.uuid4().hex, "grant": uuid.uuid4().hex}
    conn = sqlite3.connect(path)
    conn.executescript(FIRST_RELEASE_SCHEMA)
    audit = "INSERT INTO audit (ts, tenant_id, actor, user_id, actor_fingerprint, session_id, action, memory_ids, scopes, grant_ids, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    for mid in (ids["m1"], ids["m2"]):
        conn.execute(audit, (now, "acme", "acme/alice@orchestrator", "alice", ALICE.fingerprint, "s-old", "write", json.dumps([mid]), json.dumps([AGENT_SCOPE]), "[]", json.dumps({"kind": "note"})))
    conn.execute(audit, (now, "acme", "acme/alice@orchestrator", "alice", ALICE.fingerprint, "s-old", "inject", json.dumps([ids["m1"], ids["m2"]]), json.dumps([AGENT_SCOPE]), json.dumps([ids["manifest"]]), "{}"))
    conn.execute(
        "INSERT INTO manifests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (ids["manifest"], "acme", "alice", "orchestrator", "worker", "migration", "standard",
         json.dumps([[AGENT_SCOPE, ids["m1"]], [AGENT_SCOPE, ids["m2"]]]), 0, now, now + 3600),
    )
    conn.execute(
        "INSERT INTO manifests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (ids["other"], "acme", "alice", "orchestrator", "tester", "other task", "minimal", json.dumps([[AGENT_SCOPE, ids["m2"]]]), 1, now, now + 3600),
    )
    conn.execute("INSERT INTO grants VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)", (ids["grant"], "acme", "bob", None, "acme/dept/sales", "acme/dave@assistant", "audit", now, now + 3600))
    conn.commit()
    conn.close()
    return ids


async def test_a_first_release_state_file_opens_with_its_history_and_manifests(tmp_path):
    path = tmp_path / "bridge.sqlite3"
    ids = _first_release_file(path)
    state = SqliteState(path)
    try:
        history = await state.audit.query(AuditView("acme", None))
        assert [e.action for e in history] == ["inject", "write", "write"], "the audit history did not survive the upgrade"
        assert history[-1].memory_ids == (ids["m1"],) and history[0].grant_ids == (ids["manifest"],)
        manifest = await state.manifests.get(ids["manifest"])
        assert manifest is not None and manifest.memory_ids == (ids["m1"], ids["m2"])
        assert manifest.entries[0][0] == ScopeKey.parse(AGENT_SCOPE)
        assert manifest.parent_manifest_id is None and manifest.revoked_at is None and not manifest.may_reinject
        rows = state.db.query("SELECT manifest_id, position, scope, memory_id FROM manifest_entries ORDER BY manifest_id, position")
        assert sorted(rows) == sorted([(ids["manifest"], 0, AGENT_SCOPE, ids["m1"]), (ids["manifest"], 1, AGENT_SCOPE, ids["m2"]), (ids["other"], 0, AGENT_SCOPE, ids["m2"])])
        assert (await state.manifests.get(ids["other"])).may_reinject
        assert await state.manifests.purge_memory_ids({ids["m1"]}) == 1  # the index works on migrated rows
        assert (await state.manifests.get(ids["manifest"])).memory_ids == (ids["m2"],)
        assert [g.grant_id for g in await state.grants.for_grantee("acme", "bob")] == [ids["grant"]]
        seq = await state.audit.append(ALICE, "write", memory_ids=["new"])
        assert seq == 4, "the audit sequence restarted after the upgrade"
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            state.db.conn.execute("DELETE FROM audit")
        assert await state.audit.bound_store() is None and await state.audit.has_rows()
    finally:
        state.close()
    again = SqliteState(path)  # migrations are applied once: reopening changes nothing
    try:
        assert len(await again.audit.query(AuditView("acme", None))) == 4
        assert (await again.manifests.get(ids["manifest"])).memory_ids == (ids["m2"],)
    finally:
        again.close()


async def test_a_first_release_home_opens_through_the_bridge(tmp_path):
    """A home whose state predates the store binding is bound on first open (its audit rows are
    the proof it is not a deleted-and-recreated state), and its manifests still work."""
    home = tmp_path / "home"
    home.mkdir()
    b = MemoryBridge.open_local(home)  # a store with memories the old manifest names
    parent = make_identity(agent="orchestrator")
    m1 = await b.remember(parent, "plan: split the migration", "note", visibility="agent")
    await b.aclose()
    (home / "bridge.sqlite3").unlink()
    for sidecar in ("bridge.sqlite3-wal", "bridge.sqlite3-shm"):
        (home / sidecar).unlink(missing_ok=True)
    ids = _first_release_file(home / "bridge.sqlite3")
    conn = sqlite3.connect(home / "bridge.sqlite3")
    conn.execute("UPDATE manifests SET entries = ? WHERE manifest_id = ?", (json.dumps([[AGENT_SCOPE, m1.memory_id]]), ids["manifest"]))
    conn.commit()
    conn.close()
    b = MemoryBridge.open_local(home)
    try:
        admin = make_identity("dave", roles=("admin",))
        assert [e.action for e in await b.audit_events(admin)][-3:] == ["inject", "write", "write"]
        manifest = await load_manifest_for(b.runtime, make_identity(agent="worker"), ids["manifest"])
        seen = await b.recall(make_identity(agent="worker"), "plan split the migration", manifest_id=manifest.manifest_id)
        assert m1.memory_id in {i.memory_id for i in seen.items}
        assert await b.state.audit.bound_store() is not None
    finally:
        await b.aclose()


# -- one protocol, two implementations ----------------------------------------------------------


@pytest.fixture(params=["sqlite", "memory"])
async def state(request, tmp_path):
    s = SqliteState(tmp_path / "bridge.sqlite3") if request.param == "sqlite" else MemoryState()
    yield s
    await s.aclose()


async def test_audit_views_filters_and_order(state):
    a1 = await state.audit.append(ALICE, "write", memory_ids=["abc"], scopes=[ScopeKey.private("acme", "alice")], detail={"kind": "note", "n": 1})
    b1 = await state.audit.append(BOB, "recall", memory_ids=["ab"], grant_ids=["g1", None, "g1"])
    z1 = await state.audit.append(ZED, "write", memory_ids=["abc"])
    a2 = await state.audit.append(make_identity(agent="coder"), "forget", memory_ids=["abc"])
    assert a1 < b1 < z1 < a2
    tenant = await state.audit.query(AuditView("acme", None))
    assert [e.seq for e in tenant] == [a2, b1, a1], "a tenant view is that tenant's rows, newest first"
    assert [e.seq for e in await state.audit.query(AuditView("acme", "alice"))] == [a2, a1], "a user's view is every agent of that user"
    assert [e.seq for e in await state.audit.query(AuditView("globex", None))] == [z1]
    assert [e.seq for e in await state.audit.query(AuditView("acme", None), memory_id="ab")] == [b1], "memory_id matches whole ids only"
    assert [e.seq for e in await state.audit.query(AuditView("acme", None), action="write")] == [a1]
    assert [e.seq for e in await state.audit.query(AuditView("acme", None), since_seq=a1)] == [a2, b1]
    assert [e.seq for e in await state.audit.query(AuditView("acme", None), limit=1)] == [a2]
    first = tenant[-1]
    assert first.scopes == ("acme/user/alice",) and first.detail == {"kind": "note", "n": 1} and first.actor == ALICE.principal
    assert tenant[1].grant_ids == ("g1",)
    with pytest.raises(InvalidInput):
        await state.audit.append(ALICE, "rewrite_history")


async def test_audit_pages_back_with_before_seq_and_filters_by_actor(state):
    """The newest-first log can be walked past any page: `before_seq` = the smallest seq shown.
    Without it only the newest `limit` rows were ever reachable."""
    coder = make_identity(agent="coder")
    seqs = [await state.audit.append(ALICE if n % 2 else coder, "write", memory_ids=[f"m{n}"]) for n in range(7)]
    other = await state.audit.append(ZED, "write", memory_ids=["z"])
    view = AuditView("acme", None)
    walked, before = [], None
    while True:
        page = await state.audit.query(view, limit=3, before_seq=before)
        walked += [e.seq for e in page]
        if len(page) < 3:
            break
        before = page[-1].seq
    assert walked == sorted(seqs, reverse=True) and other not in walked, "three pages, newest first, every row once"
    assert [e.seq for e in await state.audit.query(view, before_seq=seqs[3], since_seq=seqs[0])] == [seqs[2], seqs[1]], "both bounds are exclusive"
    assert [e.seq for e in await state.audit.query(view, actor=coder.principal)] == [s for n, s in enumerate(seqs) if n % 2 == 0][::-1]
    assert [e.seq for e in await state.audit.query(view, actor=coder.principal, before_seq=seqs[4], limit=1)] == [seqs[2]]
    assert await state.audit.query(view, actor=ZED.principal) == [], "another tenant's actor is not in this tenant's view"
    assert await state.audit.query(AuditView("acme", "bob"), actor=ALICE.principal) == [], "the view still bounds an actor filter"


async def test_write_intents_close_with_their_audit_row_or_recover(state):
    scope = ScopeKey.private("acme", "alice")
    assert await state.audit.open_intents() == [] and not await state.audit.has_rows()
    one = await state.audit.begin_intent(ALICE, "write", scope, "vb-key-1")
    two = await state.audit.begin_intent(ALICE, "promote", scope, "vb-key-2")
    three = await state.audit.begin_intent(BOB, "write", scope, "vb-key-3")
    assert {i.intent_id for i in await state.audit.open_intents()} == {one, two, three}
    (intent,) = [i for i in await state.audit.open_intents() if i.intent_id == two]
    assert (intent.actor, intent.user_id, intent.scope, intent.backend_key, intent.action) == (ALICE.principal, "alice", scope, "vb-key-2", "promote")
    await state.audit.append(ALICE, "write", memory_ids=["m1"], closes_intent=one)
    await state.audit.close_intent(three)
    seq = await state.audit.recover_intent(intent, ("m2",))
    assert await state.audit.open_intents() == []
    (row,) = await state.audit.query(AuditView("acme", "alice"), action="recovered")
    assert row.seq == seq and row.memory_ids == ("m2",) and row.actor == ALICE.principal and row.detail["operation"] == "promote"
    assert await state.audit.query(AuditView("acme", "bob")) == [], "closing an intent that never landed audits nothing"


async def test_a_stored_memory_gets_exactly_one_row_however_many_attempts_it_took(state):
    """`append_stored`: the row closes every open attempt of the same write (scope + backend
    key), a deduplicated attempt of an audited memory adds no row, and open checks do not
    audit again a memory that has its row."""
    scope, other = ScopeKey.private("acme", "alice"), ScopeKey.private("acme", "bob")
    audit = state.audit
    lost = await audit.begin_intent(ALICE, "write", scope, "vb-k")  # failed retryably, stays open
    unrelated = await audit.begin_intent(BOB, "write", other, "vb-k")  # same key text, another scope
    retry = await audit.begin_intent(ALICE, "write", scope, "vb-k")
    seq = await audit.append_stored(ALICE, "write", memory_id="m1", scope=scope, backend_key="vb-k", created=True, closes_intent=retry)
    assert [i.intent_id for i in await audit.open_intents()] == [unrelated]
    again = await audit.begin_intent(ALICE, "write", scope, "vb-k")
    assert await audit.append_stored(ALICE, "write", memory_id="m1", scope=scope, backend_key="vb-k", created=False, closes_intent=again) == seq
    stale = await audit.begin_intent(ALICE, "write", scope, "vb-k")
    (pending,) = [i for i in await audit.open_intents() if i.intent_id == stale]
    assert await audit.recover_intent(pending, ("m1",)) == seq
    rows = await audit.query(AuditView("acme", None), memory_id="m1")
    assert [r.seq for r in rows] == [seq] and lost != retry
    assert [i.intent_id for i in await audit.open_intents()] == [unrelated]
    # a deduplicated attempt of a memory whose first attempt never got its row does write it
    first = await audit.begin_intent(ALICE, "write", scope, "vb-k2")
    second = await audit.begin_intent(ALICE, "write", scope, "vb-k2")
    await audit.append_stored(ALICE, "write", memory_id="m2", scope=scope, backend_key="vb-k2", created=False, closes_intent=second)
    assert len(await audit.query(AuditView("acme", None), memory_id="m2")) == 1
    assert first not in {i.intent_id for i in await audit.open_intents()}


async def test_store_marker_only_moves_forward(state):
    audit = state.audit
    assert await audit.bound_store() is None
    await audit.bind_store(StoreMarker("store-a", 3))
    await audit.append(ALICE, "write", store_marker=StoreMarker("store-a", 7))
    await audit.append(ALICE, "write", store_marker=StoreMarker("store-a", 5))  # another process's older view
    assert await audit.bound_store() == StoreMarker("store-a", 7)
    await audit.begin_intent(ALICE, "write", ScopeKey.private("acme", "alice"), "k")
    (intent,) = await audit.open_intents()
    await audit.recover_intent(intent, ("m",), StoreMarker("store-a", 6))
    assert await audit.bound_store() == StoreMarker("store-a", 7), "recovery moved the store marker backwards"
    await audit.append(ALICE, "write", store_marker=StoreMarker("store-b", 99))  # not the bound store: ignored
    assert await audit.bound_store() == StoreMarker("store-a", 7)
    await audit.bind_store(StoreMarker("store-b", 1))  # re-initialisation is explicit
    assert await audit.bound_store() == StoreMarker("store-b", 1)


async def test_grants_roundtrip_revoke_and_purge(state):
    g = Grant("g1", "acme", "bob", None, ScopeKey.department("acme", "sales"), "acme/dave@assistant", "audit", 100.0, 200.0)
    await state.grants.add(g)
    await state.grants.add(Grant("g2", "acme", "bob", "coder", ScopeKey.workspace("acme", "beta"), "acme/dave@assistant", "x", 100.0, 300.0))
    await state.grants.add(Grant("g3", "globex", "bob", None, ScopeKey.tenant("globex"), "globex/x@a", "y", 100.0, 300.0))
    assert await state.grants.get("g1") == g and await state.grants.get("nope") is None
    assert {x.grant_id for x in await state.grants.for_grantee("acme", "bob")} == {"g1", "g2"}
    assert await state.grants.revoke("g1", 150.0) and not await state.grants.revoke("g1", 160.0)
    revoked = await state.grants.get("g1")
    assert revoked.revoked_at == 150.0 and not revoked.active(151.0)
    assert await state.grants.purge_grantee("acme", "bob") == 2
    assert await state.grants.for_grantee("acme", "bob") == [] and await state.grants.get("g3") is not None


def _manifest(mid: str, *, parent: str | None = None, user: str = "alice", expires: float = 1000.0, ids: tuple[str, ...] = ("m1",), child: str = "worker") -> InjectionManifest:
    scope = ScopeKey.agent("acme", "orchestrator", user)
    return InjectionManifest(mid, "acme", user, "orchestrator", child, f"task {mid}", InjectDepth.MINIMAL, tuple((scope, i) for i in ids), parent is None, 10.0, expires, parent)


async def test_manifest_chain_and_revoke_tree(state):
    repo = state.manifests
    for m in (_manifest("root"), _manifest("child", parent="root"), _manifest("grand", parent="child"), _manifest("sibling", parent="root"), _manifest("unrelated")):
        await repo.add(m)
    assert await repo.get("child") == _manifest("child", parent="root")
    assert [m.manifest_id for m in await repo.chain(await repo.get("grand"))] == ["child", "root"], "chain is nearest first"
    assert await repo.chain(await repo.get("root")) == []
    assert await repo.revoke_tree("child", 50.0) == 2
    assert (await repo.get("grand")).revoked_at == 50.0 and (await repo.get("root")).revoked_at is None, "revocation runs down, never up"
    assert await repo.revoke_tree("root", 60.0) == 2, "already revoked manifests are not counted twice"
    assert (await repo.get("child")).revoked_at == 50.0 and (await repo.get("sibling")).revoked_at == 60.0
    assert (await repo.get("unrelated")).revoked_at is None
    assert await repo.revoke_tree("no-such-manifest", 70.0) == 0


async def test_manifest_purges(state):
    repo = state.manifests
    await repo.add(_manifest("a", ids=("m1", "m2")))
    await repo.add(_manifest("b", ids=("m2",)))
    await repo.add(_manifest("c", ids=("m3",)))
    await repo.add(_manifest("old", expires=50.0))
    await repo.add(_manifest("bob1", user="bob"))
    await repo.add(_manifest("bob2", user="bob"))
    assert await repo.count_active("acme", "alice", 40.0) == 4 and await repo.count_active("acme", "alice", 60.0) == 3
    assert await repo.purge_memory_ids({"m2", "unknown"}) == 2
    assert (await repo.get("a")).memory_ids == ("m1",) and (await repo.get("b")).memory_ids == () and (await repo.get("c")).memory_ids == ("m3",)
    assert await repo.purge_memory_ids(set()) == 0
    await repo.revoke_tree("c", 55.0)
    assert await repo.purge_expired(60.0, limit=1) == 1, "purge_expired honours its batch limit"
    assert await repo.purge_expired(60.0) == 1
    assert await repo.get("old") is None and await repo.get("c") is None and await repo.get("a") is not None
    assert await repo.purge_user("acme", "bob") == 2 and await repo.get("bob1") is None
    assert await repo.count_active("acme", "bob", 0.0) == 0
