"""Export / import JSON Lines: whose memories an export holds, a file that cannot be trusted,
and an import that writes only as the importer, where the write policy allows."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bridge.errors import InvalidInput
from bridge.facade import MemoryBridge
from bridge.migrate.jsonl import export_jsonl, import_jsonl, read_export
from identity.model import MemoryIdentity
from tests.migrate.kit import seed

KEY = b"k" * 32  # the deployment's export key (VIKING_BRIDGE_EXPORT_KEY or HOME/export-seal.key)



async def _export(bridge: MemoryBridge, identity: MemoryIdentity) -> list[str]:
    out = io.StringIO()
    await export_jsonl(bridge, identity, out, key=KEY)
    return out.getvalue().splitlines(keepends=True)


def _memories(lines: list[str]) -> list[dict]:
    return [record for _, record in read_export(lines, key=KEY)]


@pytest.fixture
async def seeded(tmp_path: Path):  # type: ignore[no-untyped-def]
    bridge = MemoryBridge.open_local(tmp_path / "home")
    population = await seed(bridge)
    yield bridge, population
    await bridge.aclose()


async def test_a_tenant_admin_exports_the_whole_tenant_and_nothing_of_another(seeded) -> None:  # type: ignore[no-untyped-def]
    bridge, population = seeded
    records = _memories(await _export(bridge, population.identities["root"]))
    scopes = {r["scope"] for r in records}
    assert {"acme/user/alice", "acme/user/bob", "acme/dept/sales", "acme/tenant", "acme/agent/assistant/alice"} <= scopes
    assert all(s.startswith("acme/") for s in scopes), scopes
    assert not [r for r in records if "Globex" in r["content"]]
    rows = await bridge.audit_events(population.identities["root"], action="export")
    assert len(rows) == 1 and "acme/user/bob" in rows[0].scopes


async def test_a_member_exports_their_own_memories_only(seeded) -> None:  # type: ignore[no-untyped-def]
    bridge, population = seeded
    records = _memories(await _export(bridge, population.identities["bob"]))
    assert records and all(r["provenance"]["author_user_id"] == "bob" or r["subject_user_id"] == "bob" for r in records)
    assert not [r for r in records if r["scope"] == "acme/user/alice" or "oat milk" in r["content"]]
    gina = _memories(await _export(bridge, population.identities["gina"]))
    assert gina and all(r["scope"].startswith("globex/") for r in gina)


async def test_an_edited_or_truncated_export_is_refused_before_anything_is_imported(seeded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bridge, population = seeded
    lines = await _export(bridge, population.identities["alice"])
    edited = [line.replace("oat milk", "arsenic") for line in lines]
    for broken in (lines[:-1], edited, lines[:1] + lines[2:], lines + ['{"type": "memory"}\n']):
        target = MemoryBridge.open_local(tmp_path / f"t{len(broken)}")
        try:
            with pytest.raises(InvalidInput):
                await import_jsonl(target, population.identities["alice"], broken, key=KEY)
            assert not await target.audit_events(population.identities["alice"], action="write")
        finally:
            await target.aclose()


async def test_import_writes_as_the_importer_where_policy_allows_and_a_rerun_writes_nothing(seeded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bridge, population = seeded
    alice, bob = population.identities["alice"], population.identities["bob"]
    lines = await _export(bridge, population.identities["root"])  # the whole tenant: alice may not write most of it
    target = MemoryBridge.open_local(tmp_path / "target")
    try:
        report = await import_jsonl(target, alice, lines, key=KEY)
        assert report.written > 0 and report.refused
        assert any("acme/user/bob" in why for _, why in report.refused)
        mine = _memories(await _export(target, alice))
        assert {r["scope"] for r in mine} <= {"acme/user/alice", "acme/agent/assistant/alice", "acme/ws/alpha", "acme/tenant"}
        assert all(r["provenance"]["author_user_id"] == "alice" for r in mine), "a file never makes anyone an author"
        assert all(r["metadata"]["imported_from"] for r in mine)
        again = await import_jsonl(target, alice, lines, key=KEY)
        assert (again.written, again.already_present) == (0, report.written)
        assert not _memories(await _export(target, bob))
    finally:
        await target.aclose()


def test_the_cli_round_trips_an_export_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bridge.doors.cli.main import main

    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "one"))
    monkeypatch.setenv("VIKING_BRIDGE_EXPORT_KEY", "x" * 40)  # two deployments exchanging files share the seal key
    assert main(["remember", "I prefer tea in the afternoon", "--kind", "preference"]) == 0
    assert main(["export", str(tmp_path / "out.jsonl")]) == 0
    header = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert header["format"] == "viking-bridge-export"
    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "two"))
    assert main(["import", str(tmp_path / "out.jsonl")]) == 0
    assert main(["export", str(tmp_path / "again.jsonl")]) == 0
    assert "tea in the afternoon" in (tmp_path / "again.jsonl").read_text()


async def test_a_forged_file_resealed_without_the_key_is_refused(seeded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """An unkeyed digest can be recomputed by whoever edits the file; the keyed seal cannot."""
    import hashlib

    bridge, population = seeded
    lines = await _export(bridge, population.identities["alice"])
    forged = [line.replace("oat milk", "no milk") for line in lines[:-1]]
    body = "".join(forged[1:]).encode()
    end = json.loads(lines[-1])
    for resealed in ({**end, "hmac_sha256": hashlib.sha256(body).hexdigest()}, {"type": "end", "count": end["count"], "sha256": hashlib.sha256(body).hexdigest()}):
        with pytest.raises(InvalidInput, match="seal"):
            _memories([*forged, json.dumps(resealed) + "\n"])
    with pytest.raises(InvalidInput, match="seal"):  # another deployment's key
        [r for _, r in read_export(lines, key=b"z" * 32)]


def test_a_file_with_invalid_utf8_is_a_typed_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from bridge.doors.cli.main import main

    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "one"))
    assert main(["remember", "I prefer tea in the afternoon", "--kind", "preference"]) == 0
    assert main(["export", str(tmp_path / "out.jsonl")]) == 0
    raw = (tmp_path / "out.jsonl").read_bytes().replace(b"tea", b"t\xffa", 1)
    (tmp_path / "bad.jsonl").write_bytes(raw)
    capsys.readouterr()
    assert main(["import", str(tmp_path / "bad.jsonl")]) == 2
    assert "line 2: not UTF-8" in capsys.readouterr().err
