"""`migrate` carries the tenants' bridge state (bridge/migrate/state.py) between real states:
local (SQLite) -> PostgreSQL and back. The oracle is the target bridge itself: the child recalls
through its manifest, a narrowed share reaches exactly its audience, a team member reads team
memory, grants are listed as they were, and every source audit row is there once, remapped. A
second run carries nothing; only the named tenant's state moves; `--state-only` carries it later.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.assembly.settings import BridgeSettings
from bridge.facade import MemoryBridge
from bridge.migrate import migrate, open_endpoint
from bridge.migrate.cli import main as migrate_main
from bridge.migrate.run import migrate_state
from bridge.state.records import QuotaLimits, Usage
from contract_tests.postgres_server import TestDatabase
from tests.migrate.state_kit import check_audit, check_target, populate



def _pg(tmp_path: Path, db: TestDatabase) -> MemoryBridge:
    settings = BridgeSettings(home=tmp_path / "svc", state_url=db.app_url, state_migrate_url=db.owner_url, backend="postgres")
    return MemoryBridge.from_settings(settings)


def _carried(report) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {kind: t["carried"] for kind, t in report.to_dict()["state"]["kinds"].items()}


async def _move_and_check(source_spec: str, target_spec: str, seeded, open_target) -> None:  # type: ignore[no-untyped-def]
    async with open_endpoint(source_spec, source=True) as source, open_endpoint(target_spec) as target:
        report = await migrate(source, target, ["acme"])
        assert report.ok, report.to_dict()["problems"]
        state = report.to_dict()["state"]
        assert state["carried"] and not state["left_out"], state
        carried = _carried(report)
        assert carried["grants"] == 2 and carried["manifests"] == 1 and carried["shares"] == 1 and carried["teams"] == 1 and carried["audit"] >= 10
        assert await check_audit(source.state, target.state, "acme", report.copied.id_map) == carried["audit"]
        again = await migrate(source, target, ["acme"])
        assert again.ok and set(_carried(again).values()) == {0}, _carried(again)
        assert await check_audit(source.state, target.state, "acme", report.copied.id_map) == carried["audit"], "nothing doubled"
    moved = open_target()
    try:
        await check_target(moved, seeded)
    finally:
        await moved.aclose()


async def test_local_to_postgres_carries_grants_manifests_shares_teams_and_audit(tmp_path: Path, pg_db: TestDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_STATE_MIGRATE_URL", pg_db.owner_url)
    bridge = MemoryBridge.open_local(tmp_path / "old")
    try:
        seeded = await populate(bridge)
    finally:
        await bridge.aclose()
    await _move_and_check(f"local:{tmp_path / 'old'}", f"postgres:{pg_db.app_url}", seeded, lambda: _pg(tmp_path, pg_db))


async def test_postgres_to_local_carries_grants_manifests_shares_teams_and_audit(tmp_path: Path, pg_db: TestDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_STATE_MIGRATE_URL", pg_db.owner_url)
    bridge = _pg(tmp_path, pg_db)
    try:
        seeded = await populate(bridge)
    finally:
        await bridge.aclose()
    await _move_and_check(f"postgres:{pg_db.app_url}", f"local:{tmp_path / 'new'}", seeded, lambda: MemoryBridge.open_local(tmp_path / "new"))


async def test_only_the_named_tenants_state_moves(tmp_path: Path) -> None:
    bridge = MemoryBridge.open_local(tmp_path / "old")
    try:
        await populate(bridge, ("acme", "globex"))
    finally:
        await bridge.aclose()
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source, open_endpoint(f"local:{tmp_path / 'new'}") as target:
        for tenant in ("acme", "globex"):  # quota counters (the bridge keeps them only while quotas are configured)
            await source.state.usage.reserve(tenant, "alice", Usage(3, 120), QuotaLimits(), QuotaLimits())
        await target.state.usage.reserve("acme", "alice", Usage(1, 200), QuotaLimits(), QuotaLimits())  # the target's own count stays
        report = await migrate(source, target, ["acme"])
        assert report.ok, report.to_dict()["problems"]
        assert _carried(report)["manifests"] == 1 and _carried(report)["usage"] == 1
        assert await target.state.usage.usage("acme", "alice") == Usage(3, 200), "raised to the source's, never lowered"
        for tenant, present in (("acme", True), ("globex", False)):
            s = target.state
            held = [await s.grants.for_tenant(tenant), await s.teams.of_tenant(tenant), await s.shares.of_tenant(tenant),
                    await s.manifests.live_for_tenant(tenant, 0.0), await s.audit.export_rows(tenant), await s.usage.of_tenant(tenant)]
            assert all(held) if present else not any(held), (tenant, held)
        assert not any(row for row in await target.state.audit.export_rows("acme") if "globex" in json.dumps(row.event.detail))


async def test_the_verification_finds_a_changed_grant_and_a_manifest_that_cannot_be_carried_whole(tmp_path: Path) -> None:
    bridge = MemoryBridge.open_local(tmp_path / "old")
    try:
        seeded = await populate(bridge)
    finally:
        await bridge.aclose()
    kept = seeded.tenants["acme"].grant_ids[0]
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source, open_endpoint(f"local:{tmp_path / 'new'}") as target:
        first = await migrate(source, target, ["acme"])
        assert first.ok
        await target.state.teams.remove_member("acme", "red", "planner")
        await target.state.grants.revoke(kept, 1.0)
        again = await migrate(source, target, ["acme"])
        assert not again.ok, "a grant revoked on the target only is a difference"
        assert any(f"grant {kept}" in p and "differs" in p for p in again.to_dict()["problems"]), again.to_dict()["problems"]
        assert _carried(again)["teams"] == 1, "the member removed on the target is put back"
        manifest = await source.state.manifests.get(seeded.tenants["acme"].manifest_id)
        partial = {k: v for k, v in first.copied.id_map.items() if k not in manifest.memory_ids}
        alone = await migrate_state(source, target, ["acme"], partial)
        assert not alone.ok and any(f"manifest {manifest.manifest_id} not carried" in p for p in alone.to_dict()["problems"])


def test_state_only_carries_the_state_of_an_earlier_copy(tmp_path: Path) -> None:
    import asyncio

    async def seed() -> None:
        bridge = MemoryBridge.open_local(tmp_path / "old")
        try:
            await populate(bridge)
        finally:
            await bridge.aclose()

    asyncio.run(seed())
    common = ["--from", f"local:{tmp_path / 'old'}", "--to", f"local:{tmp_path / 'new'}", "--tenant", "acme"]
    assert migrate_main([*common, "--no-state", "--report", str(tmp_path / "copy.json")]) == 0
    assert json.loads((tmp_path / "copy.json").read_text())["state"]["carried"] is False
    assert migrate_main([*common, "--state-only"]) == 2, "the id map is required"
    assert migrate_main([*common, "--state-only", "--id-map", str(tmp_path / "copy.json"), "--report", str(tmp_path / "state.json")]) == 0
    state = json.loads((tmp_path / "state.json").read_text())["state"]
    assert state["ok"] and state["kinds"]["manifests"]["carried"] == 1 and state["kinds"]["audit"]["carried"] >= 10
