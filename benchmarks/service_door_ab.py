"""Two served doors side by side, old and new code, recall stubbed: server CPU per request in
short alternating batches, so both sides meet the same moments of a shared machine.

    .venv/bin/python benchmarks/service_door_ab.py --old-code /tmp/old --home /tmp/store
    .venv/bin/python benchmarks/service_door_ab.py --old-code /tmp/old --new-code /tmp/mid --rounds 30 --batch 300

`service_profile.py --server-code` runs old and new in separate passes of ~30 s each; on a machine
other sessions load, the load moves between those passes by more than a door change of tens of
microseconds. Here four servers (`service_profile.py`'s stubbed child: one uvicorn worker with
exactly the options `viking-bridge serve` passes, each (identity, query) recalled once and then
answered from that result) run at once on one store, old, new, new, old in the order they are
started (an identical pair measured this way differed by as much as a change: the server started
second ran ~75 us a request cheaper), and this process sends them batches of sequential GET
/api/v1/recall on one keep-alive connection each, each round starting with the next server. A
round's figure per side is the mean of its two servers' batches. Each batch's server CPU is the server's on-CPU time over the batch from
/proc/<pid>/task/*/schedstat (nanoseconds, every thread of the process). Prints the median and
quartiles per side of the per-batch CPU per request and the paired differences, with the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit


def _on_cpu_ns(pid: int) -> int:
    """Nanoseconds every thread of `pid` has run on a CPU (the first field of schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return total


async def _batch(connection: Any, keys: list[str], queries: list[str], n: int, rng: random.Random) -> list[float]:
    latencies = []
    for _ in range(n):
        target = "/api/v1/recall?" + urlencode({"query": rng.choice(queries)})
        started = time.perf_counter()
        status = await connection.get(target, rng.choice(keys))
        latencies.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"status {status}")
    return latencies


async def _compare(servers: list[tuple[str, Any, str]], keys: list[str], queries: list[str], rounds: int, batch: int, load: Any) -> dict[str, Any]:
    connections = []
    for _side, _process, url in servers:
        parts = urlsplit(url)
        connection = load._RawConnection(parts.hostname or "127.0.0.1", parts.port or 80)
        for key in keys:  # every (identity, query) recalled once: later requests are the door alone
            for query in queries:
                await connection.get("/api/v1/recall?" + urlencode({"query": query}), key)
        await _batch(connection, keys, queries, batch, random.Random(0))  # warm
        connections.append(connection)
    cpu: dict[str, list[float]] = {side: [] for side, _, _ in servers}
    wall: dict[str, list[float]] = {side: [] for side, _, _ in servers}
    for r in range(rounds):
        this_round: dict[str, list[float]] = {side: [] for side in cpu}
        for i in range(len(servers)):  # each round starts with the next server
            n = (r + i) % len(servers)
            side, process, _url = servers[n]
            before = _on_cpu_ns(process.pid)
            latencies = await _batch(connections[n], keys, queries, batch, random.Random(r))
            this_round[side].append((_on_cpu_ns(process.pid) - before) / batch / 1e3)
            wall[side] += latencies
        for side, values in this_round.items():
            cpu[side].append(statistics.fmean(values))
    for connection in connections:
        connection.close()
    return {"cpu_us": cpu, "wall_s": wall}


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old-code", type=Path, required=True, help="a checkout of the old code (e.g. `git archive main | tar -x -C /tmp/old`)")
    p.add_argument("--new-code", type=Path, help="serve another checkout as the new side (default: this one)")
    p.add_argument("--home", type=Path, help="a store seeded by service_profile.py / service_load.py (kept); a new one otherwise")
    p.add_argument("--memories", type=int, default=1000)
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--batch", type=int, default=300, help="sequential requests per batch")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    import service_load as load  # siblings: this script's folder is on sys.path when run
    import service_profile as profile
    home = args.home or Path(tempfile.mkdtemp(prefix="vb-door-ab-"))
    keys_file = home / "keys.json"
    if not keys_file.exists():
        keys_file.write_text(json.dumps(asyncio.run(load._seed(home, args.memories, args.users))))
    keys = json.loads(keys_file.read_text())
    servers: list[tuple[str, Any, str]] = []
    try:
        for side in ("old", "new", "new", "old"):  # started in this order: neither side is always first
            servers.append((side, *profile._start(home, None, None, args.old_code if side == "old" else args.new_code, True)))
        load_start = os.getloadavg()
        result = asyncio.run(_compare(servers, keys, load.QUERIES, args.rounds, args.batch, load))
        load_end = os.getloadavg()
    finally:
        for _side, process, _url in servers:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    cpu = result["cpu_us"]
    diffs = [new - old for old, new in zip(cpu["old"], cpu["new"])]
    report = {
        "old_code": str(args.old_code), "rounds": args.rounds, "batch": args.batch, "load_average_start": load_start, "load_average_end": load_end,
        "server_cpu_us_per_request": {side: [round(v, 1) for v in values] for side, values in cpu.items()},
        "wall_p50_ms": {side: round(1000 * statistics.median(v), 3) for side, v in result["wall_s"].items()},
    }
    print(f"load average {load_start[0]:.2f} -> {load_end[0]:.2f}; {args.rounds} rounds of {args.batch} sequential requests per side, recall stubbed")
    for side in ("old", "new"):
        q1, med, q3 = _quartiles(cpu[side])
        print(f"{side}: server CPU per request median {med:.1f} us (quartiles {q1:.1f}-{q3:.1f}); client wall p50 {report['wall_p50_ms'][side]:.3f} ms")
    q1, med, q3 = _quartiles(diffs)
    print(f"new - old, paired by round: median {med:+.1f} us (quartiles {q1:+.1f} to {q3:+.1f}); new lower in {sum(d < 0 for d in diffs)} of {len(diffs)} rounds")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
