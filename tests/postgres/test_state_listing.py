"""The tenant listings the admin console reads (`GrantRepository.for_tenant`,
`ManifestRepository.live_for_tenant`) keep the same promises on every state store: one
tenant's records only, newest first, live manifests only, and the memory-id filter exact."""

from __future__ import annotations

import time
from pathlib import Path
from typing import AsyncIterator

import pytest
import pytest_asyncio

from adapters.scopes import ScopeKey
from bridge.state.memory import MemoryState
from bridge.state.records import Grant, InjectDepth, InjectionManifest
from bridge.state.sqlite import SqliteState


@pytest_asyncio.fixture(params=["memory", "sqlite", "postgres"])
async def state(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[object]:
    if request.param == "memory":
        s: object = MemoryState()
    elif request.param == "sqlite":
        s = SqliteState(tmp_path / "bridge.sqlite3")
    else:
        from bridge.state.postgres import PostgresState

        db = request.getfixturevalue("pg_db")
        s = PostgresState(db.app_url, migrate_url=db.owner_url, pool_size=2)
    try:
        yield s
    finally:
        close = getattr(s, "close", None)
        if close is not None:
            close()


def _manifest(mid: str, tenant: str, created: float, expires: float, memory_ids: tuple[str, ...]) -> InjectionManifest:
    key = ScopeKey.workspace(tenant, "alpha")
    return InjectionManifest(mid, tenant, "alice", "brain", "helper", "task", InjectDepth.MINIMAL, tuple((key, m) for m in memory_ids), False, created, expires)


async def test_grants_for_tenant_list_only_that_tenant_newest_first(state) -> None:  # type: ignore[no-untyped-def]
    now = time.time()
    for n, tenant in enumerate(("acme", "globex", "acme")):
        await state.grants.add(Grant(f"g{n}", tenant, f"u{n}", None, ScopeKey.department(tenant, "eng"), "root", "r", now + n, now + 600))
    await state.grants.revoke("g0", now)
    acme = await state.grants.for_tenant("acme")
    assert [g.grant_id for g in acme] == ["g2", "g0"] and acme[1].revoked_at is not None
    assert [g.grant_id for g in await state.grants.for_tenant("acme", limit=1)] == ["g2"]
    assert [g.grant_id for g in await state.grants.for_tenant("globex")] == ["g1"]


async def test_live_manifests_of_a_tenant_exclude_expired_revoked_and_foreign(state) -> None:  # type: ignore[no-untyped-def]
    now = time.time()
    await state.manifests.add(_manifest("m-old", "acme", now - 20, now + 600, ("x", "y")))
    await state.manifests.add(_manifest("m-new", "acme", now - 10, now + 600, ("y",)))
    await state.manifests.add(_manifest("m-expired", "acme", now - 30, now - 1, ("x",)))
    await state.manifests.add(_manifest("m-revoked", "acme", now - 5, now + 600, ("x",)))
    await state.manifests.add(_manifest("m-globex", "globex", now - 1, now + 600, ("x",)))
    await state.manifests.revoke_tree("m-revoked", now)
    assert [m.manifest_id for m in await state.manifests.live_for_tenant("acme", now)] == ["m-new", "m-old"]
    assert [m.manifest_id for m in await state.manifests.live_for_tenant("acme", now, memory_id="x")] == ["m-old"]
    assert [m.manifest_id for m in await state.manifests.live_for_tenant("acme", now, limit=1)] == ["m-new"]
    assert [m.manifest_id for m in await state.manifests.live_for_tenant("globex", now, memory_id="y")] == []
