"""The service's ASGI app called in this process with the recall stubbed: the door's own CPU per
GET /api/v1/recall, without uvicorn, the loopback or the recall itself.

    .venv/bin/python benchmarks/service_door_inprocess.py 2000 5
    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/service_door_inprocess.py 2000 5   # an older checkout, same harness

A local store with 20 memories and one API key; `MemoryBridge.execute` answers each (identity,
operation) after its first run with that result, so each request runs the whole door (FastAPI's
outer layers, the edge, API-key authentication against SQLite, the query model, the response of
~12 KB, metrics and the access log, written through the service's log configuration to
/dev/null) and nothing else. Prints thread CPU per request for each of `reps` runs of `n`
requests and their minimum, with the load average: on a shared machine alternate old and new
checkouts in fresh processes and compare the minima.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import logging.config
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _quiet_access_log() -> None:
    from bridge.doors.edge import LOG_CONFIG

    config = json.loads(json.dumps(LOG_CONFIG))
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    logging.config.dictConfig(config)
    logging.getLogger("viking_bridge.access").handlers[0].stream = open(os.devnull, "w")  # noqa: SIM115 - for the process's life


async def main(n: int, reps: int) -> dict[str, Any]:
    _quiet_access_log()
    from bridge.doors.http.app import create_app
    from bridge.doors.http.auth import EdgeAuthenticator
    from bridge.doors.http.settings import ServiceSettings
    from bridge.facade import MemoryBridge
    from identity.providers.api_keys import ApiKey, ApiKeyProvider, ApiKeyStore

    home = Path(tempfile.mkdtemp(prefix="door-inprocess-"))
    store = ApiKeyStore(home / "keys.sqlite3")
    key = store.issue(tenant_id="acme", user_id="u1", agent_id="a", workspace_id="alpha", label="bench").key
    bridge = MemoryBridge.open_local(home / "data")
    app = create_app(bridge, EdgeAuthenticator({"api_key": ApiKeyProvider(store)}), ServiceSettings(rate_burst=0))
    await bridge.aopen()
    who = await ApiKeyProvider(store).authenticate(ApiKey(key))
    for i in range(20):
        await bridge.remember(who, f"the deployment runbook {i} lives in the ops wiki", kind="fact")
    real, kept = MemoryBridge.execute, {}

    async def execute(self: Any, identity: Any, op: Any) -> Any:
        if (identity.fingerprint, op) not in kept:
            kept[(identity.fingerprint, op)] = await real(self, identity, op)
        return kept[(identity.fingerprint, op)]

    MemoryBridge.execute = execute  # type: ignore[method-assign]
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def one() -> None:
        sent.clear()
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http", "path": "/api/v1/recall",
            "raw_path": b"/api/v1/recall", "query_string": b"query=deployment+runbook&purpose=chat", "root_path": "",
            "headers": [(b"host", b"127.0.0.1:8000"), (b"x-api-key", key.encode())], "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555),
        }
        await app(scope, receive, send)
        assert sent[0]["status"] == 200, sent

    for _ in range(200):
        await one()
    runs = []
    for _ in range(reps):
        gc.collect()
        started = time.thread_time()
        for _ in range(n):
            await one()
        runs.append((time.thread_time() - started) / n * 1e6)
    await bridge.aclose()
    store.close()
    return {"us_per_request": [round(r, 1) for r in runs], "min_us": round(min(runs), 1), "body_bytes": len(sent[1]["body"]), "load_average": os.getloadavg()}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 5))))
