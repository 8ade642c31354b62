"""`viking-bridge migrate` as an operator runs it (a real process, local -> real PostgreSQL),
SIGKILLed halfway and run again: the second run finishes the copy, nothing is missing, nothing
is there twice (the verification's per-scope digests cover every target memory), and the
progress lines count up to the total."""

from __future__ import annotations

import asyncio
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
from contract_tests.postgres_server import TestDatabase

ROOT = Path(__file__).resolve().parents[2]
USERS, PER_USER = 40, 40


async def _seed(home: Path) -> int:
    backend = LocalBackend(home / "store")
    try:
        for u in range(USERS):
            tenant = "acme" if u % 4 else "globex"
            scope = ScopeKey.private(tenant, f"user{u}") if u % 3 else ScopeKey.workspace(tenant, f"ws{u}")
            for n in range(PER_USER):
                memory = NewMemory(f"user {u} note {n}: the build cache lives on volume {n % 7}", "note", Provenance(f"user{u}", "assistant"))
                await backend.put(scope, memory, idempotency_key=f"seed-{u}-{n}")
    finally:
        await backend.aclose()
    return USERS * PER_USER


def _command(home: Path, db: TestDatabase, report: Path) -> tuple[list[str], dict[str, str]]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")},
           "PYTHONPATH": str(ROOT), "VIKING_BRIDGE_STATE_MIGRATE_URL": db.owner_url}
    argv = [sys.executable, "-m", "bridge.doors.cli.main", "migrate", "--from", f"local:{home}", "--to", f"postgres:{db.app_url}",
            "--tenant", "acme", "--tenant", "globex", "--report", str(report), "--concurrency", "2"]
    return argv, env


def test_a_sigkilled_migration_resumes_with_nothing_missing_and_nothing_twice(tmp_path: Path, pg_db: TestDatabase) -> None:
    total = asyncio.run(_seed(tmp_path / "home"))
    argv, env = _command(tmp_path / "home", pg_db, tmp_path / "first.json")
    first = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    assert first.stderr is not None
    for line in first.stderr:  # progress lines: "migrate: N/TOTAL (P%, R/s)"
        seen.append(line)
        done = re.match(r"migrate: (\d+)/(\d+) ", line)
        if done and int(done[1]) >= total * 0.3:
            os.kill(first.pid, signal.SIGKILL)
            break
    first.wait(30)
    assert first.returncode == -signal.SIGKILL, "".join(seen)
    assert not (tmp_path / "first.json").exists()

    argv, env = _command(tmp_path / "home", pg_db, tmp_path / "second.json")
    second = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    report = json.loads((tmp_path / "second.json").read_text())
    assert report["ok"] and not report["problems"]
    assert report["copied"] + report["already_present"] == total
    assert report["already_present"] >= total * 0.3 and report["copied"] > 0, "the second run resumed, not restarted"
    assert sum(s["target"] for s in report["scopes"]) == total  # every target memory is a copy, none twice
    progress = [int(m[1]) for line in second.stderr.splitlines() if (m := re.match(r"migrate: (\d+)/", line))]
    assert progress[-1] == total and progress == sorted(progress)
