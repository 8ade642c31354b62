"""local -> hosted Viking (the simulator over real HTTP, named by a `viking:URL` spec) -> local:
the seeded two-tenant population keeps every identity's view in both directions and every field
of every memory (content, kind, status, expiry, provenance, lineage), the verification passes,
and a re-run writes nothing. The collection and the key come from the
`VIKING_BRIDGE_VIKING__*` settings (the key from a file), as for `serve`: a spec holds no secret."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.base import Status
from adapters.scopes import ScopeKey
from bridge.errors import ConfigurationError
from bridge.facade import MemoryBridge
from bridge.migrate import migrate, open_endpoint
from tests.migrate.kit import records, seed, views

TENANTS = ("acme", "globex")


@pytest.fixture
def simulator() -> dict[str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "contract_tests.viking_simulator"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line, "the simulator did not start"
        yield json.loads(line)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.asyncio
async def test_local_to_viking_and_back_keeps_every_view(tmp_path: Path, simulator: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "viking-key"
    key_file.write_text(simulator["api_key"] + "\n")
    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "viking-home"))  # the ledger's place
    monkeypatch.setenv("VIKING_BRIDGE_VIKING__COLLECTION", simulator["collection"])
    monkeypatch.setenv("VIKING_BRIDGE_VIKING__GLOBAL_COLLECTION", simulator["global_collection"])
    monkeypatch.setenv("VIKING_BRIDGE_VIKING__API_KEY_FILE", str(key_file))
    source_bridge = MemoryBridge.open_local(tmp_path / "old")
    try:
        population = await seed(source_bridge)
        before = await views(source_bridge, population)
        original = await records(source_bridge.backend)
    finally:
        await source_bridge.aclose()
    assert_covers_every_field(original)
    spec = f"viking:{simulator['url']}"
    async with open_endpoint(f"local:{tmp_path / 'old'}", source=True) as source, open_endpoint(spec) as target:
        assert simulator["api_key"] not in target.spec
        report = await migrate(source, target, TENANTS, audit_state=source.state)
        assert report.ok, report.to_dict()["problems"]
        assert report.copied.copied >= 20
        assert (await migrate(source, target, TENANTS, audit_state=source.state)).copied.copied == 0
        assert simulator["api_key"] not in json.dumps(report.to_dict())
    async with open_endpoint(spec, source=True) as source, open_endpoint(f"local:{tmp_path / 'back'}") as target:
        report = await migrate(source, target, TENANTS, audit_state=source.state)
        assert report.ok, report.to_dict()["problems"]
    back = MemoryBridge.open_local(tmp_path / "back")
    try:
        assert await views(back, population) == before
        assert_same_records(await records(back.backend), original)
        # the pending promotion still names its source: approving it on the far side supersedes bob's copy
        bob_note, tenant_note = ScopeKey.private("acme", "bob"), ScopeKey.tenant("acme")
        (pending,) = (await back.backend.list_page(tenant_note, statuses=frozenset({Status.PENDING}))).memories
        await back.approve(population.identities["root"], (tenant_note, pending.id))
        (source,) = [m for m in (await back.backend.list_page(bob_note)).memories if m.content == pending.content]
        assert source.status is Status.SUPERSEDED
    finally:
        await back.aclose()


def assert_covers_every_field(original: dict[str, dict[str, object]]) -> None:
    """The seed exercises every field the round trip must keep (else the comparison proves less)."""
    assert {r["status"] for r in original.values()} == {"active", "pending", "superseded"}
    assert any(r["expires_at"] for r in original.values()) and any(r["derived_from"] for r in original.values())
    assert any(r["messages"] and r["injected_by"] and r["grant"] and r["subject"] for r in original.values())
    assert any("vb.promoted_from" in r["metadata"] for r in original.values())


def assert_same_records(back: dict[str, dict[str, object]], original: dict[str, dict[str, object]]) -> None:
    assert set(back) == set(original), f"missing: {sorted(set(original) - set(back))[:3]}, extra: {sorted(set(back) - set(original))[:3]}"
    for content, fields in original.items():
        differing = {k: (v, back[content][k]) for k, v in fields.items() if back[content][k] != v}
        assert not differing, f"{content!r} came back changed (original, back): {differing}"


@pytest.mark.asyncio
async def test_a_viking_spec_without_a_collection_is_a_configuration_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path))
    monkeypatch.setenv("VIKING_BRIDGE_VIKING__API_KEY", "a-key-for-nothing")
    with pytest.raises(ConfigurationError, match="VIKING_BRIDGE_VIKING__COLLECTION"):
        async with open_endpoint("viking:http://127.0.0.1:9"):
            pass


def test_to_viking_the_state_goes_to_the_deployments_state_by_the_state_only_step(tmp_path: Path, simulator: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Viking keeps no bridge state: `migrate` copies the memories and says the state stays; the
    documented `--state-only --id-map` step, run with the deployment's settings, carries grants,
    manifests, shares, teams and the audit history into the state the service will open, and a
    bridge over that deployment then behaves as the old one did (the oracle: state_kit); and the
    same two steps back into a new local home."""
    import asyncio

    from bridge.migrate.cli import main as migrate_main
    from bridge.migrate.endpoints import endpoint_settings
    from bridge.state.sqlite import SqliteState
    from tests.migrate.state_kit import check_audit, check_target, populate

    key_file = tmp_path / "viking-key"
    key_file.write_text(simulator["api_key"] + "\n")
    for name, value in (("HOME", str(tmp_path / "svc")), ("VIKING__COLLECTION", simulator["collection"]),
                        ("VIKING__GLOBAL_COLLECTION", simulator["global_collection"]), ("VIKING__API_KEY_FILE", str(key_file))):
        monkeypatch.setenv(f"VIKING_BRIDGE_{name}", value)  # the deployment's settings, for both steps and the service

    async def seed():  # type: ignore[no-untyped-def]
        bridge = MemoryBridge.open_local(tmp_path / "old")
        try:
            return await populate(bridge)
        finally:
            await bridge.aclose()

    seeded = asyncio.run(seed())
    spec = f"viking:{simulator['url']}"
    common = ["--from", f"local:{tmp_path / 'old'}", "--to", spec, "--tenant", "acme"]
    assert migrate_main([*common, "--report", str(tmp_path / "copy.json")]) == 0
    copy = json.loads((tmp_path / "copy.json").read_text())
    assert copy["ok"] and copy["state"]["carried"] is False and "--state-only" in copy["state"]["skipped"]
    assert migrate_main([*common, "--state-only", "--id-map", str(tmp_path / "copy.json"), "--report", str(tmp_path / "state.json")]) == 0
    state = json.loads((tmp_path / "state.json").read_text())["state"]
    carried = {kind: t["carried"] for kind, t in state["kinds"].items()}
    assert state["ok"] and not state["left_out"], state
    assert carried["grants"] == 2 and carried["manifests"] == 1 and carried["shares"] == 1 and carried["teams"] == 1 and carried["audit"] >= 10
    assert migrate_main([*common, "--state-only", "--id-map", str(tmp_path / "copy.json"), "--report", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())["state"]
    assert again["ok"] and {t["carried"] for t in again["kinds"].values()} == {0}, "a second run carries nothing"

    async def check() -> None:
        moved = MemoryBridge.from_settings(endpoint_settings(spec))  # the service over the deployment: viking + its HOME's state
        source = SqliteState(tmp_path / "old" / "bridge.sqlite3")
        try:
            await check_target(moved, seeded)
            assert await check_audit(source, moved.state, "acme", copy["id_map"]) == carried["audit"]
        finally:
            source.close()
            await moved.aclose()

    asyncio.run(check())

    # and back: the same two steps with --from and --to swapped, into a new local home
    back = ["--from", spec, "--to", f"local:{tmp_path / 'new'}", "--tenant", "acme"]
    assert migrate_main([*back, "--report", str(tmp_path / "back.json")]) == 0
    assert json.loads((tmp_path / "back.json").read_text())["state"]["carried"] is False
    assert migrate_main([*back, "--state-only", "--id-map", str(tmp_path / "back.json"), "--report", str(tmp_path / "back-state.json")]) == 0
    assert json.loads((tmp_path / "back-state.json").read_text())["state"]["ok"]

    async def check_back() -> None:
        home = MemoryBridge.open_local(tmp_path / "new")
        try:
            await check_target(home, seeded)
        finally:
            await home.aclose()

    asyncio.run(check_back())


def test_a_viking_spec_keeps_the_deployments_state_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A deployment whose bridge state (and write ledger) is on PostgreSQL: the viking endpoint
    opens that state, so `--state-only` carries into it, never into a SQLite file under HOME."""
    from bridge.migrate.endpoints import endpoint_settings

    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path))
    monkeypatch.setenv("VIKING_BRIDGE_STATE_URL", "postgresql://app@db.example/vb")
    settings = endpoint_settings("viking:https://memory.example")
    assert settings.backend == "viking" and settings.state_url is not None
    assert settings.state_url.get_secret_value() == "postgresql://app@db.example/vb"
    assert endpoint_settings("local:/srv/old").state_url is None, "a local endpoint's state is its own home's"
