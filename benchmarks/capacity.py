#!/usr/bin/env python
"""What one replica, one PostgreSQL server and one hosted-Viking collection serve, from measured figures.

    .venv/bin/python benchmarks/capacity.py --run                 # run the benchmarks it needs, then derive
    .venv/bin/python benchmarks/capacity.py --run --postgres-url URL   # also the PostgreSQL backend
    .venv/bin/python benchmarks/capacity.py                       # derive from bench-results/*.json already there

It runs (with `--run`) `local_recall.py --memories 200000`, `service_load.py` and
`filtered_recall.py` (floor, local, and the PostgreSQL systems when a URL is given), each writing
its JSON under `bench-results/`, and prints docs/capacity.md's table from those files. Every figure
is derived from a measurement of the same run; the arithmetic is here, in the open:

- a replica's recalls/s = the 2-worker service throughput at concurrency 8 (measured), and the
  CPU-bound ceiling per core = 1 / (server CPU seconds per request) (measured from /proc);
- a replica's memories = the RAM given to vectors / (dimension x 4 bytes x the measured resident
  overhead), since the local store keeps the partitions it scans resident;
- one PostgreSQL server's recalls/s = its cores / the measured per-query time of the exact
  filtered scan (a CPU-bound query on a server with idle cores), p99 from the same run;
- a hosted-Viking collection's capacity is the provider's quota (the simulator measures nothing
  real); the bridge adds its own per-recall CPU, measured as the pipeline minus the search stage.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench-results"


def _run(args: list[str]) -> None:
    print("$", " ".join(args), file=sys.stderr, flush=True)
    subprocess.run([sys.executable, *args], check=True, cwd=ROOT)


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def derive(local: dict | None, service: dict | None, filtered: dict | None, *, ram_gib: float, dim: int, cores: int) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    if local is not None:
        run = local["runs"][0]
        overhead = run["resident_memory"]["rss_delta_over_raw"] or 1.0
        per_memory = dim * 4 * overhead
        pipeline_us = run["latency"]["pipeline"]["p50_us"]
        search_us = run["pipeline_steps"]["search"]["p50_us"]
        rows.append(("replica (local store): memories resident", f"{ram_gib * 2**30 / per_memory:,.0f}",
                     f"{ram_gib:g} GiB for vectors / ({dim} x 4 B x {overhead:.2f} measured overhead)"))
        rows.append(("replica (local store): recall p50 in-process", f"{pipeline_us / 1000:.2f} ms",
                     f"local_recall.py at {run['total_memories_in_store']:,} memories (flat in store size: --scale-check)"))
        rows.append(("bridge CPU per recall besides the backend search", f"{(pipeline_us - search_us) / 1000:.2f} ms",
                     "pipeline p50 minus the search stage p50: what a remote backend's recall costs the replica"))
    if service is not None:
        two, one = service["service_2w"]["concurrent"], service["service_1w"]["concurrent"]
        rows.append(("replica service, 2 workers, concurrency 8: recalls/s", f"{two['throughput_rps']:.0f}",
                     f"p99 {two['p99_ms']:.1f} ms; the load generator took {two.get('generator_cpu_s', float('nan')):.1f} CPU-s of the same cores"))
        per_cpu = two.get("rps_per_server_cpu_s")
        if per_cpu:
            rows.append(("replica: recalls per server CPU-second", f"{per_cpu:.0f}",
                         f"so {cores} dedicated cores serve about {per_cpu * cores:,.0f} recalls/s before queueing"))
        rows.append(("replica service, 1 worker, concurrency 8: recalls/s", f"{one['throughput_rps']:.0f}", f"p99 {one['p99_ms']:.1f} ms"))
    if filtered is not None:
        for r in filtered["results"]:
            if r.get("system", "").startswith("postgres") and "p50_ms" in r:
                rows.append((f"one PostgreSQL server ({r['system']}): recalls/s", f"{cores / (r['p50_ms'] / 1000):,.0f}",
                             f"{cores} cores / p50 {r['p50_ms']:.2f} ms per query; p95 {r['p95_ms']:.2f} ms; recall@10 {r.get('recall_at_10')}"))
            if r.get("system") == "local" and "p50_ms" in r:
                rows.append(("local store, filtered exact scan", f"{r['p50_ms']:.2f} ms p50", f"p95 {r['p95_ms']:.2f} ms; recall@10 {r.get('recall_at_10')}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", action="store_true", help="run the benchmarks first")
    p.add_argument("--postgres-url", help="admin URL of a PostgreSQL 16 + pgvector (python -m contract_tests.postgres_server)")
    p.add_argument("--ram-gib", type=float, default=8.0, help="RAM a replica gives the local store's vectors")
    p.add_argument("--dim", type=int, default=896, help="vector width (896: the default hybrid embedder)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="cores of the machine the figures are projected to")
    args = p.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    if args.run:
        _run(["benchmarks/local_recall.py", "--rounds", "3", "--out", str(RESULTS / "local.json")])
        _run(["benchmarks/service_load.py", "--memories", "1000", "--requests", "400", "--out", str(RESULTS / "service.json")])
        systems = "floor,local" + (",postgres,postgres-ann" if args.postgres_url else "")
        extra = ["--postgres-url", args.postgres_url] if args.postgres_url else []
        _run(["benchmarks/filtered_recall.py", "--memories", "100000", "--systems", systems, "--out", str(RESULTS / "filtered.json"), *extra])
    rows = derive(_load("local.json"), _load("service.json"), _load("filtered.json"), ram_gib=args.ram_gib, dim=args.dim, cores=args.cores)
    if not rows:
        print("no bench-results/*.json yet: run with --run", file=sys.stderr)
        return 1
    print(f"load average now {os.getloadavg()}")
    print(f"| {'what':<58} | {'figure':>12} | derived from |")
    print(f"|{'-' * 60}|{'-' * 14}|---|")
    for what, figure, how in rows:
        print(f"| {what:<58} | {figure:>12} | {how} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
