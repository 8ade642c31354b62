#!/usr/bin/env python
"""Local backend recall benchmark (issue 3): adapter and whole-pipeline latency against a bare numpy floor.

    python benchmarks/local_recall.py [--memories 200000] [--tenants 50] [--dim 384] [--queries 300]
                                      [--out bench-results/local.json] [--scale-check]

One invocation:
1. builds a synthetic enterprise corpus (tenants of Zipf-skewed sizes, each with users,
   workspaces, departments and a tenant-shared scope; scope sizes Zipf-skewed too; clustered
   384-dim unit vectors) and ingests it with `LocalBackend.put_many` in batches (ingest rate);
2. in a fresh child process (so resident memory is measured cleanly) opens the store and, for
   identities that each read 4 non-empty scopes (own private, current workspace, own department,
   tenant-shared; the policy adds the identity's agent scope, which is empty here), measures with
   the same queries (each round: chunks of one query per identity; every path runs over the whole
   chunk in turn, in rotating order), after a warm-up:
     floor            bare numpy over exactly the readable active rows, pre-gathered into one
                      contiguous matrix: `rows @ q` + argpartition top-10;
     adapter_vector   `search_vector(scopes, q, limit=10)` + `load_hits` with the precomputed vector;
     adapter_search   `await search(SearchQuery(scopes, text, limit=10))` (embeds the query text);
     pipeline         `await MemoryBridge.recall(identity, text)`: session check, policy, backend
                      search (candidate limit 50), guard, rank, budget, render, audit row;
   recall@10 of the adapter against float64 brute force over the readable active rows; and the
   RSS growth from loading the touched partitions vs the raw vector bytes of those partitions.
3. `--scale-check` ingests the 200k base corpus, measures, then grows the *same* store to 1M
   with memories of other tenants (readable sets unchanged) and measures again.

Memories beyond `--base-memories` (default 200,000) always go to extra "filler" tenants that no
benchmark identity can read, so `--memories 1000000` has exactly the readable sets of the 200k run.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import gc
import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from adapters.base import NewMemory, Provenance, SearchQuery, Status  # noqa: E402
from adapters.local import LocalBackend  # noqa: E402
from adapters.scopes import ScopeKey  # noqa: E402

N_TOPICS = 256
TOPICS_PER_TENANT = 12
CLUSTER_SPREAD = 1.0  # noise norm relative to the unit centroid: same-topic cosine ~ 0.5
AGENT_ID = "assistant"
# class -> share of a tenant's memories, kinds written there
CLASSES = (
    ("private", 0.45, ("preference", "profile", "event", "note")),
    ("workspace", 0.30, ("fact", "decision", "procedure")),
    ("department", 0.17, ("standard", "procedure", "fact")),
    ("tenant", 0.08, ("fact", "decision", "note")),
)
STATUS_MIX = ((Status.ACTIVE, 0.95), (Status.PENDING, 0.03), (Status.SUPERSEDED, 0.02))


# --------------------------------------------------------------------------------------------
# The fake embedder: vectors are a deterministic function of the text (plus the corpus seed).
# --------------------------------------------------------------------------------------------
def _centroids(seed: int, dim: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 7])
    c = rng.standard_normal((N_TOPICS, dim)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    return c


def _topic_of(text: str) -> int | None:
    at = text.find("#t")
    if at < 0:
        return None
    end = at + 2
    while end < len(text) and text[end].isdigit():
        end += 1
    return int(text[at + 2 : end]) % N_TOPICS if end > at + 2 else None


class BenchEmbedder:
    """`embed(text)` = normalise(centroid[#tN in text] + noise picked by blake2b(text)).

    Ingest registers the vectors of a batch up front (generated vectorised, with the very same
    formula but a per-batch generator), so `put_many` measures the store, not an embedder; any
    other text (the queries) is derived from its hash on the fly, cheaply and reproducibly.
    """

    def __init__(self, dim: int, seed: int) -> None:
        self.dimension = dim
        self.signature = f"bench-synthetic-v1/dim={dim}/seed={seed}"
        self.centroids = _centroids(seed, dim)
        self._registered: dict[str, np.ndarray] = {}
        self._noise_scale = np.float32(CLUSTER_SPREAD / np.sqrt(dim))
        # a fixed table of noise rows: derive() mixes two of them picked by the text's hash, which
        # keeps a query's embedding at a few microseconds (this benchmark measures the store)
        self._noise = np.random.default_rng([seed, 9]).standard_normal((4096, dim), dtype=np.float32) * (self._noise_scale / np.float32(np.sqrt(2)))

    def register(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self._registered.update(zip(texts, vectors))

    def derive(self, text: str) -> np.ndarray:
        h = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
        v = self._noise[h & 4095] + self._noise[(h >> 12) & 4095]
        topic = _topic_of(text)
        if topic is not None:
            v += self.centroids[topic]
        v /= np.linalg.norm(v)
        return v

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, t in enumerate(texts):
            v = self._registered.pop(t, None)
            out[i] = v if v is not None else self.derive(t)
        return out


# --------------------------------------------------------------------------------------------
# The synthetic enterprise world
# --------------------------------------------------------------------------------------------
def _zipf_counts(total: int, n: int, s: float, rng: np.random.Generator | None = None) -> np.ndarray:
    """`total` split over `n` bins with Zipf(s) weights (shuffled ranks when rng is given)."""
    w = 1.0 / np.arange(1, n + 1) ** s
    if rng is not None:
        rng.shuffle(w)
    raw = w / w.sum() * total
    counts = np.floor(raw).astype(np.int64)
    rest = total - counts.sum()
    if rest:
        counts[np.argsort(-(raw - counts), kind="stable")[:rest]] += 1
    return counts


@dataclass
class Tenant:
    tid: str
    size: int
    users: list[str]
    workspaces: list[str]
    depts: list[str]
    user_dept: np.ndarray
    ws_weight: np.ndarray
    topics: np.ndarray
    scopes: list[tuple[ScopeKey, int, str]] = field(default_factory=list)  # key, count, class


@dataclass
class World:
    tenants: list[Tenant]
    scope_keys: list[ScopeKey]
    scope_counts: np.ndarray
    scope_tenant: np.ndarray
    scope_class: list[str]


def build_world(total: int, n_tenants: int, seed: int, prefix: str) -> World:
    rng = np.random.default_rng([seed, 1, len(prefix)])
    sizes = _zipf_counts(total, n_tenants, 1.0)
    tenants: list[Tenant] = []
    keys: list[ScopeKey] = []
    counts: list[int] = []
    owner: list[int] = []
    classes: list[str] = []
    for ti, size in enumerate(sizes):
        tid = f"{prefix}{ti:03d}"
        n_users = max(4, int(size) // 40)
        n_ws = max(2, n_users // 8)
        n_dept = max(2, n_users // 20)
        users = [f"u{j:05d}" for j in range(n_users)]
        wss = [f"ws{j:04d}" for j in range(n_ws)]
        depts = [f"d{j:03d}" for j in range(n_dept)]
        dept_w = 1.0 / np.arange(1, n_dept + 1) ** 1.0
        user_dept = rng.choice(n_dept, size=n_users, p=dept_w / dept_w.sum())
        ws_w = 1.0 / np.arange(1, n_ws + 1) ** 1.0
        t = Tenant(tid, int(size), users, wss, depts, user_dept, ws_w / ws_w.sum(), rng.choice(N_TOPICS, TOPICS_PER_TENANT, replace=False))
        shares = np.array([c[1] for c in CLASSES])
        class_counts = np.floor(shares * size).astype(np.int64)
        class_counts[0] += int(size) - class_counts.sum()
        for (cname, _, _), ccount in zip(CLASSES, class_counts):
            if cname == "private":
                scope_keys = [ScopeKey.private(tid, u) for u in users]
            elif cname == "workspace":
                scope_keys = [ScopeKey.workspace(tid, w) for w in wss]
            elif cname == "department":
                scope_keys = [ScopeKey.department(tid, d) for d in depts]
            else:
                scope_keys = [ScopeKey.tenant(tid)]
            per_scope = _zipf_counts(int(ccount), len(scope_keys), 1.1 if cname != "private" else 0.8, rng if cname == "private" else None)
            for key, n in zip(scope_keys, per_scope):
                if n:
                    t.scopes.append((key, int(n), cname))
                    keys.append(key)
                    counts.append(int(n))
                    owner.append(ti)
                    classes.append(cname)
        tenants.append(t)
    return World(tenants, keys, np.asarray(counts, dtype=np.int64), np.asarray(owner, dtype=np.int64), classes)


def memory_batches(world: World, seed: int, salt: int, batch_size: int, embedder: BenchEmbedder, index_offset: int):
    """Yield lists of (scope, NewMemory, idempotency_key), vectors registered with the embedder."""
    rng = np.random.default_rng([seed, 2, salt])
    order = np.repeat(np.arange(len(world.scope_keys)), world.scope_counts)
    rng.shuffle(order)
    statuses = [s for s, _ in STATUS_MIX]
    status_p = np.array([p for _, p in STATUS_MIX])
    dim = embedder.dimension
    noise_scale = np.float32(CLUSTER_SPREAD / np.sqrt(dim))
    for b, start in enumerate(range(0, len(order), batch_size)):
        idx = order[start : start + batch_size]
        n = len(idx)
        brng = np.random.default_rng([seed, 3, salt, b])
        topic_pick = brng.integers(0, TOPICS_PER_TENANT, n) % (brng.integers(1, TOPICS_PER_TENANT + 1, n))  # skewed toward topic 0
        status_pick = brng.choice(len(statuses), size=n, p=status_p)
        kind_pick = brng.integers(0, 1 << 30, n)
        topics = np.array([world.tenants[world.scope_tenant[s]].topics[tp] for s, tp in zip(idx, topic_pick)])
        vecs = brng.standard_normal((n, dim), dtype=np.float32) * noise_scale
        vecs += embedder.centroids[topics]
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        items = []
        texts = []
        for j in range(n):
            s = int(idx[j])
            key = world.scope_keys[s]
            cls = world.scope_class[s]
            kinds = next(c[2] for c in CLASSES if c[0] == cls)
            kind = kinds[int(kind_pick[j]) % len(kinds)]
            gid = index_offset + start + j
            tenant = world.tenants[world.scope_tenant[s]]
            author = key.owner_id if cls == "private" else tenant.users[int(kind_pick[j]) % len(tenant.users)]
            text = f"{kind} m{gid} in {key}: synthetic enterprise memory about #t{int(topics[j])} ({cls}, note {int(kind_pick[j]) % 997})"
            texts.append(text)
            items.append(
                (
                    key,
                    NewMemory(
                        content=text,
                        kind=kind,
                        provenance=Provenance(author_user_id=author, author_agent_id=AGENT_ID),
                        status=statuses[int(status_pick[j])],
                        metadata={"source": "bench"},
                    ),
                    f"k{gid}",
                )
            )
        embedder.register(texts, vecs)
        yield items


@dataclass
class BenchIdentity:
    identity: object  # MemoryIdentity
    readable: tuple[ScopeKey, ...]  # the 4 non-empty scopes
    tenant: Tenant


def pick_identities(world: World, n: int, seed: int) -> list[BenchIdentity]:
    from identity.model import MemoryIdentity

    rng = np.random.default_rng([seed, 4])
    present = set(world.scope_keys)
    all_users = [(t, u) for t in world.tenants for u in range(len(t.users))]
    out: list[BenchIdentity] = []
    tries = 0
    while len(out) < n and tries < n * 100:
        tries += 1
        t, u = all_users[int(rng.integers(len(all_users)))]
        dept = t.depts[int(t.user_dept[u])]
        ws = t.workspaces[int(rng.choice(len(t.workspaces), p=t.ws_weight))]
        readable = (
            ScopeKey.private(t.tid, t.users[u]),
            ScopeKey.workspace(t.tid, ws),
            ScopeKey.department(t.tid, dept),
            ScopeKey.tenant(t.tid),
        )
        if not all(k in present for k in readable):
            continue  # want exactly 4 non-empty readable scopes
        ident = MemoryIdentity(
            tenant_id=t.tid, user_id=t.users[u], department_ids=frozenset({dept}), workspace_id=ws,
            agent_id=AGENT_ID, session_id=f"bench-s{len(out)}",
        )
        out.append(BenchIdentity(ident, readable, t))
    return out


# --------------------------------------------------------------------------------------------
# Measurement helpers
# --------------------------------------------------------------------------------------------
def vm_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def summary_us(samples: Sequence[int]) -> dict[str, float]:
    a = np.asarray(samples, dtype=np.float64) / 1e3
    return {"p50_us": round(float(np.median(a)), 1), "p95_us": round(float(np.percentile(a, 95)), 1), "mean_us": round(float(a.mean()), 1), "n": int(len(a))}


def machine_info() -> dict[str, object]:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(), "cpu_model": cpu, "python": platform.python_version(), "numpy": np.__version__,
        "platform": platform.platform(),
    }


# --------------------------------------------------------------------------------------------
# Phase 1: ingest (parent process)
# --------------------------------------------------------------------------------------------
async def ingest(data_dir: Path, world: World, args: argparse.Namespace, salt: int, index_offset: int) -> dict[str, object]:
    embedder = BenchEmbedder(args.dim, args.seed)
    backend = LocalBackend(data_dir, embedder=embedder)
    total = int(world.scope_counts.sum())
    spent = 0
    batches = 0
    done = 0
    t_wall = time.perf_counter_ns()
    try:
        for items in memory_batches(world, args.seed, salt, args.batch_size, embedder, index_offset):
            t0 = time.perf_counter_ns()
            await backend.put_many(items)
            spent += time.perf_counter_ns() - t0
            batches += 1
            done += len(items)
            if args.progress and batches % 20 == 0:
                print(f"  ingested {done:,}/{total:,} ({done / (spent / 1e9):,.0f}/s in put_many)", file=sys.stderr, flush=True)
    finally:
        await backend.aclose()
    wall = time.perf_counter_ns() - t_wall
    return {
        "memories": total, "batches": batches, "batch_size": args.batch_size,
        "put_many_seconds": round(spent / 1e9, 2), "wall_seconds_incl_generation": round(wall / 1e9, 2),
        "memories_per_second": round(total / (spent / 1e9), 1),
    }


# --------------------------------------------------------------------------------------------
# Phase 2: recall (fresh child process)
# --------------------------------------------------------------------------------------------
async def recall_phase(args: argparse.Namespace) -> dict[str, object]:
    from bridge.facade import MemoryBridge
    from bridge.operations import Recall
    from bridge.policy import Policy, PolicyConfig
    from bridge.recall.pipeline import STAGES, run_recall
    from bridge.state.sqlite import SqliteState
    from bridge.vocabulary import Purpose
    from identity.sessions import InMemorySessionRegistry

    load_start = os.getloadavg()  # other work on the machine: record it with the figures
    data_dir = Path(args.data_dir)
    base = min(args.memories, args.base_memories)
    world = build_world(base, args.tenants, args.seed, "t")
    idents = pick_identities(world, args.identities, args.seed)
    embedder = BenchEmbedder(args.dim, args.seed)
    backend = LocalBackend(data_dir / "store", embedder=embedder)
    state_dir = Path(tempfile.mkdtemp(prefix="bridge-state-", dir=data_dir))
    policy = Policy(PolicyConfig(include_global=False))
    # reinitialise: the corpus was ingested straight through the backend (put_many measures the
    # store), so a fresh bridge state has no audit history for it; binding it is an explicit act
    bridge = MemoryBridge(backend, SqliteState(state_dir / "bridge.sqlite3"), sessions=InMemorySessionRegistry(), policy=policy, reinitialise=True)
    runtime = bridge.runtime
    total_in_store = backend.count()

    # queries: spread evenly over identities, each about one of the identity's tenant topics
    rng = random.Random(args.seed)
    queries = []
    for j in range(args.queries):
        bi = idents[j % len(idents)]
        topic = int(bi.tenant.topics[rng.randrange(TOPICS_PER_TENANT)])
        text = f"what do we know about #t{topic}? question {j} from {bi.identity.user_id}"
        queries.append((bi, text, embedder.derive(text)))
    scope_sets = {id(bi): policy.readable_scopes(bi.identity, Purpose.CHAT) for bi in idents}
    for bi in idents:  # the ScopeSet is exactly the 4 readable scopes + the (empty) agent scope
        keys = set(scope_sets[id(bi)].keys)
        assert set(bi.readable) <= keys and len(keys) == 5, keys

    # -- resident memory: load every touched partition from a cold cache --------------------
    gc.collect()
    rss0 = vm_rss_bytes()
    probe = np.zeros(args.dim, dtype=np.float32)
    probe[0] = 1.0
    for bi in idents:
        backend.search_vector(scope_sets[id(bi)], probe, limit=10)
    gc.collect()
    rss1 = vm_rss_bytes()
    touched = sorted({k for bi in idents for k in scope_sets[id(bi)].keys}, key=str)
    db = backend._db  # read-only SQL for the independent ground truth and byte counts
    rows_touched = sum(int(db.execute("SELECT COUNT(*) FROM memories WHERE scope = ?", (str(k),)).fetchone()[0]) for k in touched)
    raw_bytes = rows_touched * args.dim * 4
    rss = {
        "partitions_touched": len(touched), "rows_touched": rows_touched, "raw_vector_bytes": raw_bytes,
        "rss_before_bytes": rss0, "rss_after_bytes": rss1, "rss_delta_bytes": rss1 - rss0,
        "rss_delta_over_raw": round((rss1 - rss0) / raw_bytes, 3) if raw_bytes else None,
        "resident_vector_bytes": backend.resident_vector_bytes,
        "resident_over_raw": round(backend.resident_vector_bytes / raw_bytes, 3) if raw_bytes else None,
    }

    # -- floor matrices and ground truth: straight from SQLite, independent of the partitions --
    floor: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    readable_sizes = []
    for bi in idents:
        marks = ",".join("?" * len(bi.readable))
        rows = db.execute(
            f"SELECT rowid, vector FROM memories WHERE status = 'active' AND scope IN ({marks})", [str(k) for k in bi.readable]
        ).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.ascontiguousarray(np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), args.dim).copy())
        floor[id(bi)] = (matrix, rowids)
        readable_sizes.append(len(rows))
    del rows

    k = 10

    def floor_top(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
        s = matrix @ q
        return np.argpartition(-s, k - 1)[:k] if len(s) > k else np.arange(len(s))

    # -- recall@10 (exact search restricted to the readable rows, float64 truth) ------------
    hits_total = 0
    strict_total = 0
    tie_ok_total = 0
    expected = 0
    for bi, text, q in queries:
        matrix, rowids = floor[id(bi)]
        truth_scores = matrix.astype(np.float64) @ q.astype(np.float64)
        order = np.argsort(-truth_scores, kind="stable")[:k]
        truth = set(rowids[order].tolist())
        got = backend.search_vector(scope_sets[id(bi)], q, limit=k)
        got_ids = [r for _, r, _ in got]
        strict_total += len(truth & set(got_ids))
        kth = truth_scores[order[-1]]
        score_of = dict(zip(rowids.tolist(), truth_scores.tolist()))
        tie_ok_total += sum(1 for r in got_ids if r in score_of and score_of[r] >= kth - 1e-6)
        expected += len(truth)
        hits_total += len(got_ids)
        assert all(key in bi.readable for key, _, _ in got), "a hit outside the readable scopes"

    # -- timing ---------------------------------------------------------------------------
    pc = time.perf_counter_ns
    # floor_1t: the same bare numpy with OpenBLAS held to one thread for the whole pass, as the
    # local backend scans (adapters/local/blas.py); the floor keeps the process's default threads
    samples: dict[str, list[int]] = {"floor": [], "floor_1t": [], "adapter_vector": [], "adapter_search": [], "pipeline": []}

    parts: dict[str, list[int]] = {"search_vector": [], "load_hits": []}
    stage_names = [name for name, _ in STAGES]
    # the `stages` path: what `MemoryBridge.recall` does, step by step, each step timed. Not a
    # second implementation: op construction and the session check are the calls `execute` makes,
    # and the stages are timed by the pipeline itself (`run_recall(..., timings=)`).
    steps: dict[str, list[int]] = {"op": [], "session": [], **{n: [] for n in stage_names}, "result": [], "run_recall": [], "stages_total": []}
    samples["stages"] = []
    cpu = time.thread_time_ns
    cpu_samples: dict[str, list[int]] = {path: [] for path in samples}

    async def one_pass(path: str, record: bool, order: list[int]) -> None:
        """One path over all queries: every path finds its data equally cold (the readable sets of
        all identities together exceed the CPU caches) and its code equally warm."""
        for qi in order:
            bi, text, q = queries[qi]
            scopes = scope_sets[id(bi)]
            c0 = cpu()
            if path in ("floor", "floor_1t"):
                matrix, _ = floor[id(bi)]
                t0 = pc()
                floor_top(matrix, q)
                t1 = pc()
            elif path == "adapter_vector":
                t0 = pc()
                ranked = backend.search_vector(scopes, q, limit=k)
                tm = pc()
                backend.load_hits(ranked)
                t1 = pc()
                if record:
                    parts["search_vector"].append(tm - t0)
                    parts["load_hits"].append(t1 - tm)
            elif path == "adapter_search":
                t0 = pc()
                await backend.search(SearchQuery(scopes, text, limit=k))
                t1 = pc()
            elif path == "pipeline":
                t0 = pc()
                await bridge.recall(bi.identity, text)
                t1 = pc()
            else:  # "stages"
                timings: dict[str, int] = {}
                t0 = pc()
                op = Recall(query=text, purpose=Purpose.CHAT, budget_tokens=None, kinds=None, include_scopes=(), manifest_id=None, allow_partial=False, min_score=None)  # what the sugar builds
                ta = pc()
                identity = runtime.sessions.continue_session(bi.identity)
                op.check(runtime.limits)
                tb = pc()
                await run_recall(runtime, identity, op, timings=timings)
                t1 = pc()
                if record:
                    steps["op"].append(ta - t0)
                    steps["session"].append(tb - ta)
                    for name, ns in timings.items():
                        steps[name].append(ns)
                    steps["run_recall"].append(t1 - tb)
                    steps["stages_total"].append(sum(timings[n] for n in stage_names))
            if record:
                samples[path].append(t1 - t0)
                # this thread's CPU time over the same call (setup of the stages path included): on
                # a loaded machine it leaves out the time spent waiting for a core
                cpu_samples[path].append(cpu() - c0)

    # A round = chunks of one query per identity (every identity once, shuffled); each path runs
    # over the whole chunk before the next path starts, in a rotating path order. So every path
    # finds its data last touched one chunk ago (cold: 60 readable sets exceed the CPU caches),
    # and a burst of load from other processes lands on all paths alike, not on one pass.
    n_id = len(idents)
    paths = list(samples)

    async def one_round(record: bool) -> None:
        for c in range((len(queries) + n_id - 1) // n_id):
            chunk = [qi for qi in range(c * n_id, min((c + 1) * n_id, len(queries)))]
            rng.shuffle(chunk)
            shift = rng.randrange(len(paths))
            for path in paths[shift:] + paths[:shift]:
                if path == "floor_1t":
                    from threadpoolctl import threadpool_limits

                    with threadpool_limits(limits=1, user_api="blas"):
                        await one_pass(path, record, chunk)
                else:
                    await one_pass(path, record, chunk)

    for _ in range(args.warmup_rounds):
        await one_round(False)
    for _ in range(args.rounds):
        await one_round(True)

    lat = {name: summary_us(v) for name, v in samples.items()}
    cpu_lat = {name: summary_us(v) for name, v in cpu_samples.items()}
    f50 = lat["floor"]["p50_us"]
    result = {
        "total_memories_in_store": total_in_store,
        "identities": len(idents),
        "queries": len(queries),
        "rounds": args.rounds,
        "readable_active_rows": {
            "min": int(min(readable_sizes)), "median": float(np.median(readable_sizes)), "max": int(max(readable_sizes)),
            "mean": round(float(np.mean(readable_sizes)), 1),
        },
        "latency": lat,
        "latency_breakdown": {name: summary_us(v) for name, v in parts.items()},
        # thread CPU time per call (BLAS worker threads of the default floor are not counted)
        "cpu_time": cpu_lat,
        "cpu_ratios": {
            "adapter_vector_over_floor_1t": round(cpu_lat["adapter_vector"]["p50_us"] / cpu_lat["floor_1t"]["p50_us"], 2),
            "pipeline_over_floor_1t": round(cpu_lat["pipeline"]["p50_us"] / cpu_lat["floor_1t"]["p50_us"], 2),
        },
        "pipeline_steps": {name: summary_us(v) for name, v in steps.items()},
        "stage_names": stage_names,
        "ratios": {
            "adapter_vector_p50_over_floor_p50": round(lat["adapter_vector"]["p50_us"] / f50, 2),
            "adapter_search_p50_over_floor_p50": round(lat["adapter_search"]["p50_us"] / f50, 2),
            "pipeline_p50_over_floor_p50": round(lat["pipeline"]["p50_us"] / f50, 2),
            # against the faster of the two floors in this run (the stricter ratio)
            "pipeline_p50_over_best_floor_p50": round(lat["pipeline"]["p50_us"] / min(f50, lat["floor_1t"]["p50_us"]), 2),
            "adapter_vector_p50_over_best_floor_p50": round(lat["adapter_vector"]["p50_us"] / min(f50, lat["floor_1t"]["p50_us"]), 2),
            "backend_search_stage_p50_over_floor_p50": round(summary_us(steps["search"])["p50_us"] / f50, 2),
        },
        "recall_at_10": round(strict_total / expected, 4) if expected else None,
        "recall_at_10_tie_tolerant": round(tie_ok_total / expected, 4) if expected else None,
        "resident_memory": rss,
        "load_average": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in os.getloadavg()]},
    }
    await bridge.aclose()
    shutil.rmtree(state_dir, ignore_errors=True)
    return result


def run_recall_child(args: argparse.Namespace, data_dir: Path, memories: int) -> dict[str, object]:
    out = data_dir / f"recall-{memories}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--phase", "recall", "--data-dir", str(data_dir), "--result-file", str(out),
           "--memories", str(memories)]
    for name in ("tenants", "dim", "queries", "identities", "rounds", "warmup_rounds", "seed", "base_memories"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    subprocess.run(cmd, check=True, cwd=ROOT)
    return json.loads(out.read_text())


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------
def table(report: dict[str, object]) -> str:
    lines = []
    for ing in report["ingest"]:
        lines.append(f"ingest  {ing['label']:<10} {ing['memories']:>9,} memories  {ing['memories_per_second']:>10,.0f} memories/s  (put_many, batches of {ing['batch_size']:,})")
    for run in report["runs"]:
        lat = run["latency"]
        rr = run["readable_active_rows"]
        lines.append("")
        lines.append(f"store of {run['total_memories_in_store']:,} memories; {run['identities']} identities x 4 readable scopes; "
                     f"readable active rows min/median/max {rr['min']:,}/{rr['median']:,.0f}/{rr['max']:,}; {run['queries']} queries x {run['rounds']} rounds")
        if run.get("load_average"):
            lines.append(f"load average (1/5/15 min) at start {run['load_average']['start']}, at end {run['load_average']['end']}")
        lines.append(f"  {'path':<48} {'p50 us':>9} {'p95 us':>9} {'p50/floor':>10} {'CPU p50':>9}")
        names = {
            "floor": "floor: numpy rows @ q + argpartition (top-10)",
            "floor_1t": "floor, OpenBLAS on one thread",
            "adapter_vector": "adapter: search_vector + load_hits (top-10)",
            "adapter_search": "adapter: search() incl. query embedding",
            "pipeline": "pipeline: MemoryBridge.recall (cand. 50)",
            "stages": "stages: the same, step by step, each timed",
        }
        f50 = lat["floor"]["p50_us"]
        for key, label in names.items():
            cpu_p50 = run.get("cpu_time", {}).get(key, {}).get("p50_us", float("nan"))
            lines.append(f"  {label:<48} {lat[key]['p50_us']:>9.1f} {lat[key]['p95_us']:>9.1f} {lat[key]['p50_us'] / f50:>9.2f}x {cpu_p50:>9.1f}")
        br = run["latency_breakdown"]
        lines.append(f"  {'  of which search_vector / load_hits':<48} {br['search_vector']['p50_us']:>9.1f} {br['load_hits']['p50_us']:>9.1f}   (p50, p50)")
        st = run["pipeline_steps"]
        lines.append(f"  {'pipeline step by step (the stages path, p50 us)':<48} {'p50 us':>9} {'p95 us':>9} {'p50/floor':>10}")
        step_names = [("op", "Recall(...) construction"), ("session", "session check + limits (execute)")]
        step_names += [(n, f"stage {n}") for n in run["stage_names"]]
        step_names += [("result", "context + RecallResult"), ("run_recall", "run_recall total"), ("stages_total", "sum of the stages")]
        for key, label in step_names:
            lines.append(f"  {'  ' + label:<48} {st[key]['p50_us']:>9.1f} {st[key]['p95_us']:>9.1f} {st[key]['p50_us'] / f50:>9.2f}x")
        ratios = run["ratios"]
        ok_a = "OK" if ratios["adapter_vector_p50_over_floor_p50"] <= 3 else "MISS"
        ok_p = "OK" if ratios["pipeline_p50_over_floor_p50"] <= 5 else "MISS"
        lines.append(f"  adapter/floor {ratios['adapter_vector_p50_over_floor_p50']:.2f}x (target <= 3x: {ok_a});  "
                     f"pipeline/floor {ratios['pipeline_p50_over_floor_p50']:.2f}x (target <= 5x: {ok_p})")
        lines.append(f"  against the faster floor: adapter {ratios['adapter_vector_p50_over_best_floor_p50']:.2f}x, pipeline {ratios['pipeline_p50_over_best_floor_p50']:.2f}x")
        if run.get("cpu_ratios"):
            cr = run["cpu_ratios"]
            lines.append(f"  thread CPU time p50 against the one-thread floor's: adapter {cr['adapter_vector_over_floor_1t']:.2f}x, pipeline {cr['pipeline_over_floor_1t']:.2f}x")
        lines.append(f"  recall@10 {run['recall_at_10']} (tie-tolerant {run['recall_at_10_tie_tolerant']}; target 1.0)")
        m = run["resident_memory"]
        lines.append(f"  resident: {m['partitions_touched']} partitions, {m['rows_touched']:,} rows, raw vectors {m['raw_vector_bytes'] / 2**20:.1f} MiB; "
                     f"RSS delta {m['rss_delta_bytes'] / 2**20:.1f} MiB = {m['rss_delta_over_raw']}x raw (target < 1.5x); "
                     f"resident_vector_bytes {m['resident_vector_bytes'] / 2**20:.1f} MiB = {m['resident_over_raw']}x")
    if report.get("scale_check"):
        sc = report["scale_check"]
        lines.append("")
        lines.append(f"scale check: total {sc['small_total']:,} -> {sc['large_total']:,} ({sc['total_growth']}x), same readable sets")
        for key, v in sc["p50_ratio_large_over_small"].items():
            lines.append(f"  {key:<16} p50 {sc['small_p50_us'][key]:>9.1f} -> {sc['large_p50_us'][key]:>9.1f} us  ({v:.2f}x)")
    return "\n".join(lines)


def scale_summary(small: dict, large: dict) -> dict[str, object]:
    keys = ("floor", "floor_1t", "adapter_vector", "adapter_search", "pipeline")
    return {
        "small_total": small["total_memories_in_store"], "large_total": large["total_memories_in_store"],
        "total_growth": round(large["total_memories_in_store"] / small["total_memories_in_store"], 2),
        "small_p50_us": {k: small["latency"][k]["p50_us"] for k in keys},
        "large_p50_us": {k: large["latency"][k]["p50_us"] for k in keys},
        "p50_ratio_large_over_small": {k: round(large["latency"][k]["p50_us"] / small["latency"][k]["p50_us"], 2) for k in keys},
    }


# --------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memories", type=int, default=200_000, help="total memories in the store")
    p.add_argument("--base-memories", type=int, default=200_000, help="memories of the benchmark tenants; the rest go to filler tenants")
    p.add_argument("--tenants", type=int, default=50)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--identities", type=int, default=60, help="distinct identities the queries are spread over")
    p.add_argument("--rounds", type=int, default=5, help="timed passes over all queries (interleaved paths)")
    p.add_argument("--warmup-rounds", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=5000)
    p.add_argument("--seed", type=int, default=20240603)
    p.add_argument("--scale-check", action="store_true", help="run 200k, grow the same store to 1M (other tenants), run again")
    p.add_argument("--scale-total", type=int, default=1_000_000)
    p.add_argument("--data-dir", help="where the store lives (default: a temp dir, removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the data directory")
    p.add_argument("--reuse", action="store_true",
                   help="measure on the store an earlier `--data-dir DIR --keep` run built with the same corpus arguments (no ingest; not with --scale-check)")
    p.add_argument("--out", default="bench-results/local.json")
    p.add_argument("--progress", action="store_true")
    p.add_argument("--phase", choices=("all", "recall"), default="all", help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.phase == "recall":
        result = asyncio.run(recall_phase(args))
        Path(args.result_file).write_text(json.dumps(result))
        return 0

    base = min(args.memories, args.base_memories)
    own_dir = args.data_dir is None
    data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="vb-local-bench-"))
    if args.reuse and (args.scale_check or not (data_dir / "store").exists()):
        print(f"--reuse needs a store at {data_dir / 'store'} built by an earlier --keep run, and no --scale-check", file=sys.stderr)
        return 2
    data_dir.mkdir(parents=True, exist_ok=True)
    if (data_dir / "store").exists() and not args.reuse:
        print(f"refusing to reuse existing store {data_dir / 'store'} (--reuse measures on it)", file=sys.stderr)
        return 2
    report: dict[str, object] = {
        "benchmark": "local_recall", "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "config": {k: v for k, v in vars(args).items() if k not in ("phase", "result_file")},
        "ingest": [], "runs": [],
    }
    targets = [args.memories] if not args.scale_check else [base, max(args.scale_total, base)]
    try:
        world = build_world(base, args.tenants, args.seed, "t")
        filler_tenants = args.tenants * 4
        have = targets[0] if args.reuse else 0  # a reused store holds what a --keep run of these arguments ingested
        for n, total in enumerate(targets):
            if have == 0:
                print(f"ingesting {base:,} memories over {args.tenants} tenants ...", file=sys.stderr, flush=True)
                ing = asyncio.run(ingest(data_dir / "store", world, args, salt=0, index_offset=0))
                ing["label"] = "base"
                report["ingest"].append(ing)
                have = base
            if total > have:
                extra = total - have
                print(f"ingesting {extra:,} filler memories over {filler_tenants} other tenants ...", file=sys.stderr, flush=True)
                filler = build_world(extra, filler_tenants, args.seed + n, f"f{n}x")
                ing = asyncio.run(ingest(data_dir / "store", filler, args, salt=1 + n, index_offset=have))
                ing["label"] = f"filler{n}"
                report["ingest"].append(ing)
                have = total
            print(f"measuring recall on {have:,} memories ...", file=sys.stderr, flush=True)
            report["runs"].append(run_recall_child(args, data_dir, have))
        if len(report["runs"]) == 2:
            report["scale_check"] = scale_summary(report["runs"][0], report["runs"][1])
    finally:
        if own_dir and not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(table(report))
    print(f"\nJSON written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
