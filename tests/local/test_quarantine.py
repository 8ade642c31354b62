"""One damaged row never breaks a scope. It is quarantined (out of the searchable
set, in every process), alarmed (log.error, a counter, a hook), listed for the bridge's audit,
and the rest of the scope keeps being served."""

from __future__ import annotations

import logging
import sqlite3
import struct

import pytest

from adapters.base import NewMemory, Provenance, SearchQuery, Status
from adapters.local import LocalBackend
from adapters.local.store import QuarantinedRow
from adapters.local.errors import DamagedRecord
from adapters.scopes import ScopeKey, ScopeSet
from identity.errors import CorruptStorage

ALICE = ScopeKey.private("acme", "alice")
ALPHA = ScopeKey.workspace("acme", "alpha")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str, **kw) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV, **kw)


def raw(tmp_path) -> sqlite3.Connection:
    """A second connection that damages rows behind the store's back, as a bad disk or import would."""
    return sqlite3.connect(tmp_path / "s" / "memories.sqlite3", isolation_level=None)


DAMAGE = {
    "short vector": ("UPDATE memories SET vector = x'00010203' WHERE id = ?", "bytes"),
    "NaN vector": ("nan", "NaN"),
    "vector turned to non-UTF-8 text": ("UPDATE memories SET vector = x'ff' || substr(vector, 2) WHERE id = ?", "blob"),
    "content not UTF-8": ("UPDATE memories SET content = CAST(x'ff00fe' AS TEXT) WHERE id = ?", "UTF-8"),
    "unknown status": ("UPDATE memories SET status = 'archived-ish' WHERE id = ?", "unknown status"),
    "broken provenance": ("UPDATE memories SET provenance = '{not json' WHERE id = ?", "provenance"),
    "broken metadata": ("UPDATE memories SET metadata = '[1, 2]' WHERE id = ?", "metadata"),
}


def _damage(conn: sqlite3.Connection, how: str, memory_id: str) -> str:
    sql, reason = DAMAGE[how]
    if sql == "nan":  # the first float of the vector becomes NaN; the blob keeps its length
        (blob,) = conn.execute("SELECT vector FROM memories WHERE id = ?", (memory_id,)).fetchone()
        conn.execute("UPDATE memories SET vector = ? WHERE id = ?", (struct.pack("<f", float("nan")) + blob[4:], memory_id))
    else:
        conn.execute(sql, (memory_id,))
    return reason


