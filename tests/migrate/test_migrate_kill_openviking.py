"""`viking-bridge migrate` local -> a real OpenViking server (a real process), SIGKILLed in the
middle of the copy and run again: the second run finishes it, the verification passes, and on
the server every memory is there exactly once — counted as the memory files in each scope's
directory (listed and read raw, not through the adapter's reads). Then back, openviking -> a new
local store, killed mid-copy and run again the same way: every memory once in its rows, and
every field of every memory as it was (the population of tests/migrate/kit.py: statuses,
expiry, provenance, lineage across scopes).

The kill lands mid-copy by construction, not by timing (tests/migrate/kill_kit.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from adapters.local import LocalBackend
from adapters.openviking import OpenVikingBackend
from adapters.openviking.errors import OVNotFound
from adapters.openviking.record import HEADER_PREFIX
from adapters.scopes import ScopeKey
from bridge.facade import MemoryBridge
from contract_tests.backends.openviking import _unavailable, shared_server
from tests.migrate.kill_kit import kill_mid_copy, local_rows
from tests.migrate.kit import records, seed
from tests.migrate.test_migrate_viking import assert_covers_every_field, assert_same_records

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
Records = dict[str, dict[str, Any]]


async def _seed(home: Path) -> Records:
    """The population of tests/migrate/kit.py (statuses, expiry, provenance, lineage), as records."""
    bridge = MemoryBridge.open_local(home)
    try:
        await seed(bridge)
        return await records(bridge.backend)
    finally:
        await bridge.aclose()


async def _read_back(home: Path) -> Records:
    backend = LocalBackend(home / "store")
    try:
        return await records(backend)
    finally:
        await backend.aclose()

def _command(tmp: Path, url: str, namespace: str, report: Path, *, back: bool = False) -> tuple[list[str], dict[str, str]]:
    root_file = tmp / "ov-root-key"  # the root key comes from a file setting, as for `serve`; never in argv
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, "PYTHONPATH": str(ROOT),
           "VIKING_BRIDGE_HOME": str(tmp / "ov-home"), "VIKING_BRIDGE_OPENVIKING__ROOT_API_KEY_FILE": str(root_file),
           "VIKING_BRIDGE_OPENVIKING__KEY_STORE": str(tmp / "keys.json"), "VIKING_BRIDGE_OPENVIKING__NAMESPACE": namespace}
    local, remote = f"local:{tmp / ('back' if back else 'home')}", f"openviking:{url}"
    source, target = (remote, local) if back else (local, remote)
    argv = [sys.executable, "-m", "bridge.doors.cli.main", "migrate", "--from", source, "--to", target,
            "--tenant", "acme", "--tenant", "globex", "--report", str(report), "--concurrency", "2"]
    return argv, env


async def _physical_copies(backend: OpenVikingBackend, scopes: set[str]) -> Counter[str]:
    """Per `SCOPE: CONTENT` (the key of kit `records`): how many memory files the scope's
    directory holds, listed and read raw."""
    copies: Counter[str] = Counter()
    for scope in map(ScopeKey.parse, sorted(scopes)):
        p = backend.mapper.principal(scope)
        try:
            entries = await backend._call(p, False, lambda a, d=p.memory_dir: backend.client.ls(a, d))
        except OVNotFound:  # no user (or no directory) for this scope yet: the copy has not reached it
            continue
        for entry in entries:
            uri = entry.get("uri")
            if entry.get("isDir") or not isinstance(uri, str) or not uri.endswith(".md"):
                continue
            text = await backend._call(p, False, lambda a, u=uri: backend.client.read(a, u))
            assert text.startswith(HEADER_PREFIX), f"{uri} is no record of the bridge"
            copies[f"{scope}: {text.partition(chr(10))[2]}"] += 1
    return copies


def test_a_sigkilled_migration_to_openviking_resumes_with_every_memory_once(tmp_path: Path) -> None:
    reason = _unavailable("api_key")
    if reason:
        pytest.skip(f"no OpenViking server for this test: {reason}")
    url, root = shared_server("api_key")
    (tmp_path / "ov-root-key").write_text(root + "\n")
    namespace = "mk" + uuid.uuid4().hex[:10]
    original = asyncio.run(_seed(tmp_path / "home"))
    assert_covers_every_field(original)
    total = len(original)
    try:
        kill_mid_copy(*_command(tmp_path, url, namespace, tmp_path / "first.json"), ROOT, total)
        assert not (tmp_path / "first.json").exists()
        asyncio.run(_resume_and_count(tmp_path, url, root, namespace, original))
        # and back: openviking -> a new local store, killed mid-copy the same way, run again
        kill_mid_copy(*_command(tmp_path, url, namespace, tmp_path / "back1.json", back=True), ROOT, total)
        assert not (tmp_path / "back1.json").exists()
        after_kill = sum(local_rows(tmp_path / "back").values())
        print(f"back to local: {after_kill} of {total} in the store after the kill")
        assert total * 0.2 <= after_kill < total, f"{after_kill} of {total} in the local store after the kill"
        argv, env = _command(tmp_path, url, namespace, tmp_path / "back2.json", back=True)
        second = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        assert second.returncode == 0, second.stderr[-2000:]
        report = json.loads((tmp_path / "back2.json").read_text())
        assert report["ok"] and not report["problems"], report["problems"]
        assert report["already_present"] >= after_kill and report["copied"] > 0 and report["copied"] + report["already_present"] == total
        rows = local_rows(tmp_path / "back")
        assert set(rows) == set(original) and set(rows.values()) == {1}, f"{len(rows)} memories, twice: {[c for c, n in rows.items() if n > 1][:5]}"
        assert_same_records(asyncio.run(_read_back(tmp_path / "back")), original)  # every field, after two kills
    finally:
        asyncio.run(_drop(tmp_path, url, root, namespace))


async def _drop(tmp_path: Path, url: str, root: str, namespace: str) -> None:
    backend = OpenVikingBackend.connect(url, root, mode="api_key", key_store_path=str(tmp_path / "keys.json"), namespace=namespace)
    try:
        await backend.drop_namespace()
    finally:
        await backend.aclose()


async def _resume_and_count(tmp_path: Path, url: str, root: str, namespace: str, original: Records) -> None:
    total, scopes = len(original), {r["scope"] for r in original.values()}
    backend = OpenVikingBackend.connect(url, root, mode="api_key", key_store_path=str(tmp_path / "keys.json"), namespace=namespace)
    try:
        after_kill = sum((await _physical_copies(backend, scopes)).values())
        print(f"to openviking: {after_kill} of {total} on the server after the kill")
        assert total * 0.2 <= after_kill < total, f"{after_kill} of {total} on the server after the kill"

        argv, env = _command(tmp_path, url, namespace, tmp_path / "second.json")
        second = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        assert second.returncode == 0, second.stderr[-2000:]
        assert root not in second.stdout + second.stderr
        report = json.loads((tmp_path / "second.json").read_text())
        assert report["ok"] and not report["problems"], report["problems"]
        assert report["copied"] + report["already_present"] == total
        assert report["already_present"] >= after_kill and report["copied"] > 0, "the second run resumed, not restarted"
        copies = await _physical_copies(backend, scopes)
        assert set(copies) == set(original), f"{len(copies)} memories on the server, {total} expected"
        assert all(n == 1 for n in copies.values()), f"memories stored twice: {[c for c, n in copies.items() if n > 1][:5]}"
    finally:
        await backend.aclose()
