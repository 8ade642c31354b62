"""local -> a real OpenViking server (api_key mode, started by the suite) -> a new local store:
the seeded two-tenant population keeps every identity's view both ways and every field of every
memory (content, kind, status, expiry, provenance, lineage) on the server and back, each verification
passes, a re-run writes nothing. The bridge over the target is built the way an operator would after moving."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from adapters.openviking import OpenVikingBackend
from bridge.facade import MemoryBridge
from bridge.migrate import migrate, open_endpoint
from contract_tests.backends.openviking import _unavailable, shared_server
from tests.migrate.kit import records, seed, views
from tests.migrate.test_migrate_viking import assert_covers_every_field, assert_same_records

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


async def test_local_to_openviking_keeps_every_view_and_reruns_write_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = _unavailable("api_key")
    if reason:
        pytest.skip(f"no OpenViking server for this test: {reason}")
    url, root = shared_server("api_key")
    namespace = "mg" + uuid.uuid4().hex[:10]
    for name, value in (("ROOT_API_KEY", root), ("KEY_STORE", str(tmp_path / "keys.json")), ("NAMESPACE", namespace)):
        monkeypatch.setenv(f"VIKING_BRIDGE_OPENVIKING__{name}", value)
    source_bridge = MemoryBridge.open_local(tmp_path / "old")
    try:
        population = await seed(source_bridge)
        before = await views(source_bridge, population)
        original = await records(source_bridge.backend)
    finally:
        await source_bridge.aclose()
    assert_covers_every_field(original)
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source, open_endpoint(f"openviking:{url}") as target:
        report = await migrate(source, target, ("acme", "globex"), audit_state=source.state)
        assert report.ok, report.to_dict()["problems"]
        assert report.copied.copied >= 20
        assert (await migrate(source, target, ("acme", "globex"), audit_state=source.state)).copied.copied == 0
    backend = OpenVikingBackend.connect(url, root, mode="api_key", key_store_path=str(tmp_path / "keys.json"), namespace=namespace)
    moved = MemoryBridge.with_backend(backend, tmp_path / "new-home")
    try:
        assert await views(moved, population) == before
        assert_same_records(await records(backend), original)  # on the server itself, not only after the way back
        # and back: openviking -> a new local store, verified, every view as before the first move
        async with open_endpoint(f"openviking:{url}", source=True) as source, open_endpoint(f"local:{tmp_path / 'back'}") as target:
            report = await migrate(source, target, ("acme", "globex"), audit_state=source.state)
            assert report.ok, report.to_dict()["problems"]
            assert report.copied.copied >= 20
            assert (await migrate(source, target, ("acme", "globex"), audit_state=source.state)).copied.copied == 0
        back = MemoryBridge.open_local(tmp_path / "back")
        try:
            assert await views(back, population) == before
            assert_same_records(await records(back.backend), original)
        finally:
            await back.aclose()
    finally:
        try:
            await backend.drop_namespace()
        finally:
            await moved.aclose()