@pytest.mark.parametrize("how", sorted(DAMAGE))
async def test_one_damaged_row_is_quarantined_and_the_rest_of_the_scope_is_served(tmp_path, caplog, how):
    events: list[QuarantinedRow] = []
    b = LocalBackend(tmp_path / "s", on_quarantine=events.append)
    good = await b.put_many([(ALICE, mem(f"release checklist step {i}"), f"k{i}") for i in range(6)])
    bad = good.pop(2)
    conn = raw(tmp_path)
    reason = _damage(conn, how, bad.id)
    conn.close()
    caplog.set_level(logging.ERROR)
    hits = (await b.search(SearchQuery(ScopeSet.of(ALICE), "release checklist step", limit=10))).hits
    assert sorted(h.memory.id for h in hits) == sorted(m.id for m in good)  # the others, every one of them
    assert b.quarantine_alarms == 1
    assert [(e.scope, e.memory_id) for e in events] == [(str(ALICE), bad.id)] and reason in events[0].reason
    listed = await b.quarantined()
    assert [(q.scope, q.memory_id) for q in listed] == [(str(ALICE), bad.id)]
    assert any(bad.id in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
    # the next recall neither alarms again nor serves the row
    again = (await b.search(SearchQuery(ScopeSet.of(ALICE), "release checklist step", limit=10))).hits
    assert bad.id not in {h.memory.id for h in again} and len(again) == 5 and b.quarantine_alarms == 1
    await b.aclose()


async def test_a_quarantined_row_stays_out_for_every_process_and_alarms_once(tmp_path):
    a = LocalBackend(tmp_path / "s")
    rows = await a.put_many([(ALICE, mem(f"note {i}"), f"k{i}") for i in range(4)])
    other = LocalBackend(tmp_path / "s")
    assert len((await other.search(SearchQuery(ScopeSet.of(ALICE), "note"))).hits) == 4  # other caches the scope
    conn = raw(tmp_path)
    _damage(conn, "unknown status", rows[0].id)
    conn.close()
    assert len((await a.search(SearchQuery(ScopeSet.of(ALICE), "note"))).hits) == 3
    # `other` had the row cached as good; a's quarantine bumped the scope, so other reloads without it
    hits = (await other.search(SearchQuery(ScopeSet.of(ALICE), "note"))).hits
    assert rows[0].id not in {h.memory.id for h in hits} and len(hits) == 3
    assert a.quarantine_alarms == 1 and other.quarantine_alarms == 0  # one row, one alarm
    reopened = LocalBackend(tmp_path / "s")
    assert len((await reopened.search(SearchQuery(ScopeSet.of(ALICE), "note"))).hits) == 3
    assert reopened.quarantine_alarms == 0 and len(await reopened.quarantined()) == 1
    for b in (a, other, reopened):
        await b.aclose()


async def test_reads_of_one_damaged_row_are_typed_and_listings_skip_it(tmp_path):
    b = LocalBackend(tmp_path / "s")
    rows = await b.put_many([(ALICE, mem(f"note {i}"), f"k{i}") for i in range(4)])
    conn = raw(tmp_path)
    _damage(conn, "unknown status", rows[0].id)
    _damage(conn, "short vector", rows[1].id)
    _damage(conn, "content not UTF-8", rows[3].id)
    conn.close()
    with pytest.raises(DamagedRecord):  # bytes that are not UTF-8: this row, not the whole read
        await b.get(ALICE, rows[3].id)
    with pytest.raises(DamagedRecord) as caught:
        await b.get(ALICE, rows[0].id)
    assert isinstance(caught.value, CorruptStorage) and caught.value.memory_id == rows[0].id
    assert str(tmp_path / "s" / "memories.sqlite3") == caught.value.path
    # a row with only a damaged vector still reads (its fields are intact): erasure and admin see it
    assert (await b.get(ALICE, rows[1].id)).content == "note 1"
    listed = [m.id for m in await b.list(ALICE)]
    assert sorted(listed) == sorted([rows[1].id, rows[2].id])
    page = await b.list_page(ALICE)
    assert [m.id for m in page.memories] == [rows[1].id, rows[2].id]
    assert {q.memory_id for q in await b.quarantined()} == {rows[0].id, rows[3].id}  # the vector is found on the next load
    assert {h.memory.id for h in (await b.search(SearchQuery(ScopeSet.of(ALICE), "note"))).hits} == {rows[2].id}
    assert {q.memory_id for q in await b.quarantined()} == {rows[0].id, rows[1].id, rows[3].id}
    await b.aclose()


async def test_damage_in_another_scope_leaves_a_multi_scope_recall_complete(tmp_path):
    b = LocalBackend(tmp_path / "s")
    mine = await b.put_many([(ALICE, mem(f"deploy plan {i}"), f"a{i}") for i in range(3)])
    team = await b.put_many([(ALPHA, mem(f"deploy plan team {i}"), f"t{i}") for i in range(3)])
    conn = raw(tmp_path)
    _damage(conn, "NaN vector", team[0].id)
    conn.close()
    hits = (await b.search(SearchQuery(ScopeSet.of(ALICE, ALPHA), "deploy plan", limit=10, statuses=frozenset(Status)))).hits
    assert {h.memory.id for h in hits} == {m.id for m in mine + team[1:]}
    await b.aclose()


async def test_erasure_removes_the_subjects_undecodable_quarantined_rows(tmp_path):
    b = LocalBackend(tmp_path / "s")
    bob = Provenance("bob", "assistant")
    by_bob = await b.put(ALPHA, NewMemory("bob wrote this", "note", bob), idempotency_key="k1")
    about_bob = await b.put(ALPHA, NewMemory("about bob", "note", PROV, subject_user_id="bob"), idempotency_key="k2")
    bobs_own = await b.put(ScopeKey.private("acme", "bob"), NewMemory("bob private", "note", PROV), idempotency_key="k3")
    alices = await b.put(ALPHA, mem("alice wrote this"), idempotency_key="k4")
    conn = raw(tmp_path)
    for m in (by_bob, about_bob, bobs_own, alices):
        _damage(conn, "unknown status", m.id)
    conn.close()
    assert await b.list(ALPHA) == [] and await b.list(ScopeKey.private("acme", "bob")) == []  # all skipped, all quarantined
    assert await b.erase_subject_traces("acme", "bob") == 3
    assert [q.memory_id for q in await b.quarantined()] == [alices.id]  # another author's row is not erased
    assert b.count() == 1
    await b.aclose()


async def test_erasure_goes_on_past_a_provenance_nested_too_deep_to_parse(tmp_path):
    """json.loads raises RecursionError (not ValueError) on deep nesting: one such damaged row
    must not make a subject's erasure fail."""
    b = LocalBackend(tmp_path / "s")
    deep = await b.put(ALPHA, mem("deeply damaged"), idempotency_key="k1")
    by_bob = await b.put(ALPHA, NewMemory("bob wrote this", "note", Provenance("bob", "assistant")), idempotency_key="k2")
    conn = raw(tmp_path)
    conn.execute("UPDATE memories SET provenance = ? WHERE id = ?", ("[" * 100_000 + "]" * 100_000, deep.id))
    _damage(conn, "unknown status", by_bob.id)
    conn.close()
    assert await b.list(ALPHA) == []  # both quarantined
    assert await b.erase_subject_traces("acme", "bob") == 1
    assert [q.memory_id for q in await b.quarantined()] == [deep.id]
    await b.aclose()
