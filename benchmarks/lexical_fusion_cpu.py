#!/usr/bin/env python
"""Thread CPU of the local search's lexical channel and fusion (`LocalSearch._fused`) on a kept
local_recall store, against the scan's own matrix products measured in the same run.

    python benchmarks/lexical_fusion_cpu.py --data-dir /path/kept/by/local_recall [--rounds 5]

Why apart from local_recall.py: that benchmark times the whole pipeline, where the fusion is a
fifth of the work and the run-to-run spread of a shared machine hides a change of it. Here each
query's scan is made once (untimed), then, in rotating order per query:
  matmul   every scanned partition's `scores_into` (the floor: the scan's own work on the vectors);
  fused    `_fused(scan, text, depth 50, limit 50)`: BM25 over the scan, both channels' best 50,
           the fusion, the (scope, rowid, score) rows;
  search   `backend.search(SearchQuery(scopes, text, limit=50))` whole (embedding, scan, fusion, hits).
Thread CPU (`time.thread_time_ns`), medians in microseconds, and fused / matmul, search / matmul.

It also prints a digest of every query's fused rows (scope, rowid, score as its float bits), so
two versions of the code can be checked to rank exactly alike on the same store.

`--against DIR` (a tree of another commit, e.g. `git archive main | tar -x -C DIR`): the same
steps of that tree (its adapters/local/lexical.py, lexical_search.py, scan.py and
adapters/shared/fusion.py, loaded beside this one's) run on the same scans in the same process,
alternating query by query with this tree's, after checking both give the same rows and the same
BM25 bits for every query. Fresh processes on a shared 2-core machine move by more than a change
of this size; within one process both sides see the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import inspect
import json
import os
import random
import struct
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Callable

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import local_recall as lr  # noqa: E402
import numpy as np  # noqa: E402

from adapters.base import SearchQuery  # noqa: E402
from adapters.local import LocalBackend  # noqa: E402
from adapters.local.blas import one_blas_thread  # noqa: E402
from bridge.policy import Policy, PolicyConfig  # noqa: E402
from bridge.vocabulary import Purpose  # noqa: E402

DEPTH = LIMIT = 50


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def other_fused(tree: Path) -> tuple[Callable, Callable]:
    """`_fused` and `_bm25` as the tree at `tree` writes them, run on this tree's store and scans."""
    local, shared = tree / "adapters" / "local", tree / "adapters" / "shared"
    lexical = _module("other_lexical", local / "lexical.py")
    lexical_search = _module("other_lexical_search", local / "lexical_search.py")
    lexical_search.lexical = lexical  # its query digests and terms, not this tree's
    scan_module = _module("other_scan", local / "scan.py")
    fusion = _module("other_fusion", shared / "fusion.py")
    bm25 = lexical_search.LocalLexical._bm25
    # the lexical ranking as that tree's search.py asks for it: a sorted copy for the cut where it
    # has one, and BM25 sums with 0 for "no candidate" ranked above a floor where it has those
    # (else the other side would pay a pass over the buffer that its own search does not)
    best_options = inspect.signature(scan_module.Scan.best).parameters
    lexical_cut = {"few_distinct": True} if "few_distinct" in best_options else {}
    lexical_scores = bm25
    if "floor" in best_options and hasattr(lexical_search.LocalLexical, "_bm25_sums"):
        lexical_cut["floor"] = 0.0
        lexical_scores = lexical_search.LocalLexical._bm25_sums

    as_theirs: dict[int, tuple[object, object]] = {}  # each scan as the other tree's Scan, made once (untimed after the check)

    def fused(backend, scan, text: str, depth: int, limit: int):  # search.py's _fused, on the other tree's parts
        if id(scan) not in as_theirs:
            as_theirs[id(scan)] = (scan, scan_module.Scan(scan.scores, scan.segments, scan.rowids))  # the scan kept: its id stays its own
        scan = as_theirs[id(scan)][1]
        vector = scan.best(scan.scores, depth)
        scores = lexical_scores(backend, scan, text) if backend.lexical_channel else None
        lexical_ranking = scan.best(scores, depth, **lexical_cut) if scores is not None else None
        if lexical_ranking is None or not len(lexical_ranking):
            vector = vector[:limit]
            return scan.ranked(vector, scan.scores[vector].tolist())
        both = np.concatenate([vector, lexical_ranking])
        picked, fused_scores = fusion.fused_order(scan.rowids[both], scan.scores[both], len(vector), limit)
        return scan.ranked(both[picked], fused_scores)

    return fused, bm25


def _median_us(samples: list[int]) -> float:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2] / 1000.0


