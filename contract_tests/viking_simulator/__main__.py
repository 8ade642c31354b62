"""`python -m contract_tests.viking_simulator`: the Viking Memory simulator over real HTTP.

Serves one `VikingSimulator` on a free loopback port, prints ONE JSON line on stdout —
`{"url", "collection", "global_collection", "api_key", "access_key", "secret_key", "region"}` —
and keeps serving until SIGTERM/SIGINT. This is how a real `viking-bridge serve` process (or
anything else that must not import the contract suite) is pointed at a Viking by environment
alone: the same simulator the in-process tests use, reached through a socket instead of
`httpx.MockTransport`, so the bridge's real HTTP client, auth and timeouts are what is exercised.

The bearer key is granted for both collections; the AK/SK pair verifies SignerV4 signatures.
They are printed because the only reader is the parent's pipe and the server lives on loopback
as long as this process. Never point this at anything else. The simulator's clock follows the
wall clock here (the in-process one is manual), and faults cannot be injected over the socket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import socket
import sys
import time
from typing import Any

import httpx

from contract_tests.viking_simulator.simulator import VikingSimulator

__all__ = ["SimulatorApp", "main"]

TENANT_COLLECTION = "bridge_tenants"
GLOBAL_COLLECTION = "bridge_global"


class SimulatorApp:
    """An ASGI app that hands every HTTP request to the simulator's httpx handler unchanged
    (method, raw path, query, headers, body), so signatures are verified on what was sent."""

    def __init__(self, sim: VikingSimulator) -> None:
        self.sim = sim

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        host = next((v for k, v in headers if k.lower() == "host"), "127.0.0.1")
        target = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string") or b""
        url = f"http://{host}{target.decode('latin-1')}" + (f"?{query.decode('latin-1')}" if query else "")
        request = httpx.Request(scope["method"], url, headers=headers, content=body)
        self.sim.now = max(self.sim.now, time.time())
        try:
            response = await self.sim.handler(request)
            status, content, out = response.status_code, response.content, list(response.headers.items())
        except httpx.HTTPError:  # an injected transport fault: the closest thing over a socket
            status, content, out = 502, b"", []
        out = [(k, v) for k, v in out if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")]
        out.append(("content-length", str(len(content))))
        await send({"type": "http.response.start", "status": status, "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out]})
        await send({"type": "http.response.body", "body": content})


def prepared_simulator() -> tuple[VikingSimulator, dict[str, str]]:
    """A simulator with a tenant and a global collection, a bearer key and an AK/SK pair."""
    sim = VikingSimulator()
    for name in (TENANT_COLLECTION, GLOBAL_COLLECTION):
        sim.create_collection(name)
    credentials = {
        "api_key": "sim-" + secrets.token_hex(16),
        "access_key": "AKSIM" + secrets.token_hex(8).upper(),
        "secret_key": secrets.token_urlsafe(24),
        "region": sim.region,
    }
    sim.add_api_key(credentials["api_key"], collections={TENANT_COLLECTION, GLOBAL_COLLECTION})
    sim.add_credentials(credentials["access_key"], credentials["secret_key"])
    return sim, credentials


async def _serve() -> int:
    import uvicorn

    sim, credentials = prepared_simulator()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(SimulatorApp(sim), log_level="warning", access_log=False, lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))  # uvicorn handles SIGTERM/SIGINT: a graceful stop
    while not server.started:
        if task.done():
            return task.result() or 1  # type: ignore[func-returns-value]
        await asyncio.sleep(0.02)
    line = {"url": f"http://127.0.0.1:{port}", "collection": TENANT_COLLECTION, "global_collection": GLOBAL_COLLECTION, **credentials}
    print(json.dumps(line), flush=True)
    await task
    return 0


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m contract_tests.viking_simulator", description=__doc__.splitlines()[0]).parse_args(argv)
    return asyncio.run(_serve())


if __name__ == "__main__":
    sys.exit(main())
