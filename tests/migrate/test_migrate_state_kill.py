"""`viking-bridge migrate` (a real process, local -> real PostgreSQL) SIGKILLed in the middle of
carrying the audit history, and run again: every source row is on the target exactly once,
remapped, and the second run resumed (it found rows the first one carried).

The kill lands mid-step by construction, not by timing: the child's stderr is a pipe shrunk to
one page that the test stops reading once the step is under way, so the child blocks on its next
progress lines long before it could finish (hundreds of lines remain), and is killed there.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from adapters.base import NewMemory, Provenance
from adapters.local import LocalBackend
from adapters.scopes import ScopeKey
from bridge.state.postgres import PostgresState
from bridge.state.records import AuditEvent, AuditRecord
from bridge.state.sqlite import SqliteState
from contract_tests.postgres_server import TestDatabase
from tests.migrate.state_kit import check_audit

ROOT = Path(__file__).resolve().parents[2]
ROWS, BATCH = 2000, 10
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


async def _seed(home: Path) -> None:
    backend = LocalBackend(home / "store")
    try:
        scope = ScopeKey.private("acme", "alice")
        written = [await backend.put(scope, NewMemory(f"acme note {n}: the heron build runs nightly", "note", Provenance("alice", "assistant")),
                                     idempotency_key=f"seed-{n}") for n in range(3)]
    finally:
        await backend.aclose()
    state = SqliteState(home / "bridge.sqlite3")  # a long history, quicker than 2000 audited calls
    try:
        for start in range(0, ROWS, 500):
            rows = [
                AuditRecord(AuditEvent(n + 1, 1_700_000_000.0 + n, "acme", "acme/alice@assistant", "s-1", "recall",
                                       (written[n % 3].id,), (str(scope),), (), {"n": n}), "alice", "fp")
                for n in range(start, start + 500)
            ]
            await state.audit.import_rows(rows, "an-older-deployment")
    finally:
        state.close()


def _run(home: Path, db: TestDatabase, report: Path, stderr: int) -> subprocess.Popen:  # type: ignore[type-arg]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")},
           "PYTHONPATH": str(ROOT), "VIKING_BRIDGE_STATE_MIGRATE_URL": db.owner_url}
    argv = [sys.executable, "-m", "bridge.doors.cli.main", "migrate", "--from", f"local:{home}", "--to", f"postgres:{db.app_url}",
            "--tenant", "acme", "--report", str(report), "--state-batch", str(BATCH)]
    return subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True)


def test_a_migration_killed_while_carrying_the_audit_history_finishes_with_every_row_once(tmp_path: Path, pg_db: TestDatabase) -> None:
    asyncio.run(_seed(tmp_path / "home"))
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, 4096)
    first = _run(tmp_path / "home", pg_db, tmp_path / "first.json", write)
    os.close(write)
    seen = []
    with os.fdopen(read) as lines:
        for line in lines:
            seen.append(line)
            done = re.match(r"migrate-state: acme: audit (\d+) rows", line)
            if done and int(done[1]) >= ROWS // 4:
                os.kill(first.pid, signal.SIGKILL)
                break
        first.wait(30)
    assert first.returncode == -signal.SIGKILL, "".join(seen)
    assert not (tmp_path / "first.json").exists()

    second = _run(tmp_path / "home", pg_db, tmp_path / "second.json", subprocess.PIPE)
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err[-2000:]
    report = json.loads((tmp_path / "second.json").read_text())
    audit = report["state"]["kinds"]["audit"]
    assert report["ok"] and audit["verified"] and audit["source"] == ROWS
    assert audit["already_present"] >= ROWS // 4 and audit["carried"] > 0, "the second run resumed, not restarted"
    assert audit["carried"] + audit["already_present"] == audit["source"] == audit["matched"]

    async def once() -> int:
        source = SqliteState(tmp_path / "home" / "bridge.sqlite3")
        target = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url)
        try:
            return await check_audit(source, target, "acme", report["id_map"])
        finally:
            source.close()
            target.close()

    assert asyncio.run(once()) == audit["source"]