async def run(args: argparse.Namespace) -> dict[str, object]:
    world = lr.build_world(args.memories, args.tenants, args.seed, "t")
    idents = lr.pick_identities(world, args.identities, args.seed)
    embedder = lr.BenchEmbedder(args.dim, args.seed)
    backend = LocalBackend(Path(args.data_dir) / "store", embedder=embedder)
    policy = Policy(PolicyConfig(include_global=False))
    rng = random.Random(args.seed)
    queries = []
    for j in range(args.queries):
        bi = idents[j % len(idents)]
        topic = int(bi.tenant.topics[rng.randrange(lr.TOPICS_PER_TENANT)])
        text = f"what do we know about #t{topic}? question {j} from {bi.identity.user_id}"
        queries.append((policy.readable_scopes(bi.identity, Purpose.CHAT), text, embedder.derive(text)))
    digest = hashlib.sha256()
    for scopes, text, vector in queries:  # warm-up: partitions and postings loaded; the digest of the fused rows
        await backend.search(SearchQuery(scopes, text, limit=LIMIT))
        with backend._lock:
            scan = backend._scan(scopes, vector, statuses=SearchQuery(scopes, text).statuses, kinds=None, now=None)
            for scope, rowid, score in backend._fused(scan, text, DEPTH, LIMIT):
                digest.update(f"{scope}|{rowid}|".encode() + struct.pack("<d", score))
    samples: dict[str, list[int]] = {"matmul": [], "fused": [], "search": []}
    clock = time.thread_time_ns
    for round_ in range(args.rounds):
        for at, (scopes, text, vector) in enumerate(queries):
            with backend._lock:
                scan = backend._scan(scopes, vector, statuses=SearchQuery(scopes, text).statuses, kinds=None, now=None)
            order = ("matmul", "fused", "search")
            shift = (round_ + at) % 3
            for path in order[shift:] + order[:shift]:
                if path == "matmul":
                    t = clock()
                    with one_blas_thread(scan.size * args.dim):
                        for _, part, offset, n in scan.segments:
                            part.scores_into(vector, scan.scores[offset : offset + n])
                    samples[path].append(clock() - t)
                elif path == "fused":
                    with backend._lock:
                        t = clock()
                        backend._fused(scan, text, DEPTH, LIMIT)
                        samples[path].append(clock() - t)
                else:
                    t = clock()
                    await backend.search(SearchQuery(scopes, text, limit=LIMIT))
                    samples[path].append(clock() - t)
    against = compare(backend, queries, Path(args.against), args.rounds) if args.against else None
    await backend.aclose()
    medians = {path: round(_median_us(s), 1) for path, s in samples.items()}
    return {
        "against": against,
        "median_us": medians,
        "fused_over_matmul": round(medians["fused"] / medians["matmul"], 3),
        "search_over_matmul": round(medians["search"] / medians["matmul"], 3),
        "samples": len(samples["fused"]),
        "fused_rows_digest": digest.hexdigest()[:16],
        "load": os.getloadavg(),
    }


def compare(backend: LocalBackend, queries: list, tree: Path, rounds: int) -> dict[str, object]:
    """This tree's `_fused` and `_bm25` against another tree's, alternating on the same scans."""
    fused, bm25 = other_fused(tree)
    mine = {"fused": type(backend)._fused, "bm25": type(backend)._bm25}
    theirs = {"fused": fused, "bm25": bm25}
    scans = []
    with backend._lock:
        for scopes, text, vector in queries:
            scan = backend._scan(scopes, vector, statuses=SearchQuery(scopes, text).statuses, kinds=None, now=None)
            assert mine["fused"](backend, scan, text, DEPTH, LIMIT) == theirs["fused"](backend, scan, text, DEPTH, LIMIT), text
            a, b = mine["bm25"](backend, scan, text), theirs["bm25"](backend, scan, text)
            assert (a is None and b is None) or a.tobytes() == b.tobytes(), text
            scans.append((scan, text))
        samples: dict[str, list[int]] = {f"{side}_{step}": [] for side in ("this", "other") for step in ("fused", "bm25")}
        clock = time.thread_time_ns
        for round_ in range(rounds):
            for at, (scan, text) in enumerate(scans):
                sides = (("this", mine), ("other", theirs)) if (round_ + at) % 2 else (("other", theirs), ("this", mine))
                for side, steps in sides:
                    t = clock()
                    steps["fused"](backend, scan, text, DEPTH, LIMIT)
                    samples[f"{side}_fused"].append(clock() - t)
                    t = clock()
                    steps["bm25"](backend, scan, text)
                    samples[f"{side}_bm25"].append(clock() - t)
    medians = {name: round(_median_us(s), 1) for name, s in samples.items()}
    return {
        "tree": str(tree), "same_rows_and_bm25_bits": True, "median_us": medians,
        "fused_this_over_other": round(medians["this_fused"] / medians["other_fused"], 3),
        "bm25_this_over_other": round(medians["this_bm25"] / medians["other_bm25"], 3),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True, help="a directory kept by local_recall.py --keep")
    p.add_argument("--memories", type=int, default=200_000, help="the base memories local_recall.py was run with")
    p.add_argument("--tenants", type=int, default=50)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--identities", type=int, default=60)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=20240603)
    p.add_argument("--against", help="another commit's tree: its _fused and _bm25 timed beside this one's, in this process")
    print(json.dumps(asyncio.run(run(p.parse_args()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
