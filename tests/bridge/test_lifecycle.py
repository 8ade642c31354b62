"""Expiry and storage quotas in the bridge itself: validation, the write
path's quota reservation, the purge's intents and recovery, the guard's second wall, settings,
and the local store's schema upgrade. The backend-facing guarantees are in
contract_tests/test_lifecycle.py (every adapter)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import pytest

from adapters.base import Hit, NewMemory, Provenance, SearchQuery, StoredMemory
from adapters.local import LocalBackend
from adapters.scopes import ScopeKey, ScopeSet
from bridge.errors import Conflict, InvalidInput, NotPermitted, QuotaExceeded, VikingBridgeError
from bridge.facade import MemoryBridge
from bridge.operations import Capture, PurgeExpired, Remember
from bridge.policy.quotas import QuotaConfig, QuotaLimits, Usage
from bridge.recall.guard import drop_expired
from bridge.writes.recovery import reconcile_intents
from bridge.doors.http.problems import problem_for
from bridge.assembly.settings import load_bridge_settings
from bridge.state.memory import MemoryState
from bridge.state.sqlite import SqliteState
from contract_tests.harness import Clock
from tests.kit import make_identity

ALICE = make_identity("alice")
ADMIN = make_identity("root", roles=["admin"])


@pytest.fixture
async def clocked(tmp_path: Path):
    clock = Clock()
    b = MemoryBridge.open_local(tmp_path / "home", clock=clock, quotas=QuotaConfig(user=QuotaLimits(max_memories=3, max_bytes=400)))
    yield b, clock
    await b.aclose()


# -- validation -----------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"expires_at": 1e12}, {"expires_at": -1.0}, {"expires_at": True}, {"expires_at": "soon"}, {"expires_at": float("inf")},
    {"ttl_s": 0}, {"ttl_s": -1}, {"ttl_s": 11 * 365 * 86400}, {"ttl_s": [60]}, {"ttl_s": float("nan")},
    {"expires_at": 2e9, "ttl_s": 60},
])
def test_malformed_expiry_is_invalid_input_at_construction(fields) -> None:
    with pytest.raises(InvalidInput):
        Remember(content="content", kind="fact", **fields)
    with pytest.raises(InvalidInput):
        Capture(messages=[{"role": "user", "content": "I prefer tea."}], **fields)


async def test_an_expiry_in_the_past_by_the_bridge_clock_writes_nothing(clocked) -> None:
    bridge, clock = clocked
    with pytest.raises(InvalidInput, match="not in the future"):
        await bridge.remember(ALICE, "stale", "fact", expires_at=clock.now)
    assert await bridge.backend.list(ScopeKey.private("acme", "alice")) == []
    assert await bridge.state.usage.usage("acme", "alice") == Usage(0, 0)


async def test_ttl_is_resolved_against_the_bridge_clock_and_stored(clocked) -> None:
    bridge, clock = clocked
    result = await bridge.remember(ALICE, "rotate the keys", "fact", visibility="private", ttl_s=90)
    assert result.expires_at == pytest.approx(clock.now + 90)
    stored = await bridge.backend.get(ScopeKey.parse(result.scope), result.memory_id)
    assert stored.expires_at == pytest.approx(clock.now + 90)


# -- the guard, the second wall ------------------------------------------------------------
def _hit(expires_at: float | None) -> Hit:
    memory = StoredMemory.from_new("m1", ScopeKey.private("acme", "alice"), NewMemory("x", "fact", Provenance("alice", "a"), expires_at=expires_at), now=100.0)
    return Hit(memory, memory.scope, 0.9)


def test_guard_alarms_on_an_expired_hit_from_a_backend_that_filters_expiry() -> None:
    kept, alarms, dropped = drop_expired([_hit(150.0), _hit(None)], 200.0, backend_filters=True)
    assert len(kept) == 1 and kept[0].memory.expires_at is None
    assert [a.reason for a in alarms] == ["memory had expired"] and dropped == 0


def test_guard_counts_expired_hits_of_a_backend_that_cannot_filter_expiry() -> None:
    kept, alarms, dropped = drop_expired([_hit(150.0), _hit(250.0)], 200.0, backend_filters=False)
    assert [h.memory.expires_at for h in kept] == [250.0] and alarms == [] and dropped == 1


# -- quotas ---------------------------------------------------------------------------------
async def test_quota_exceeded_is_a_typed_conflict_and_maps_to_409(clocked) -> None:
    bridge, _ = clocked
    for n in range(3):
        await bridge.remember(ALICE, f"note {n}", "note")
    with pytest.raises(QuotaExceeded) as refused:
        await bridge.remember(ALICE, "note 3", "note")
    exc = refused.value
    assert isinstance(exc, Conflict) and isinstance(exc, VikingBridgeError)
    status, body, _ = problem_for(exc, "req-1")
    assert (status, body["type"], body["level"], body["measure"], body["used"], body["limit"]) == (409, "urn:viking-bridge:problem:quota-exceeded", "user", "memories", 3, 3)
    assert not await bridge.state.audit.open_intents(), "a refused write announced nothing"


async def test_an_idempotent_retry_does_not_count_twice(clocked) -> None:
    bridge, _ = clocked
    for _ in range(3):
        await bridge.remember(ALICE, "the same note", "note", idempotency_key="k1")
    assert await bridge.state.usage.usage("acme", "alice") == Usage(1, len("the same note"))


async def test_a_capture_over_the_byte_quota_writes_none_of_its_memories(clocked) -> None:
    bridge, _ = clocked
    long = "I prefer " + "very " * 30 + "strong coffee."  # ~170 bytes each: two fit in 400, three do not
    messages = [{"role": "user", "content": long.replace("coffee", drink)} for drink in ("coffee", "tea", "cocoa")]
    with pytest.raises(QuotaExceeded) as refused:
        await bridge.capture(ALICE, messages)
    assert refused.value.measure == "bytes"
    assert await bridge.backend.list(ScopeKey.private("acme", "alice")) == []
    assert await bridge.state.usage.usage("acme", "alice") == Usage(0, 0)
    done = await bridge.capture(ALICE, messages[:2])
    assert len(done.written) == 2


async def test_forget_and_erasure_give_the_space_back(clocked) -> None:
    bridge, _ = clocked
    written = [await bridge.remember(ALICE, f"note {n}", "note") for n in range(3)]
    assert await bridge.forget(ALICE, written[0].ref)
    assert (await bridge.state.usage.usage("acme", "alice")).memories == 2
    await bridge.forget_subject(ALICE, "alice")
    assert await bridge.state.usage.usage("acme", "alice") == Usage(0, 0)
    assert await bridge.state.usage.usage("acme") == Usage(0, 0)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_concurrent_reservations_never_pass_the_limit(kind: str, tmp_path: Path) -> None:
    state = MemoryState() if kind == "memory" else SqliteState(tmp_path / "bridge.sqlite3")
    limits = QuotaLimits(max_memories=5)
    outcomes = await asyncio.gather(
        *(state.usage.reserve("acme", f"u{n % 3}", Usage(1, 10), limits, QuotaLimits()) for n in range(20)), return_exceptions=True
    )
    assert sum(o is None for o in outcomes) == 5 and all(o is None or isinstance(o, QuotaExceeded) for o in outcomes)
    assert await state.usage.usage("acme") == Usage(5, 50)


def test_two_processes_sharing_one_state_file_never_pass_the_limit(tmp_path: Path) -> None:
    """Two SqliteState objects on one file (two processes' view): BEGIN IMMEDIATE serialises."""
    import threading

    path = tmp_path / "bridge.sqlite3"
    states = [SqliteState(path), SqliteState(path)]
    results: list[object] = []

    def writer(state: SqliteState) -> None:
        for _ in range(10):
            try:
                asyncio.run(state.usage.reserve("acme", "alice", Usage(1, 1), QuotaLimits(max_memories=7), QuotaLimits()))
                results.append("ok")
            except QuotaExceeded as exc:
                results.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 7
    assert asyncio.run(states[0].usage.usage("acme")) == Usage(7, 7)


def test_quota_settings_from_environment_and_overrides(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_QUOTA_USER_MAX_MEMORIES", "100")
    monkeypatch.setenv("VIKING_BRIDGE_QUOTA_TENANT_MAX_BYTES", "1000000")
    monkeypatch.setenv("VIKING_BRIDGE_QUOTA_OVERRIDES", json.dumps({"acme": {"user_max_memories": 5}}))
    quotas = load_bridge_settings(home=tmp_path).quotas()
    assert quotas.enabled
    assert quotas.limits_for("globex") == (QuotaLimits(None, 1_000_000), QuotaLimits(100, None))
    assert quotas.limits_for("acme") == (QuotaLimits(None, 1_000_000), QuotaLimits(5, None))


def test_quota_overrides_from_a_toml_file(monkeypatch, tmp_path: Path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text('quota_tenant_max_memories = 10\n[quota_overrides.acme]\ntenant_max_memories = 50\n')
    monkeypatch.setenv("VIKING_BRIDGE_CONFIG_FILE", str(config))
    quotas = load_bridge_settings(home=tmp_path).quotas()
    assert quotas.limits_for("acme")[0] == QuotaLimits(50, None) and quotas.limits_for("other")[0] == QuotaLimits(10, None)


@pytest.mark.parametrize("bad", ['{"acme": {"tenant_max_memories": -1}}', '{"acme": {"tenant_max_memorys": 1}}', "not json"])
def test_a_bad_quota_override_fails_at_start_up_naming_the_setting(monkeypatch, tmp_path: Path, bad: str) -> None:
    from bridge.errors import ConfigurationError

    monkeypatch.setenv("VIKING_BRIDGE_QUOTA_OVERRIDES", bad)
    with pytest.raises(ConfigurationError, match="(?i)quota_overrides"):
        load_bridge_settings(home=tmp_path)


# -- the purge ------------------------------------------------------------------------------
async def test_members_cannot_purge_and_the_refusal_is_audited(clocked) -> None:
    bridge, _ = clocked
    with pytest.raises(NotPermitted):
        await bridge.execute(ALICE, PurgeExpired())
    assert [e.action for e in await bridge.audit_events(ADMIN, action="denied")] == ["denied"]


async def test_a_purge_killed_after_the_delete_is_audited_at_the_next_open(clocked, monkeypatch) -> None:
    """The intent precedes the delete: a crash between the delete and the audit row leaves it
    open, and reconciliation audits it (`recovered`, operation `expired`)."""
    bridge, clock = clocked
    doomed = await bridge.remember(ALICE, "short-lived", "note", ttl_s=5)
    clock.now += 6
    import bridge.handlers.expiry as expiry

    async def crash(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies after backend.delete, before the audit row

    monkeypatch.setattr(bridge.state.audit, "append", crash)
    with pytest.raises(KeyboardInterrupt):
        await expiry.purge_expired(bridge.runtime, ADMIN, PurgeExpired())
    monkeypatch.undo()
    assert await reconcile_intents(bridge.runtime) == 1
    (row,) = await bridge.audit_events(ADMIN, action="recovered")
    assert row.memory_ids == (doomed.memory_id,) and row.detail["operation"] == "expired"


# -- the local store ------------------------------------------------------------------------
async def test_a_schema_2_local_store_gains_the_expiry_column_and_index_at_open(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path / "store")
    kept = await store.put(ScopeKey.private("acme", "alice"), NewMemory("before the upgrade", "fact", Provenance("alice", "a")), idempotency_key="k")
    await store.aclose()
    db = sqlite3.connect(tmp_path / "store" / "memories.sqlite3")
    db.execute("DROP INDEX memories_expiring")
    db.execute("ALTER TABLE memories DROP COLUMN expires_at")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = LocalBackend(tmp_path / "store", expect_existing=True)
    try:
        assert (await store.get(kept.scope, kept.id)).expires_at is None
        later = await store.put(kept.scope, NewMemory("after", "fact", Provenance("alice", "a"), expires_at=time.time() + 5), idempotency_key="k2")
        result = await store.search(SearchQuery(ScopeSet.of(kept.scope), "after", now=time.time() + 10))
        assert later.id not in {h.memory.id for h in result.hits} and kept.id in {h.memory.id for h in result.hits}
    finally:
        await store.aclose()
    db = sqlite3.connect(tmp_path / "store" / "memories.sqlite3")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)  # the current schema (4: the lexical index, adapters/local/lexical.py)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'memories_expiring'").fetchone() == ("memories_expiring",)
    db.close()


async def test_an_edit_that_grows_past_the_byte_quota_is_refused_and_changes_nothing(clocked) -> None:
    bridge, _ = clocked
    note = await bridge.remember(ALICE, "short", "note")
    with pytest.raises(QuotaExceeded):
        await bridge.edit_memory(ALICE, note.ref, content="x" * 500)
    assert (await bridge.get_memory(ALICE, note.ref)).content == "short"
    assert await bridge.state.usage.usage("acme", "alice") == Usage(1, 5)
    await bridge.edit_memory(ALICE, note.ref, content="a bit longer")
    assert await bridge.state.usage.usage("acme", "alice") == Usage(1, len("a bit longer"))
    await bridge.edit_memory(ALICE, note.ref, content="tiny")
    assert await bridge.state.usage.usage("acme", "alice") == Usage(1, 4)


async def test_an_expired_memory_neither_blocks_its_key_nor_stands_in_for_a_new_write(clocked) -> None:  # type: ignore[no-untyped-def]
    """Expired = gone: a write under the key of an expired memory lands (the expired one is
    retired and audited as the purge would), and the same content under that key is a new,
    live memory — never a 'deduplicated' answer pointing at the expired one."""
    b, clock = clocked
    first = await b.remember(ALICE, "the canary window is 10 minutes", "fact", idempotency_key="canary", ttl_s=60)
    clock.now += 61
    again = await b.remember(ALICE, "the canary window is 10 minutes", "fact", idempotency_key="canary", ttl_s=60)
    assert not again.deduplicated and again.expires_at and again.expires_at > clock.now
    clock.now += 61
    changed = await b.remember(ALICE, "the canary window is 15 minutes", "fact", idempotency_key="canary")
    assert changed.expires_at is None
    retired = await b.audit_events(ALICE, action="expired")
    assert sorted(m for e in retired for m in e.memory_ids) == sorted([first.memory_id, again.memory_id])
    seen = await b.recall(ALICE, "canary window")
    assert [i.content for i in seen.items] == ["the canary window is 15 minutes"]
