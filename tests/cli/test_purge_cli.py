"""`viking-bridge purge-expired`: deletes the tenant's expired memories in bounded runs, printing
progress after each, and only for a tenant admin; `remember --ttl` writes an expiring memory."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from adapters.base import NewMemory, Provenance
from adapters.local import LocalBackend
from adapters.scopes import ScopeKey
from bridge.doors.cli.main import main


@pytest.fixture(autouse=True)
def dev_home(tmp_path, monkeypatch):
    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VIKING_BRIDGE_MODE", "development")
    monkeypatch.setenv("VIKING_MEMORY_USER_ID", "user_01")
    monkeypatch.setenv("VIKING_BRIDGE_SESSION_ID", "cli-session")
    for name in ("VIKING_BRIDGE_PROVIDER", "VIKING_MEMORY_GROUP_ID", "VIKING_BRIDGE_ROLES"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def _plant_expired(home: Path, count: int) -> list[str]:
    """Memories that expired a minute ago, written straight into the store (as if the clock moved)."""
    async def plant() -> list[str]:
        store = LocalBackend(home / "store", expect_existing=True)
        try:
            past = time.time() - 60
            scope = ScopeKey.private("local", "user_01")
            return [(await store.put(scope, NewMemory(f"old note {n}", "note", Provenance("user_01", "assistant"), expires_at=past), idempotency_key=f"old-{n}")).id
                    for n in range(count)]
        finally:
            await store.aclose()

    return asyncio.run(plant())


def test_purge_expired_reports_progress_per_run_and_is_for_admins(dev_home, monkeypatch, capsys):
    assert main(["remember", "a note that stays", "--kind", "note"]) == 0
    assert main(["remember", "a note for one hour", "--kind", "note", "--ttl", "3600"]) == 0
    capsys.readouterr()
    gone = _plant_expired(dev_home, 3)
    assert main(["purge-expired"]) == 2
    assert "needs the 'admin' role" in capsys.readouterr().err
    monkeypatch.setenv("VIKING_BRIDGE_ROLES", "admin")
    monkeypatch.setenv("VIKING_BRIDGE_SESSION_ID", "cli-admin-session")  # a session is bound to one identity (roles included)
    assert main(["purge-expired", "--batch", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("purged 2 expired memories of local so far") and lines[0].endswith(", continuing")
    assert lines[-1].startswith("purged 3 expired memories of local so far") and "continuing" not in lines[-1]
    assert main(["audit", "--action", "expired"]) == 0
    audited = capsys.readouterr().out
    assert all(mid in audited for mid in gone)
    assert main(["recall", "note"]) == 0
    out = capsys.readouterr().out
    assert "a note that stays" in out and "a note for one hour" in out and "old note" not in out
