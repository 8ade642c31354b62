"""Recall latency through the OpenViking adapter vs a direct `find` on the same server.

One run: starts a local OpenViking 0.5.2 (timed), writes N memories into one private scope,
then alternates adapter.search(one-scope ScopeSet) and a raw `POST /api/v1/search/find` with
the same user key, target and limit, and prints the medians and their ratio.

    .venv/bin/python benchmarks/openviking_recall.py [--memories 50] [--reps 200] [--mode api_key]

With `--url URL` (root key from OPENVIKING_ROOT_API_KEY), or OPENVIKING_URL and
OPENVIKING_ROOT_API_KEY set, it uses that deployment (no start-up time). Otherwise it runs
`python -m contract_tests.openviking_server --mode MODE` as a child process, reads the server's
URL and root key from its first stdout line, and closes its stdin to stop it: a benchmark
imports library code only (the layering contracts in pyproject.toml), never the test harness.
Sequential requests: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.openviking import OpenVikingBackend
from adapters.scopes import ScopeKey, ScopeSet

WORDS = "tea coffee deploy kubernetes budget roadmap hiking invoice python rust design review lunch travel".split()


async def run(url: str, root: str, mode: str, memories: int, reps: int) -> dict[str, float]:
    backend = OpenVikingBackend.connect(url, root, mode=mode, namespace="bench" + uuid.uuid4().hex[:8])  # type: ignore[arg-type]
    scope = ScopeKey.private("acme", "alice")
    try:
        prov = Provenance("alice", "bench")
        for i in range(memories):
            text = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5, 7)) + f" note {i}"
            await backend.put(scope, NewMemory(text, "fact", prov), idempotency_key=f"k{i}")
        p = backend.mapper.principal(scope)
        auth = await backend._auth(p, create=False)
        assert auth is not None
        query = SearchQuery(ScopeSet.of(scope), "tea budget review", limit=10)
        adapter_ms: list[float] = []
        direct_ms: list[float] = []
        direct_rc_ms: list[float] = []  # the same find with read_content=true (what the adapter sends)
        for _ in range(5):  # warm-up
            await backend.search(query)
            await backend.client.find(auth, query.text, target_uri=p.memory_dir, limit=10, level=2)
        for _ in range(reps):
            t0 = time.perf_counter()
            result = await backend.search(query)
            adapter_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            raw = await backend.client.find(auth, query.text, target_uri=p.memory_dir, limit=10, level=2)
            direct_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            await backend.client.find(auth, query.text, target_uri=p.memory_dir, limit=10, level=2, read_content=True)
            direct_rc_ms.append((time.perf_counter() - t0) * 1000)
        assert len(result.hits) == 10 and len(raw["memories"]) == 10
        adapter, direct = statistics.median(adapter_ms), statistics.median(direct_ms)
        return {"adapter_median_ms": round(adapter, 2), "direct_find_median_ms": round(direct, 2),
                "direct_find_read_content_median_ms": round(statistics.median(direct_rc_ms), 2),
                "ratio": round(adapter / direct, 3), "reps": reps, "memories": memories}
    finally:
        await backend.drop_namespace()
        await backend.aclose()


def start_local_server(mode: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """A throw-away server in a child process; returns it and its JSON line (url, root key, ...)."""
    child = subprocess.Popen([sys.executable, "-m", "contract_tests.openviking_server", "--mode", mode],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        child.wait(timeout=30)
        raise SystemExit(f"the OpenViking server did not start (exit status {child.returncode}; its stderr is above)")
    return child, json.loads(line)


def stop_local_server(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()  # EOF on its stdin: the child stops the server and exits
    try:
        child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.terminate()
        child.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=50)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--mode", choices=["api_key", "trusted"], default="api_key")
    parser.add_argument("--url", default=os.environ.get("OPENVIKING_URL"), help="a running server (default: env OPENVIKING_URL; none: start one)")
    args = parser.parse_args()
    if args.url:
        root = os.environ.get("OPENVIKING_ROOT_API_KEY")
        if not root:
            raise SystemExit("--url needs the server's root key in OPENVIKING_ROOT_API_KEY")
        report = asyncio.run(run(args.url, root, args.mode, args.memories, args.reps))
        report["server_startup_s"] = None
    else:
        child, server = start_local_server(args.mode)
        try:
            report = asyncio.run(run(server["url"], server["root_api_key"], args.mode, args.memories, args.reps))
            report["server_startup_s"] = server["startup_seconds"]
        finally:
            stop_local_server(child)
    report["mode"] = args.mode
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
