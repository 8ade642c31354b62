"""Seed 000's multi-agent loop over HTTP: a parent agent injects context into a sub-agent.

    python examples/seed000_http.py                      # starts a throw-away service itself
    python examples/seed000_http.py --url http://127.0.0.1:8080 --parent-key vbk_... --child-key vbk_...

tangseng-brain (the parent) captures team and private memories; calls inject-context for wukong
at depth minimal, standard and full; wukong recalls and sees exactly the injected items marked
`injected_by`; wukong cannot inject for itself and cannot modify what was injected; its
write-back carries `derived_from` = the injected ids. Both keys must belong to one user of one
tenant and workspace (agents tangseng-brain and wukong). Every step is checked; exit 0 = all held.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

TEAM = [
    ("Team decision: the frontend uses the Next.js App Router", "decision"),
    ("Team fact: the backend API is FastAPI on PostgreSQL 16", "fact"),
]
PRIVATE = [  # the parent agent's own memory (visibility "agent": only tangseng-brain reads it)
    ("Backend runbook: run the PostgreSQL migrations before restarting the API", "procedure"),
    ("Backend API latency budget is 50 ms at p99 for the PostgreSQL queries", "experience"),
    ("Backend on-call rotation: wukong owns API incidents this week", "experience"),
    ("tangseng-brain's own note: bajie is better at frontend work than backend", "experience"),
]
TASK = "backend-dev: PostgreSQL API"


def check(condition: bool, what: str, log: list[str]) -> None:
    log.append(("ok   " if condition else "FAIL ") + what)
    if not condition:
        raise AssertionError(what)


def run(url: str, parent_key: str, child_key: str, out: Any = sys.stdout) -> dict[str, Any]:
    log: list[str] = []
    parent = httpx.Client(base_url=url, headers={"X-API-Key": parent_key}, timeout=30)
    child = httpx.Client(base_url=url, headers={"X-API-Key": child_key}, timeout=30)
    try:
        # 1. the parent captures (seed 000's call) and remembers team and private memories
        r = parent.post("/api/v1/capture", json={"content": "I prefer short status reports after each task", "agent_id": "tangseng-brain"})
        check(r.status_code == 200, f"parent captures a conversation ({r.status_code})", log)
        team = [parent.post("/api/v1/memories", json={"content": c, "kind": k, "visibility": "workspace"}).json() for c, k in TEAM]
        private = [parent.post("/api/v1/memories", json={"content": c, "kind": k, "visibility": "agent"}).json() for c, k in PRIVATE]
        private_ids = {p["memory_id"] for p in private}
        check(all(p["visibility"] == "agent" for p in private) and all(t["visibility"] == "workspace" for t in team), "team and private memories land where asked", log)

        # 2. inject-context for wukong at three depths (seed 000: GET with query parameters)
        manifests = {}
        for depth in ("minimal", "standard", "full"):
            r = parent.get("/api/v1/inject-context", params={"agent_id": "wukong", "task": TASK, "depth": depth})
            check(r.status_code == 200, f"inject-context depth={depth} ({r.status_code})", log)
            manifests[depth] = r.json()
            check(manifests[depth]["source"] == "injected_by_tangseng-brain", f"depth={depth} says source injected_by_tangseng-brain", log)
        sizes = [len(manifests[d]["memories"]) for d in ("minimal", "standard", "full")]
        check(sizes[0] <= 3 and sizes[0] <= sizes[1] <= sizes[2], f"deeper injections carry more: {sizes}", log)

        # 3. wukong recalls under the minimal manifest: exactly the injected items are marked
        minimal = manifests["minimal"]
        injected = {m["memory_id"] for m in minimal["memories"]}
        r = child.get("/api/v1/recall", params={"query": TASK, "agent_id": "wukong", "manifest_id": minimal["manifest_id"]})
        check(r.status_code == 200, f"wukong recalls with the manifest ({r.status_code})", log)
        seen = r.json()["memories"]
        marked = {m["memory_id"] for m in seen if m["injected_by"]}
        check(marked <= injected, "every item marked injected_by was injected", log)
        check(all(m["injected_by"] == "u-tang@tangseng-brain" or m["memory_id"] not in marked for m in seen), "injected items name the parent", log)
        leaked = {m["memory_id"] for m in seen if m["memory_id"] in private_ids} - injected
        check(not leaked, "no private memory of the parent that was not injected is visible", log)
        check(injected & private_ids <= marked, "every injected private memory is visible, marked injected_by", log)
        without = child.get("/api/v1/recall", params={"query": TASK}).json()["memories"]
        check(not {m["memory_id"] for m in without} & private_ids, "without the manifest, wukong sees none of the parent's private memory", log)

        # 4. wukong cannot inject for itself
        r = child.get("/api/v1/inject-context", params={"agent_id": "wukong", "task": TASK})
        check(r.status_code == 403, f"wukong cannot inject into itself ({r.status_code})", log)

        # 5. wukong cannot modify injected memories
        target = next(iter(injected & private_ids), None) or next(iter(injected))
        scope = next(m["scope"] for m in minimal["memories"] if m["memory_id"] == target)
        r1 = child.patch(f"/api/v1/memories/{target}", params={"scope": scope}, json={"content": "rewritten by wukong"})
        r2 = child.delete(f"/api/v1/memories/{target}", params={"scope": scope})
        check(r1.status_code == 403 and r2.status_code == 403, f"wukong cannot edit or forget an injected memory ({r1.status_code}, {r2.status_code})", log)

        # 6. the write-back carries derived_from = the injected ids
        r = child.post("/api/v1/write-back", json={"manifest_id": minimal["manifest_id"], "content": "wukong: the API now pools PostgreSQL connections", "kind": "fact"})
        check(r.status_code == 201, f"wukong writes back ({r.status_code})", log)
        written = r.json()
        stored = parent.get(f"/api/v1/memories/{written['memory_id']}", params={"scope": written["scope"]}).json()
        check(set(stored["derived_from"]) == injected, "the write-back's derived_from is exactly the injected ids", log)
        check(stored["author"] == "u-tang@wukong", "the write-back is authored by wukong", log)
        return {"manifests": manifests, "recall": seen, "write_back": stored, "log": log}
    finally:
        for line in log:
            print(line, file=out)
        parent.close()
        child.close()


def _self_hosted() -> int:
    """Start a throw-away service with two API keys, run the loop, stop it (by its pid)."""
    import os
    import signal
    import socket
    import subprocess
    import tempfile
    import time
    from pathlib import Path

    from identity.providers.api_keys import ApiKeyStore

    home = Path(tempfile.mkdtemp(prefix="vb-seed000-"))
    keys = ApiKeyStore(home / "keys.sqlite3")
    parent = keys.issue(tenant_id="acme", user_id="u-tang", agent_id="tangseng-brain", workspace_id="hawk-bridge-backend", label="seed000").key
    child = keys.issue(tenant_id="acme", user_id="u-tang", agent_id="wukong", workspace_id="hawk-bridge-backend", label="seed000").key
    keys.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "VIKING_BRIDGE_HOME": str(home / "data"), "VIKING_BRIDGE_PROVIDER": "api_key", "VIKING_BRIDGE_API_KEYS__DB_PATH": str(home / "keys.sqlite3")}
    server = subprocess.Popen([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        result = run(url, parent, child)
        print(json.dumps(result["manifests"]["minimal"]["context"], ensure_ascii=False))
        return 0
    except AssertionError:
        return 1
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url")
    p.add_argument("--parent-key", help="API key of tangseng-brain")
    p.add_argument("--child-key", help="API key of wukong (same tenant, user and workspace)")
    args = p.parse_args(argv)
    if not args.url:
        return _self_hosted()
    try:
        run(args.url, args.parent_key, args.child_key)
    except AssertionError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
