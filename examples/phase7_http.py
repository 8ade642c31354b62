"""Seed 002's phase-7 run over HTTP: the coordinator injects per role, the DAG runs, lineage holds.

    python examples/phase7_http.py                  # starts a throw-away service (roles: examples/roles/phase7.toml)
    python examples/phase7_http.py --url http://127.0.0.1:8080 --keys keys.json

The same run as `viking-bridge demo multi-agent --dry-run`, through the memory service: the
service must be started with VIKING_BRIDGE_ROLES_FILE=examples/roles/phase7.toml, and `--keys`
names a JSON object {agent_id: api_key} for coordinator, intent, ontology, simulation-verifier
and coder (one user of one tenant, workspace procurement) plus "wang" (another user, workspace
logistics). Each turn is POST /api/v1/roles/inject (the manifest the child's role calls for);
the child recalls with the manifest; the deterministic stub answers; POST /api/v1/write-back
stores the decision record with derived_from. Every claim is checked; exit 0 = all held.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from bridge.doors.cli import scenario as sc  # noqa: E402  the task, memories and stubs the CLI demo uses

AGENTS = ("coordinator", *sc.DAG)


def check(condition: bool, what: str, log: list[str]) -> None:
    log.append(("ok   " if condition else "FAIL ") + what)
    if not condition:
        raise AssertionError(what)


def run(url: str, keys: dict[str, str], out: Any = sys.stdout) -> dict[str, Any]:
    log: list[str] = []
    c = {a: httpx.Client(base_url=url, headers={"X-API-Key": keys[a]}, timeout=60) for a in (*AGENTS, "wang")}
    names: dict[str, str] = {}
    result: dict[str, Any] = {"manifests": {}, "records": [], "log": log}
    try:
        # 1. the coordinator's federated memory (domain/tier metadata), its private note, and noise
        for node in sc.NODES:
            r = c["coordinator"].post("/api/v1/memories", json={"content": node.content, "kind": node.kind, "visibility": node.visibility, "metadata": node.metadata()})
            check(r.status_code == 201, f"coordinator writes {node.node} ({r.status_code})", log)
            names[r.json()["memory_id"]] = node.node
        private = c["coordinator"].post("/api/v1/memories", json={"content": sc.PRIVATE_NOTE, "kind": "note", "visibility": "agent"}).json()
        noise = [c["wang"].post("/api/v1/memories", json={"content": t, "kind": k, "visibility": "workspace", "metadata": m}).json()["memory_id"] for _, t, k, m in sc.NOISE]
        me = c["intent"].get("/api/v1/roles/me").json()
        check(me["domains"] == ["purchasing"] and me["budget_multiplier"] == 0.8, "GET /roles/me states the intent role of the role file", log)

        def turn(agent: str, carry: list[dict[str, str]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
            r = c["coordinator"].post("/api/v1/roles/inject", json={"agent_id": agent, "task": sc.TASK, "carry": list(carry)})
            check(r.status_code == 200, f"coordinator injects into {agent} ({r.status_code})", log)
            fm = r.json()
            result["manifests"].setdefault(agent, []).append(fm)
            planned = len(fm["memories"]) - fm["carried"]
            print(f"[{agent}] {planned} planned + {fm['carried']} carried; route {fm['route']}; counts {fm['counts']}", file=out)
            seen = c[agent].get("/api/v1/recall", params={"query": sc.TASK, "manifest_id": fm["manifest_id"], "purpose": "coding", "budget_tokens": 20000}).json()["memories"]
            ours = {m["memory_id"] for m in fm["memories"]}
            from_coordinator = {m["memory_id"] for m in seen if m["scope"] == "acme/agent/coordinator/li"}
            check(from_coordinator <= ours, f"{agent} sees of the coordinator's agent memory only its manifest", log)
            fm["nodes"] = [{"metadata": {"node": names.get(m["memory_id"], m["memory_id"])}} for m in fm["memories"]]
            return fm

        def write_back(agent: str, fm: dict[str, Any], label: str, content: str) -> dict[str, str]:
            r = c[agent].post("/api/v1/write-back", json={"manifest_id": fm["manifest_id"], "content": content, "kind": "decision"})
            check(r.status_code == 201, f"{agent} writes back {label} ({r.status_code})", log)
            w = r.json()
            stored = c["coordinator"].get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}).json()
            check(set(stored["derived_from"]) == {m["memory_id"] for m in fm["memories"]}, f"{label}: derived_from = the manifest's ids", log)
            names[w["memory_id"]] = label
            result["records"].append({"label": label, "memory_id": w["memory_id"], "derived_from": [names.get(i, i) for i in stored["derived_from"]]})
            return {"scope": w["scope"], "memory_id": w["memory_id"]}

        # 2. the DAG: intent -> ontology -> verifier (veto) -> ontology v2 -> verifier (pass) -> coder
        fm = turn("intent")
        write_back("intent", fm, "INTENT", sc.intent_stub(fm["nodes"]).content)
        fm = turn("ontology")
        v1 = write_back("ontology", fm, "PROPOSAL-v1", sc.ontology_stub(fm["nodes"], None).content)
        fm = turn("simulation-verifier", [v1])
        veto = sc.verifier_stub(fm["nodes"], sc.ontology_stub(fm["nodes"], None).content)
        check(veto.passed is False, "the verifier vetoes v1 (Beta 13 days < threshold 15)", log)
        veto_ref = write_back("simulation-verifier", fm, "VETO-v1", veto.content)
        fm = turn("ontology", [veto_ref])
        v2 = write_back("ontology", fm, "PROPOSAL-v2", sc.ontology_stub(fm["nodes"], veto.content).content)
        fm = turn("simulation-verifier", [v2])
        verdict = sc.verifier_stub(fm["nodes"], sc.ontology_stub(fm["nodes"], veto.content).content)
        check(verdict.passed is True, "the verifier passes v2 (keep_threshold_add_warning)", log)
        write_back("simulation-verifier", fm, "PASS-v2", verdict.content)
        fm = turn("coder", [v2])
        write_back("coder", fm, "CODE", sc.coder_stub(fm["nodes"]).content)

        # 3. the claims
        first = {a: result["manifests"][a][0] for a in sc.SEED_COUNTS}
        counts = {a: len(fm["memories"]) - fm["carried"] for a, fm in first.items()}
        result["counts"] = counts
        check(counts == sc.SEED_COUNTS, f"manifest counts {counts} match seed 002's 3/8/3", log)
        every = {m["memory_id"] for fms in result["manifests"].values() for fm in fms for m in fm["memories"]}
        check(private["memory_id"] not in every and not every & set(noise), "the coordinator's private note and another workspace's memory are in no manifest", log)
        r = c["intent"].post("/api/v1/roles/inject", json={"agent_id": "intent", "task": sc.TASK})
        check(r.status_code == 403, f"a child cannot inject for itself ({r.status_code})", log)
        r = c["intent"].post("/api/v1/roles/inject", json={"agent_id": "coder", "task": sc.TASK})
        check(r.status_code == 403 and "may not inject" in r.text, f"a child the roles do not permit cannot inject ({r.status_code})", log)
        injected = next(m for m in first["ontology"]["memories"] if m["scope"].startswith("acme/agent/coordinator/"))
        r1 = c["ontology"].patch(f"/api/v1/memories/{injected['memory_id']}", params={"scope": injected["scope"]}, json={"content": "tampered"})
        r2 = c["ontology"].delete(f"/api/v1/memories/{injected['memory_id']}", params={"scope": injected["scope"]})
        check(r1.status_code == 403 and r2.status_code == 403, f"a child cannot modify an injected memory ({r1.status_code}, {r2.status_code})", log)
        plain = c["ontology"].get("/api/v1/recall", params={"query": sc.TASK, "purpose": "coding"}).json()["memories"]
        check(not any(m["scope"] == "acme/agent/coordinator/li" for m in plain), "without a manifest a child sees none of the coordinator's agent memory", log)
        for rec in result["records"]:
            print(f"  {rec['label']:<12} <- {rec['derived_from']}", file=out)
        return result
    finally:
        for line in log:
            print(line, file=out)
        for client in c.values():
            client.close()


def issue_keys(keys_db: Path) -> dict[str, str]:
    from identity.providers.api_keys import ApiKeyStore

    store = ApiKeyStore(keys_db)
    try:
        keys = {a: store.issue(tenant_id="acme", user_id="li", agent_id=a, workspace_id="procurement", label="phase7").key for a in AGENTS}
        keys["wang"] = store.issue(tenant_id="acme", user_id="wang", agent_id="coordinator", workspace_id="logistics", label="phase7").key
        return keys
    finally:
        store.close()


def _self_hosted() -> int:
    """Start a throw-away service with the phase-7 roles, run, stop it (by its pid)."""
    import os
    import signal
    import socket
    import subprocess
    import tempfile
    import time

    home = Path(tempfile.mkdtemp(prefix="vb-phase7-"))
    keys = issue_keys(home / "keys.sqlite3")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    roles = Path(__file__).resolve().parent / "roles" / "phase7.toml"
    env = {**os.environ, "VIKING_BRIDGE_HOME": str(home / "data"), "VIKING_BRIDGE_PROVIDER": "api_key",
           "VIKING_BRIDGE_API_KEYS__DB_PATH": str(home / "keys.sqlite3"), "VIKING_BRIDGE_ROLES_FILE": str(roles)}
    server = subprocess.Popen([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        result = run(url, keys)
        print(json.dumps(result["counts"]))
        return 0
    except AssertionError:
        return 1
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url")
    p.add_argument("--keys", help="a JSON file {agent_id: api_key} (see the module docstring)")
    args = p.parse_args(argv)
    if not args.url:
        return _self_hosted()
    try:
        run(args.url, json.loads(Path(args.keys).read_text()))
    except AssertionError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
