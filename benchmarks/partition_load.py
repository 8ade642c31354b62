"""The CPU of a scope's first touch in the local backend, per row: the partition load, then the
first `load_hits` of that scope (what a first recall pays on top of the scan).

    python benchmarks/partition_load.py STORE_DIR [--scopes 300] [--min-rows 100] [--seed 0] [--json]

STORE_DIR is a kept local store (`filtered_recall.py --keep-local-store DIR` leaves one at
DIR/store). The store is opened with a stand-in embedder of its recorded signature (no text is
embedded: the queries are rows' own vectors). A sample of `--scopes` scopes of at least `--min-rows` rows (a fixed
seed) is loaded one by one, each timed with this thread's CPU clock (`time.thread_time_ns`,
not wall: the machine is shared); then each loaded scope answers two top-10 queries (one of its
rows, then another) and their hits are loaded, timed the same way (`load_hits` alone). Reported: thread CPU per loaded row (all loads together, and
the median of the per-scope figures), the hits' load per hit (first and second query), and the process's resident
memory growth over the raw vector bytes it loaded.

Why a benchmark of its own: in `filtered_recall.py` a first touch is one query's latency among
200, so its cost per row drowns in the noise of a shared machine; here it is measured alone,
in a fresh process (the OS page cache is warm, SQLite's is not), to be run old and new
alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np


class _StandIn:
    """An embedder that only carries the store's recorded signature and dimension."""

    def __init__(self, signature: str, dimension: int) -> None:
        self.signature, self.dimension = signature, dimension

    async def embed(self, texts: list[str]) -> np.ndarray:  # never called: queries are rows' vectors
        raise AssertionError("partition_load embeds nothing")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path, help="a kept store's directory (holding store/)")
    ap.add_argument("--scopes", type=int, default=300)
    ap.add_argument("--min-rows", type=int, default=100, help="only scopes of at least this many rows (the ones whose load shows)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    args = ap.parse_args()

    from adapters.local import LocalBackend
    from adapters.local.schema import db_path
    from adapters.scopes import ScopeKey, ScopeSet

    home = args.store / "store" if (args.store / "store").exists() else args.store
    with sqlite3.connect(f"file:{db_path(home)}?mode=ro", uri=True) as conn:
        signature = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()[0]
        scopes = sorted(s for s, n in conn.execute("SELECT scope, count(*) FROM memories GROUP BY scope") if n >= args.min_rows)
    dim = int(signature.split("dim=")[1].split("/")[0])
    random.Random(args.seed).shuffle(scopes)
    sample = [ScopeKey.parse(s) for s in scopes[: args.scopes]]

    backend = LocalBackend(home, embedder=_StandIn(signature, dim))  # type: ignore[arg-type]
    rss_before = _rss_bytes()
    load_ns, rows, per_row, parts = 0, 0, [], []
    for key in sample:
        with backend._lock:
            start = time.thread_time_ns()
            part = backend._partition(key)
            spent = time.thread_time_ns() - start
        load_ns += spent
        rows += part.size
        if part.size:
            per_row.append(spent / part.size / 1e3)
            parts.append((key, part))
    rss_growth = _rss_bytes() - rss_before
    raw = rows * 4 * dim

    hits_ns, hits = [0, 0], [0, 0]
    for turn in (0, 1):  # the scope's first hits, then the hits of a second query (other rows, mostly)
        for key, part in parts:
            query = np.array(part.matrix[turn * (part.size // 2)])  # a row of the scope: a query that surely has hits
            ranked = backend.search_vector(ScopeSet.of(key), query, limit=10)
            start = time.thread_time_ns()
            loaded = backend.load_hits(ranked)
            hits_ns[turn] += time.thread_time_ns() - start
            hits[turn] += len(loaded)
    asyncio.run(backend.aclose())

    report = {
        "scopes": len(sample), "rows": rows,
        "load_us_per_row": load_ns / rows / 1e3, "load_us_per_row_median_scope": float(np.median(per_row)),
        "first_hits_us_per_hit": hits_ns[0] / max(hits[0], 1) / 1e3, "second_hits_us_per_hit": hits_ns[1] / max(hits[1], 1) / 1e3, "hits": sum(hits),
        "rss_growth_over_raw_vectors": rss_growth / raw if raw else None,
    }
    if args.json:
        print(json.dumps(report))
    else:
        for name, value in report.items():
            print(f"{name:32} {value:.3f}" if isinstance(value, float) else f"{name:32} {value}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
