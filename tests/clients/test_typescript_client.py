"""The TypeScript client (clients/typescript) against a LIVE `viking-bridge serve` process.

This test starts the service on loopback (tests/service/servicekit.py), issues API keys for two
tenants and several users, runs `npm ci` (once per lock file) and `npm test` with the URL and
keys in the environment, and fails when the Node test runner reports any failure, skip or
cancellation — so a red JS test is a red pytest. The JS tests cover every route of
docs/openapi.json, the typed errors, retries (against a local stub), credential redaction, the
coding-agent plugin example, and reads of another identity's memory that must fail.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.clients.nodekit import PACKAGE, ensure_node, npm_ci, parse_tap
from tests.service.servicekit import Service, spawn_service

#: The workspace the plugin example derives from its test repository's remote
#: (git@github.com:Acme/Payments.git); alice's keys name it, so the plugin accepts them.
PLUGIN_WORKSPACE = "github.com~acme~payments"
ROOT = Path(__file__).resolve().parents[2]
#: The role routes need a role file; the main service runs without one (with one loaded, an
#: agent without a role may not inject, and the seed 000 agents here have none), so the role
#: tests also get a second service loaded with seed 002's phase-7 roles (tests/service/test_phase7_e2e.py does the same).
ROLES_FILE = ROOT / "examples" / "roles" / "phase7.toml"


@pytest.fixture(scope="module")
def ts_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    handle = spawn_service(tmp_path_factory.mktemp("ts-service"), workers=1)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def ts_roles_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    handle = spawn_service(tmp_path_factory.mktemp("ts-roles-service"), workers=1, env={"VIKING_BRIDGE_ROLES_FILE": str(ROLES_FILE)})
    try:
        yield handle
    finally:
        handle.stop()


def _roles_environment(service: Service) -> dict[str, str]:
    # phase7.toml's team tenant is acme; coordinator may inject into intent; freelancer has no role
    return {
        "VB_ROLES_URL": service.url,
        "VB_ROLES_KEY_COORDINATOR": service.api_key("li", tenant="acme", agent="coordinator", workspace="procurement"),
        "VB_ROLES_KEY_INTENT": service.api_key("li", tenant="acme", agent="intent", workspace="procurement"),
        "VB_ROLES_KEY_NOROLE": service.api_key("li", tenant="acme", agent="freelancer", workspace="procurement"),
    }


def _environment(service: Service) -> dict[str, str]:
    tenant = "ts" + secrets.token_hex(3)
    ws = PLUGIN_WORKSPACE
    return {
        "VB_URL": service.url,
        "VB_TENANT": tenant,
        "VB_WORKSPACE": ws,
        # alice: admin and approver of her tenant, working in the plugin's repository as coding-agent
        "VB_KEY_ALICE": service.api_key("alice", tenant=tenant, agent="coding-agent", departments=["eng"], workspace=ws, roles=["admin", "approver"]),
        # alice's child agent (seed 000's wukong): receives manifests, writes back
        "VB_KEY_ALICE_CHILD": service.api_key("alice", tenant=tenant, agent="wukong", departments=["eng"], workspace=ws),
        # carol: a plain member of eng (her department standards await approval)
        "VB_KEY_CAROL": service.api_key("carol", tenant=tenant, agent="coding-agent", departments=["eng"], workspace=ws),
        # bob: another user of the same tenant, another department and workspace
        "VB_KEY_BOB": service.api_key("bob", tenant=tenant, agent="coding-agent", departments=["sales"], workspace="ts-other-ws"),
        # another tenant's alice, same user id and workspace name: must see nothing of the first
        "VB_KEY_GLOBEX": service.api_key("alice", tenant=tenant + "-globex", agent="coding-agent", departments=["eng"], workspace=ws, roles=["admin"]),
        "VB_TOKEN_ALICE": service.token("alice", tenant=tenant, agent="coding-agent", ttl=900),
    }


@pytest.mark.slow
def test_typescript_client_passes_its_node_tests_against_a_live_service(ts_service: Service, ts_roles_service: Service, tmp_path: Path) -> None:
    npm, how = ensure_node()
    if npm is None:
        pytest.skip(how)
    npm_ci(npm)
    env = {**os.environ, **_environment(ts_service), **_roles_environment(ts_roles_service), "NO_COLOR": "1"}
    done = subprocess.run([npm, "test", "--silent"], cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    (tmp_path / "node-test.tap").write_text(out, encoding="utf-8")
    summary = parse_tap(done.stdout)
    assert summary.failed == 0 and summary.cancelled == 0, "JS tests failed:\n" + "\n".join(summary.failures)[:8000]
    assert summary.skipped == 0 and summary.todo == 0, f"JS tests were skipped (the live service env must reach every test): {summary}"
    assert done.returncode == 0, f"npm test exited {done.returncode}:\n{out[-4000:]}"
    assert summary.passed == summary.tests and summary.tests >= 20, summary
    for guarantee in ("every route of docs/openapi.json is called at least once", "bob cannot read alice's private memory", "generated types are fresh"):
        assert any(guarantee in name for name in summary.names), f"the JS test {guarantee!r} did not run: {summary.names}"
    # the service saw none of the credentials in its logs either
    everything = "\n".join(ts_service.log_lines() + ts_roles_service.log_lines()) + ts_service.err_path.read_text() + ts_roles_service.err_path.read_text()
    assert "vbk_" not in everything
