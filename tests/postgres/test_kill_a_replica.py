"""SIGKILL a replica in the middle of writes: every acknowledged write is present exactly once
afterwards, and every stored memory has exactly one audit row (written, or recovered by the next
replica to open). The killed process is a real one, writing to a real PostgreSQL."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from pathlib import Path

from adapters.postgres import PostgresBackend
from adapters.scopes import ScopeKey
from bridge.facade import MemoryBridge
from bridge.state.postgres import PostgresState
from bridge.state.records import AuditView
from contract_tests.postgres_server import TestDatabase
from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore
from identity.sessions import SessionBinder

ROOT = Path(__file__).resolve().parents[2]


async def test_every_acknowledged_write_survives_a_sigkilled_replica_exactly_once(pg_db: TestDatabase) -> None:
    state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    key = ApiKeyStore(state.api_key_repository()).issue(tenant_id="acme", user_id="alice", agent_id="assistant", label="t").key
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.postgres.writer_child", pg_db.app_url, pg_db.owner_url, key],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    acked: dict[str, str] = {}
    try:
        assert child.stdout is not None
        for line in child.stdout:  # bounded: the child writes until killed, we kill it after 40 acks
            _, n, memory_id = line.split()
            acked[n] = memory_id
            if len(acked) == 40:
                os.kill(child.pid, signal.SIGKILL)  # mid-stream: the next write is in flight
                break
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
    assert len(acked) == 40, f"the writer died early: {child.stderr.read() if child.stderr else ''}"

    backend = PostgresBackend(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    await backend.open()
    bridge = MemoryBridge(backend, state, sessions=SessionBinder(state.session_repository()))
    try:
        alice = await ApiKeyProvider(ApiKeyStore(state.api_key_repository())).authenticate(ApiKey(key))
        await bridge.audit_events(alice, limit=1)  # the first operation runs the open checks (reconciliation)
        stored = await backend.list(ScopeKey.private("acme", "alice"), limit=10_000)
        by_content = collections.Counter(m.content for m in stored)
        assert all(count == 1 for count in by_content.values()), "a write landed twice"
        ids = {m.id for m in stored}
        assert set(acked.values()) <= ids, f"acknowledged writes lost: {set(acked.values()) - ids}"
        assert await state.audit.open_intents() == []
        rows = await state.audit.query(AuditView("acme", None), limit=10_000)
        audited = collections.Counter(mid for e in rows if e.action in ("write", "recovered") for mid in e.memory_ids)
        assert audited == collections.Counter(ids), "a stored memory has no audit row, or more than one"
    finally:
        await bridge.aclose()
