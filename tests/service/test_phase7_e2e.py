"""Seed 002's phase-7 run through the real server: examples/phase7_http.py must hold.

Its own server: the shared session service runs without a role file (with one loaded, an agent
without a role may not inject — the seed 000 tests' agents have none), so this module starts
one with VIKING_BRIDGE_ROLES_FILE=examples/roles/phase7.toml through the same servicekit.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import pytest

from tests.service.servicekit import Service, spawn_service

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "phase7_http.py"


def _example():
    spec = importlib.util.spec_from_file_location("phase7_http", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def roles_service(tmp_path_factory):
    service = spawn_service(tmp_path_factory.mktemp("phase7"), env={"VIKING_BRIDGE_ROLES_FILE": str(ROOT / "examples" / "roles" / "phase7.toml")})
    yield service
    service.stop()


def test_phase7_dag_over_http_gets_seed_002s_manifests_and_lineage(roles_service: Service) -> None:
    example = _example()
    keys = {a: roles_service.api_key("li", agent=a, workspace="procurement") for a in example.AGENTS}
    keys["wang"] = roles_service.api_key("wang", agent="coordinator", workspace="logistics")
    out = io.StringIO()
    result = example.run(roles_service.url, keys, out)
    assert "FAIL" not in out.getvalue(), out.getvalue()
    assert result["counts"] == {"intent": 3, "ontology": 8, "simulation-verifier": 3}
    lineage = {r["label"]: r["derived_from"] for r in result["records"]}
    assert "VETO-v1" in lineage["PROPOSAL-v2"] and "PROPOSAL-v1" in lineage["VETO-v1"] and "PROPOSAL-v2" in lineage["CODE"]


def test_a_child_cannot_use_the_role_route_for_itself_and_the_refusal_is_a_problem(roles_service: Service) -> None:
    client = roles_service.client(roles_service.api_key("li", agent="intent", workspace="procurement"))
    r = client.post("/api/v1/roles/inject", json={"agent_id": "intent", "task": "采购"})
    assert r.status_code == 403 and r.headers["content-type"].startswith("application/problem+json")
    r = client.post("/api/v1/roles/inject", json={"agent_id": "coder", "task": "采购", "tenant_id": "globex"})
    assert r.status_code == 422  # a body cannot name an identity
    stranger = roles_service.client(roles_service.api_key("li", agent="freelancer", workspace="procurement"))
    assert stranger.get("/api/v1/roles/me").status_code == 403
