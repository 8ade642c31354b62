"""`viking-bridge migrate` local -> hosted Viking (the simulator over real HTTP), SIGKILLed while
it writes and run again: the second run finishes the copy, and at the service every memory is
there exactly once — counted as physical events per memory id, not through reads (which collapse
copies). A write killed between send and answer is what the write ledger (HOME/viking, kept
across the two runs) is for. The kill lands mid-copy by construction (tests/migrate/kill_kit.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from adapters.base import NewMemory, Provenance
from adapters.local import LocalBackend
from bridge.facade import MemoryBridge
from adapters.scopes import ScopeKey
from adapters.viking import ApiKeyAuth, VikingBackend, VikingConfig, VikingMemoryClient
from adapters.viking.rows import SERVICE_MAX_LIMIT
from tests.migrate.kill_kit import kill_mid_copy, local_rows
from tests.migrate.test_migrate_viking import simulator  # noqa: F401 - the simulator fixture

ROOT = Path(__file__).resolve().parents[2]
USERS, PER_USER = 8, 20


def _scope(u: int) -> ScopeKey:
    tenant = "acme" if u % 4 else "globex"
    return ScopeKey.private(tenant, f"user{u}") if u % 3 else ScopeKey.workspace(tenant, f"ws{u}")


async def _seed(home: Path) -> int:
    backend = LocalBackend(home / "store")
    try:
        for u in range(USERS):
            for n in range(PER_USER):
                memory = NewMemory(f"user {u} note {n}: the build cache lives on volume {n % 7}", "note", Provenance(f"user{u}", "assistant"))
                await backend.put(_scope(u), memory, idempotency_key=f"seed-{u}-{n}")
    finally:
        await backend.aclose()
    return USERS * PER_USER


def _command(tmp: Path, sim: dict[str, str], report: Path, *, back: bool = False) -> tuple[list[str], dict[str, str]]:
    key_file = tmp / "viking-key"
    key_file.write_text(sim["api_key"] + "\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, "PYTHONPATH": str(ROOT),
           "VIKING_BRIDGE_HOME": str(tmp / "viking-home"), "VIKING_BRIDGE_VIKING__COLLECTION": sim["collection"],
           "VIKING_BRIDGE_VIKING__GLOBAL_COLLECTION": sim["global_collection"], "VIKING_BRIDGE_VIKING__API_KEY_FILE": str(key_file)}
    local, remote = f"local:{tmp / ('back' if back else 'home')}", f"viking:{sim['url']}"
    source, target = (remote, local) if back else (local, remote)
    argv = [sys.executable, "-m", "bridge.doors.cli.main", "migrate", "--from", source, "--to", target,
            "--tenant", "acme", "--tenant", "globex", "--report", str(report), "--concurrency", "2"]
    return argv, env


async def _physical_copies(sim: dict[str, str]) -> Counter[str]:
    client = VikingMemoryClient(sim["url"], ApiKeyAuth(sim["api_key"]))
    backend = VikingBackend(client, VikingConfig(shared_collection=sim["collection"], global_collection=sim["global_collection"]))
    copies: Counter[str] = Counter()
    try:
        for u in range(USERS):
            scope = _scope(u)
            rows = await client.search(backend.collection_for(scope), filter={"user_id": [backend.principal(scope)], "memory_type": backend.config.search_types},
                                       query=None, limit=SERVICE_MAX_LIMIT, kind="event")
            copies.update(str(r["group_id"]) for r in rows if r.get("group_id"))
    finally:
        await backend.aclose()
    return copies


def test_a_sigkilled_migration_to_viking_resumes_with_nothing_missing_and_nothing_twice(tmp_path: Path, simulator: dict[str, str]) -> None:  # noqa: F811
    total = asyncio.run(_seed(tmp_path / "home"))
    argv, env = _command(tmp_path, simulator, tmp_path / "first.json")
    kill_mid_copy(argv, env, ROOT, total)
    assert not (tmp_path / "first.json").exists()
    after_kill = sum(n for g, n in asyncio.run(_physical_copies(simulator)).items() if g.startswith("m"))
    print(f"to viking: {after_kill} of {total} at the service after the kill")
    assert total * 0.2 <= after_kill < total, f"{after_kill} of {total} at the service after the kill"

    argv, env = _command(tmp_path, simulator, tmp_path / "second.json")
    second = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    report = json.loads((tmp_path / "second.json").read_text())
    assert report["ok"] and not report["problems"], report["problems"]
    assert report["copied"] + report["already_present"] == total
    assert report["already_present"] >= total * 0.2 and report["copied"] > 0, "the second run resumed, not restarted"
    copies = asyncio.run(_physical_copies(simulator))
    memories = {g: n for g, n in copies.items() if g.startswith("m")}  # memory ids; scope markers are the adapter's own
    assert len(memories) == total, f"{len(memories)} memories at the service, {total} expected"
    assert all(n == 1 for n in memories.values()), f"memories stored twice: {[g for g, n in memories.items() if n > 1][:5]}"


def _finish(tmp: Path, sim: dict[str, str], report: Path, *, back: bool = False) -> dict[str, object]:
    argv, env = _command(tmp, sim, report, back=back)
    run = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(report.read_text())
    assert out["ok"] and not out["problems"], out["problems"]
    assert out["already_present"] > 0 and out["copied"] > 0, "the second run resumed, not restarted"
    return out


def test_killed_both_ways_every_field_of_the_population_comes_back(tmp_path: Path, simulator: dict[str, str]) -> None:  # noqa: F811
    """The seeded population (statuses, expiry, provenance, lineage across scopes) local -> viking
    killed mid-copy and finished, then viking -> local killed mid-copy and finished: every field
    of every memory as it was (tests/migrate/kit.py `records`), each memory once in the rows."""
    from tests.migrate.kit import records, seed
    from tests.migrate.test_migrate_viking import assert_covers_every_field, assert_same_records

    async def populate() -> dict[str, dict[str, object]]:
        bridge = MemoryBridge.open_local(tmp_path / "home")
        try:
            await seed(bridge)
            return await records(bridge.backend)
        finally:
            await bridge.aclose()

    async def read_back() -> dict[str, dict[str, object]]:
        backend = LocalBackend(tmp_path / "back" / "store")
        try:
            return await records(backend)
        finally:
            await backend.aclose()

    original = asyncio.run(populate())
    assert_covers_every_field(original)
    kill_mid_copy(*_command(tmp_path, simulator, tmp_path / "first.json"), ROOT, len(original))
    assert _finish(tmp_path, simulator, tmp_path / "second.json")["already_present"] < len(original)
    kill_mid_copy(*_command(tmp_path, simulator, tmp_path / "back1.json", back=True), ROOT, len(original))
    assert _finish(tmp_path, simulator, tmp_path / "back2.json", back=True)["already_present"] < len(original)
    assert_same_records(asyncio.run(read_back()), original)
    rows = local_rows(tmp_path / "back")
    assert len(rows) == len(original) and set(rows.values()) == {1}
