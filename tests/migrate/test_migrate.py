"""`migrate` between real backends: local -> local (a re-embedding into a new store), local ->
PostgreSQL, and (tests/migrate/test_migrate_openviking.py) local -> a real OpenViking server.

The oracle is the seeded population's own views: every identity recalls the same (scope,
content) pairs from the target as from the source — a record moved across a scope, dropped or
duplicated changes somebody's view. The verification pass and a re-run that writes nothing are
checked on every target; lineage must point at the target's ids.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.errors import ConfigurationError
from bridge.facade import MemoryBridge
from bridge.migrate import migrate, open_endpoint, verify
from bridge.migrate.copy import scopes_of
from contract_tests.postgres_server import TestDatabase
from tests.migrate.kit import seed, views

pytestmark = pytest.mark.asyncio
TENANTS = ("acme", "globex")


async def _seeded(home: Path):  # type: ignore[no-untyped-def]
    bridge = MemoryBridge.open_local(home)
    try:
        population = await seed(bridge)
        return population, await views(bridge, population)
    finally:
        await bridge.aclose()


async def test_local_to_local_copies_every_scope_and_each_identity_sees_exactly_what_it_saw(tmp_path: Path) -> None:
    population, before = await _seeded(tmp_path / "old")
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source, open_endpoint(f"local:{tmp_path / 'new'}") as target:
        report = await migrate(source, target, TENANTS)
        assert report.ok, report.to_dict()["problems"]
        assert report.copied.copied == sum(t.source for t in report.copied.scopes.values()) >= 20
        scopes = {t.scope for t in report.copied.scopes.values()}
        assert {"acme/user/alice", "acme/user/bob", "globex/user/gina", "acme/ws/alpha", "globex/ws/alpha", "acme/dept/eng",
                "acme/dept/sales", "acme/tenant", "acme/agent/assistant/alice"} <= scopes
        child, parent = population.lineage
        copied_child = await target.backend.get(*_where(report, child))
        assert copied_child.provenance.derived_from == (report.copied.id_map[parent],), "lineage must name the target's ids"
        rerun = await migrate(source, target, TENANTS)
        assert (rerun.copied.copied, rerun.copied.present, rerun.ok) == (0, report.copied.copied, True)
    moved = MemoryBridge.open_local(tmp_path / "new")
    try:
        assert await views(moved, population) == before
        rows = await moved.audit_events(population.identities["root"], action="migrate")
        assert len(rows) == 2 and rows[0].detail["copied"] == 0 and rows[1].detail["copied"] > 0
    finally:
        await moved.aclose()


def _where(report, memory_id: str):  # type: ignore[no-untyped-def]
    """(scope, target id) of the copy of source memory `memory_id`."""
    from adapters.scopes import ScopeKey

    return ScopeKey.parse(report.copied.scope_of[memory_id]), report.copied.id_map[memory_id]


async def test_verification_finds_a_missing_and_an_altered_copy(tmp_path: Path) -> None:
    await _seeded(tmp_path / "old")
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source, open_endpoint(f"local:{tmp_path / 'new'}") as target:
        report = await migrate(source, target, TENANTS)
        from adapters.base import MemoryPatch

        (gone, altered) = list(report.copied.id_map)[:2]
        await target.backend.delete(*_where(report, gone))
        await target.backend.update(*_where(report, altered), MemoryPatch(content="tampered"))
        scopes = await scopes_of(source.backend, TENANTS, True)
        checked = await verify(source.backend, target.backend, scopes)
        assert not checked.ok
        problems = "\n".join(checked.problems)
        assert "has no copy" in problems and "differs" in problems


async def test_a_migration_into_itself_is_refused(tmp_path: Path) -> None:
    await _seeded(tmp_path / "old")
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source:
        with pytest.raises(ConfigurationError):
            await migrate(source, source, TENANTS)


@pytest.mark.parametrize("spec", ["nowhere:/tmp/x", "local:", "postgres", "s3://bucket"])
async def test_an_unknown_endpoint_is_a_configuration_error(spec: str) -> None:
    with pytest.raises(ConfigurationError):
        async with open_endpoint(spec):
            pass


async def test_local_to_postgres_keeps_every_view(tmp_path: Path, pg_db: TestDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    population, before = await _seeded(tmp_path / "old")
    monkeypatch.setenv("VIKING_BRIDGE_STATE_MIGRATE_URL", pg_db.owner_url)
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source, open_endpoint(f"postgres:{pg_db.app_url}") as target:
        report = await migrate(source, target, TENANTS)
        assert report.ok, report.to_dict()["problems"]
        assert (await migrate(source, target, TENANTS)).copied.copied == 0
    from bridge.assembly.settings import BridgeSettings

    settings = BridgeSettings(home=tmp_path / "svc", state_url=pg_db.app_url, state_migrate_url=pg_db.owner_url, backend="postgres")
    moved = MemoryBridge.from_settings(settings)
    try:
        assert await views(moved, population) == before
    finally:
        await moved.aclose()
