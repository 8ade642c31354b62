#!/usr/bin/env python
"""Filtered recall against the peers a user would pick instead, in ONE run (issue 12, item 5).

    python -m contract_tests.postgres_server &          # or any PostgreSQL 16 + pgvector; prints its admin URL
    python benchmarks/filtered_recall.py --postgres-url postgresql://postgres:...@127.0.0.1:PORT/postgres
                                         [--memories 200000] [--queries 200] [--systems floor,local,postgres,faiss,...]
                                         [--keep-local-store DIR]   # local: ingest once, reuse on later runs

One workload — the enterprise world of `benchmarks/local_recall.py` (tenants and scopes of
Zipf-skewed sizes, ~2,650 scopes at 200k memories, clustered 384-d unit vectors, 95% active) —
and identities that each read exactly 4 of those scopes (own private, workspace, department,
tenant-shared). Every system answers the same queries: "the 10 best ACTIVE memories of exactly
these 4 scopes". Reported per system: p50/p95 latency, recall@10 against float64 brute force over
the permitted active rows, ingest rate, resident memory growth (in-process systems) or store size
(PostgreSQL), and the ratio of its p50 to the bandwidth floor measured in the same process; for
the PostgreSQL systems also the CPU a query of the client (this process) and of the server (its
processes for the benchmark's database, from /proc, when the server runs on this machine).

Systems (peers, in `benchmarks/filtered_recall_peers.py`, are optional `[bench]` extras; a missing one
is reported as skipped, not faked):
  floor      numpy `rows @ q` + argpartition over the permitted active rows, pre-gathered contiguous, on
             one BLAS thread as local scans (OpenBLAS's two threads waited on each other under load: p50 5.5 ms)
  local      LocalBackend.search_vector + load_hits (SQLite + numpy partitions per scope; the hits' records decoded)
  local-warm     local on a store warmed before its first query (LocalBackend.warm, as `serve` with
                 VIKING_BRIDGE_SERVICE_WARM_MB): the partition loads counted in its ingest, as the peers' index builds
  local-rowids   LocalBackend.search_vector alone on a warmed store: (scope, rowid, score), no records, as the peers answer
  postgres   PostgresBackend.search_vector (WHERE + SET LOCAL + RLS, exact top-k), runtime role
  postgres-clustered   the same after `CLUSTER memories USING memories_by_scope` (an operator step)
  postgres-ann         the same with opt-in partial HNSW indexes on scopes of >= --ann-min-rows rows
  postgres-search      PostgresBackend.search (both channels, fused) with the text --search-text (plus one
                       word of its own per query), the vector channel's recall@10 reported as overlap
  postgres-search-vector   the same search() with the lexical channel off (what the lexical channel costs)
  faiss      IndexFlatIP over everything + IDSelectorBatch of the permitted active rows
  usearch    one HNSW index per scope (active rows), the 4 results merged
  lancedb    one table with a scalar index on scope, `where(scope IN (...) AND status = 'active', prefilter=True)`
  chromadb   one collection (ip), `where={"$and": [{"scope": {"$in": [...]}}, {"status": "active"}]}`
  langgraph  InMemoryStore, one namespace per scope, 4 searches merged (filter status=active)

The PostgreSQL server is yours (`--postgres-url`, a role that may create databases and roles);
the benchmark creates a throw-away database with an owner and a runtime role (NOBYPASSRLS) and
drops both afterwards. Timing belongs here, not in unit tests; one run on a shared 2-core machine
is noisy, so compare the ratios of one run, not absolute numbers across runs.

How a run is timed: every system is set up first (ingest or index build, then `--warmup`
untimed queries); then `--rounds` timed passes, each system over every query once a round, the
systems' order rotated from round to round, so a burst of another process's load falls on all of
them rather than on whichever happened to run then. p50 / p95 are over every pass's samples (each
pass's own p50 is printed beside them). `local` answers a store opened cold: it is reopened (and
warmed up like at setup) before each pass but the first, so every pass holds the same first
touches of scopes and more passes never make it warmer.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import secrets
import shutil
import sys
import tempfile
import time

from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from adapters.base import Status  # noqa: E402
from adapters.local.blas import one_blas_thread  # noqa: E402
from adapters.scopes import ScopeSet  # noqa: E402
from benchmarks.filtered_recall_peers import K, PEERS, Corpus, Query, System  # noqa: E402
from benchmarks.local_recall import BenchEmbedder, build_world, machine_info, memory_batches, pick_identities, vm_rss_bytes  # noqa: E402



class FixedEmbedder:
    """The corpus vectors by text (for every system alike); any other text derived like a query."""

    def __init__(self, bench: BenchEmbedder) -> None:
        self.bench, self.dimension, self.signature = bench, bench.dimension, bench.signature
        self.table: dict[str, np.ndarray] = {}

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] if t in self.table else self.bench.derive(t) for t in texts]).astype(np.float32)


def build(args: argparse.Namespace) -> tuple[Corpus, list[Query], FixedEmbedder]:
    world = build_world(args.memories, args.tenants, args.seed, "t")
    bench = BenchEmbedder(args.dim, args.seed)
    embedder = FixedEmbedder(bench)
    index = {k: i for i, k in enumerate(world.scope_keys)}
    batches, vecs, scope_of, active, texts = [], [], [], [], []
    for batch in memory_batches(world, args.seed, 0, 5000, bench, 0):
        v = asyncio.run(bench.embed([m.content for _, m, _ in batch]))
        batches.append(batch)
        vecs.append(v)
        for (key, memory, _), row in zip(batch, v):
            embedder.table[memory.content] = row
            scope_of.append(index[key])
            active.append(memory.status is Status.ACTIVE)
            texts.append(memory.content)
    corpus = Corpus(batches, np.concatenate(vecs), np.asarray(scope_of), np.asarray(active), world.scope_keys, texts)
    for s in range(len(world.scope_keys)):
        corpus.rows_of_scope[s] = np.flatnonzero((corpus.scope_of == s) & corpus.active)
    rng = np.random.default_rng([args.seed, 12])
    queries = []
    idents = pick_identities(world, args.identities, args.seed)
    for n in range(args.queries):
        who = idents[n % len(idents)]
        topic = int(who.tenant.topics[int(rng.integers(0, len(who.tenant.topics)))])
        vector = bench.derive(f"what do we know about #t{topic} (query {n})")
        rows = np.concatenate([corpus.rows_of_scope[index[k]] for k in who.readable])
        scores = corpus.vectors[rows].astype(np.float64) @ vector.astype(np.float64)
        truth = set(rows[np.argsort(-scores, kind="stable")[:K]].tolist())
        queries.append(Query(who.readable, vector, truth, rows))
    return corpus, queries, embedder


# --------------------------------------------------------------------------------------------- systems (the peers: filtered_recall_peers.py)
class Floor(System):
    name = "floor"

    def ingest(self, corpus: Corpus) -> None:
        self.gathered: dict[int, np.ndarray] = {}
        self.corpus = corpus

    def prepare(self, queries: list[Query]) -> None:
        for q in queries:
            self.gathered.setdefault(id(q.rows), np.ascontiguousarray(self.corpus.vectors[q.rows]))

    def search(self, q: Query) -> list[int]:
        matrix = self.gathered[id(q.rows)]
        with one_blas_thread(matrix.size):  # as the local backend scans; two threads wait on each other under load
            scores = matrix @ q.vector
        top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
        return q.rows[top[np.argsort(-scores[top])]].tolist()


class AsyncBackendSystem(System):
    """Shared by the two bridge backends: put_many batches, search_vector, ids mapped to rows."""

    def __init__(self, embedder: FixedEmbedder) -> None:
        self.embedder = embedder
        self.loop = asyncio.new_event_loop()
        self.row_of: dict[str, int] = {}

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def ingest(self, corpus: Corpus) -> None:
        row = 0
        for batch in corpus.batches:
            for start in range(0, len(batch), self.batch_size):
                for stored in self.run(self.backend.put_many(batch[start:start + self.batch_size])):
                    self.row_of[stored.id] = row
                    row += 1

    def search(self, q: Query) -> list[int]:
        found = self.run(self.search_ids(ScopeSet.of(*q.scopes), q.vector))
        return [self.row_of[i] for i in found]


class LocalSystem(AsyncBackendSystem):
    name = "local"
    batch_size = 5000

    def __init__(self, embedder: FixedEmbedder, keep: Path | None = None) -> None:
        from adapters.local import LocalBackend

        super().__init__(embedder)
        self.keep = keep  # a kept store: ingested once, reused by later runs on the same corpus (profiling)
        self.home = keep if keep is not None else Path(tempfile.mkdtemp(prefix="vb-bench-local-"))
        self.reused = keep is not None and (keep / "store").exists()
        self.backend = LocalBackend(self.home / "store", embedder=embedder)  # type: ignore[arg-type]

    def ingest(self, corpus: Corpus) -> None:
        if not self.reused:
            super().ingest(corpus)
            return
        import sqlite3

        from adapters.local.schema import db_path

        row_by_text = {t: i for i, t in enumerate(corpus.texts)}  # the corpus texts are unique (they name their row)
        db = db_path(self.home / "store")
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            self.row_of = {i: row_by_text[t] for i, t in conn.execute("SELECT id, content FROM memories")}
        if len(self.row_of) != len(corpus.texts):
            raise SystemExit(f"the kept store {self.home} holds {len(self.row_of)} memories, not this corpus's {len(corpus.texts)}")

    def partition_loads(self) -> int:
        return sum(self.backend.partition_loads.values())

    def reopen(self) -> None:
        """The store opened afresh (cold partitions), as at the first pass: every pass of this
        system then holds the same first touches."""
        from adapters.local import LocalBackend

        self.run(self.backend.aclose())
        self.backend = LocalBackend(self.home / "store", embedder=self.embedder)  # type: ignore[arg-type]

    def search(self, q: Query) -> list[int]:
        # search_vector and load_hits are synchronous: called directly, as the peers are, not
        # through an event loop turn per query (the PostgreSQL system needs one; this does not)
        ranked = self.backend.search_vector(ScopeSet.of(*q.scopes), q.vector, limit=K)
        return [self.row_of[h.memory.id] for h in self.backend.load_hits(ranked)]

    def close(self) -> None:
        self.run(self.backend.aclose())
        if self.keep is None:
            shutil.rmtree(self.home, ignore_errors=True)


class LocalWarmSystem(LocalSystem):
    """`local` on a store warmed before its first query (`LocalBackend.warm`, what `serve` does
    with VIKING_BRIDGE_SERVICE_WARM_MB): the partition loads go into its ingest time, as the
    peers' index builds go into theirs, and no query first-touches a scope."""

    name = "local, warmed at start"
    reopen = None  # stays warm: its partitions were loaded before its first query, as a peer's index is built

    def ingest(self, corpus: Corpus) -> None:
        super().ingest(corpus)
        self.backend.warm()


class LocalRowidsSystem(LocalWarmSystem):
    """`search_vector` alone, as the peers answer: row numbers, no records read or decoded
    (`local` adds `load_hits`, which a caller needs for the memories themselves), on a store
    warmed at start, as the peers' indexes are all built before their first query."""

    name = "local search_vector only, warmed"

    def ingest(self, corpus: Corpus) -> None:
        import sqlite3

        from adapters.local.schema import db_path

        super().ingest(corpus)
        with sqlite3.connect(f"file:{db_path(self.home / 'store')}?mode=ro", uri=True) as conn:
            self.row_of_rowid = {rowid: self.row_of[i] for rowid, i in conn.execute("SELECT rowid, id FROM memories")}

    def search(self, q: Query) -> list[int]:
        return [self.row_of_rowid[rowid] for _, rowid, _ in self.backend.search_vector(ScopeSet.of(*q.scopes), q.vector, limit=K)]


class PostgresSystem(AsyncBackendSystem):
    name = "postgres"
    in_process = False
    batch_size = 1000

    def __init__(self, embedder: FixedEmbedder, admin_url: str, *, clustered: bool = False, ann_min_rows: int | None = None,
                 search_text: str | None = None, lexical: bool = True) -> None:
        import psycopg

        from adapters.postgres import PostgresBackend

        super().__init__(embedder)
        self.clustered, self.ann_min_rows = clustered, ann_min_rows
        if clustered:
            self.name = "postgres (CLUSTERed by scope)"
        if ann_min_rows is not None:
            self.name = f"postgres + HNSW on scopes >= {ann_min_rows} rows"
        self.search_text, self.asked = search_text, 0
        if search_text is not None:
            self.name = "postgres search() " + ("both channels" if lexical else "vector channel only")
        self.admin_url, self.tag = admin_url, secrets.token_hex(4)
        self.db, self.owner, self.app = f"vb_bench_{self.tag}", f"vb_bench_owner_{self.tag}", f"vb_bench_app_{self.tag}"
        pw = secrets.token_hex(12)
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE ROLE "{self.owner}" LOGIN PASSWORD \'{pw}\' NOSUPERUSER NOBYPASSRLS')
            conn.execute(f'CREATE ROLE "{self.app}" LOGIN PASSWORD \'{pw}\' NOSUPERUSER NOBYPASSRLS NOINHERIT')
            conn.execute(f'CREATE DATABASE "{self.db}" OWNER "{self.owner}"')
            conn.execute(f'GRANT CONNECT ON DATABASE "{self.db}" TO "{self.app}"')
        with psycopg.connect(self._url(admin_url, None, None), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        self.backend = PostgresBackend(self._url(admin_url, self.app, pw), migrate_url=self._url(admin_url, self.owner, pw),
                                       embedder=embedder, pool_size=2)  # type: ignore[arg-type]
        self.backend.lexical_channel = lexical
        self.run(self.backend.open())

    def _url(self, url: str, user: str | None, password: str | None) -> str:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(url)
        netloc = parts.netloc if user is None else f"{user}:{password}@{parts.hostname}:{parts.port}"
        return urlunsplit((parts.scheme, netloc, "/" + self.db, parts.query, ""))

    def ingest(self, corpus: Corpus) -> None:
        super().ingest(corpus)
        import psycopg

        with psycopg.connect(self._url(self.admin_url, None, None), autocommit=True) as conn:
            # the steady state: what autovacuum does by itself within a minute or so of a bulk load
            # (migration 5 asks it to visit after 2% new rows), so the index-only scan of the
            # covering index need not visit the heap; measured here rather than waited for
            tables = ["viking_bridge.memories"]
            if conn.execute("SELECT to_regclass('viking_bridge.memory_postings')").fetchone() != (None,):
                tables.append("viking_bridge.memory_postings")
            for table in tables:
                settle(conn, table)
        if self.clustered:  # an operator's maintenance step: each scope's rows become contiguous on disk
            import psycopg

            with psycopg.connect(self._url(self.admin_url, None, None), autocommit=True) as conn:
                conn.execute("CLUSTER viking_bridge.memories USING memories_by_scope")
                conn.execute("ANALYZE viking_bridge.memories")
        if self.ann_min_rows is not None:  # opt-in approximate search for the large scopes only
            counts = np.bincount(corpus.scope_of, minlength=len(corpus.keys))
            big = [corpus.keys[s] for s in np.flatnonzero(counts >= self.ann_min_rows).tolist()]
            for key in big:
                self.run(self.backend.create_ann_index(key))
            with __import__("psycopg").connect(self._url(self.admin_url, None, None), autocommit=True) as conn:
                conn.execute("ANALYZE viking_bridge.memories")
            print(f"  HNSW partial indexes on {len(big)} scopes of >= {self.ann_min_rows} rows", flush=True)

    async def search_ids(self, scopes: ScopeSet, vector: np.ndarray) -> list[str]:
        if self.search_text is None:
            return [h.memory.id for h in await self.backend.search_vector(scopes, vector, limit=K)]
        from adapters.base import SearchQuery

        self.asked += 1
        text = f"{self.search_text} zq{self.asked}"  # a word no memory holds: the text's vector is the query's
        self.embedder.table[text] = vector
        return [h.memory.id for h in (await self.backend.search(SearchQuery(scopes, text, limit=K))).hits]

    def server_cpu_s(self) -> float | None:
        """CPU seconds (user + system) the server's processes of this benchmark's database have
        used so far, read from /proc: the server's share of a search, apart from the client's
        (a wall time mixes both with the machine's load). None when the server is not on this
        machine or /proc cannot be read."""
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            pids = [pid for (pid,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.db,)).fetchall()]
        total = 0.0
        try:
            for pid in pids:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None
        return total if pids else None

    def size_bytes(self) -> int | None:
        import psycopg

        with psycopg.connect(self._url(self.admin_url, None, None)) as conn:
            conn.execute("ANALYZE viking_bridge.memories")
            return int(conn.execute("SELECT pg_total_relation_size('viking_bridge.memories')").fetchone()[0])  # type: ignore[index]

    def explain(self, q: Query) -> str:
        import psycopg

        from adapters.postgres.locality import INDEXED_SCOPE

        with psycopg.connect(self._url(self.admin_url, None, None)) as conn:
            conn.execute("SET search_path TO viking_bridge, public")
            scopes = [str(k) for k in q.scopes]
            conn.execute("SET ROLE " + f'"{self.app}"')
            conn.execute("SELECT set_config('viking_bridge.scopes', %s, true)", (chr(31).join(scopes),))
            vec = "[" + ",".join(f"{x:.6f}" for x in q.vector.tolist()) + "]"
            conn.execute("SET LOCAL enable_bitmapscan = off")  # as PostgresBackend.search_vector does
            rows = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS) SELECT id, -(embedding <#> %s::vector) FROM memories WHERE scope = ANY(%s) AND status = 'active'"
                f" AND {INDEXED_SCOPE} ORDER BY embedding <#> %s::vector LIMIT 10", (vec, scopes, vec)).fetchall()
            return "\n".join(r[0] for r in rows)

    def close(self) -> None:
        import psycopg

        self.run(self.backend.aclose())
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{self.app}"')
            conn.execute(f'DROP ROLE IF EXISTS "{self.owner}"')


def settle(conn: Any, table: str, tries: int = 20) -> None:
    """VACUUM ANALYZE `table` until the visibility map marks every page all-visible (the steady
    state autovacuum reaches). Once is not always enough right after a bulk load (seen at 50k on
    2026-12-03: 5,250 of 12,500 heap pages of `memories` and 3,197 of 7,611 of `memory_postings`
    left unmarked, probably a concurrent autovacuum holding the horizon back; 433 heap fetches a
    query), and the figures would then measure the heap visits instead of the search."""
    for _ in range(tries):
        conn.execute(f"VACUUM ANALYZE {table}")
        pages, visible = conn.execute("SELECT relpages, relallvisible FROM pg_class WHERE oid = %s::regclass", (table,)).fetchone()
        if visible >= pages:
            return
        time.sleep(0.5)
    print(f"  {table}: {visible} of {pages} pages all-visible after {tries} VACUUMs", flush=True)


# --------------------------------------------------------------------------------------------- measure
class Measured:
    """One system's setup figures and the samples of its timed passes (every round's)."""

    def __init__(self, system: System, ingest_s: float, resident_mb: float | None) -> None:
        self.system, self.ingest_s, self.resident_mb = system, ingest_s, resident_mb
        self.samples: list[int] = []
        self.thread_cpu: list[int] = []
        self.process_cpu: list[int] = []
        self.first_touch: list[bool] = []
        self.recalls: list[float] = []
        self.pass_p50_ms: list[float] = []
        self.client_cpu_s = 0.0
        self.server_cpu_s: float | None = 0.0 if getattr(system, "server_cpu_s", None) else None


def set_up(system: System, corpus: Corpus, queries: list[Query], warmup: int) -> Measured:
    """Ingest (the store or index build), then the warm-up queries, untimed."""
    gc.collect()
    rss0 = vm_rss_bytes()
    t0 = time.perf_counter()
    system.ingest(corpus)
    ingest_s = time.perf_counter() - t0
    if isinstance(system, Floor):
        system.prepare(queries)
    warm_up(system, queries, warmup)
    gc.collect()
    return Measured(system, ingest_s, (vm_rss_bytes() - rss0) / 2**20 if system.in_process else None)


def warm_up(system: System, queries: list[Query], warmup: int) -> None:
    for q in queries[:warmup]:
        system.search(q)


def timed_pass(m: Measured, queries: list[Query], warmup: int, first: bool) -> None:
    """Every query once, timed. A system that answers a cold store (`local`) is opened afresh
    before each pass but the first, and warmed up as in its setup, so every pass holds the same
    first touches: more passes give more samples of the same thing, never a warmer store."""
    system = m.system
    reopen = getattr(system, "reopen", None)
    if not first and reopen is not None:
        reopen()
        warm_up(system, queries, warmup)
    loads = getattr(system, "partition_loads", None)  # local: a query that loads a partition is a scope's first touch
    server_cpu = getattr(system, "server_cpu_s", None)  # postgres: the server's CPU, apart from the client's
    server0, client0 = server_cpu() if server_cpu else None, time.process_time()
    samples = []
    for q in queries:
        before = loads() if loads else 0
        start, thread0, process0 = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
        found = system.search(q)
        samples.append(time.perf_counter_ns() - start)
        m.thread_cpu.append(time.thread_time_ns() - thread0)
        m.process_cpu.append(time.process_time_ns() - process0)
        m.first_touch.append(loads is not None and loads() > before)
        m.recalls.append(len(set(found) & q.truth) / max(1, min(K, len(q.truth))))
    m.client_cpu_s += time.process_time() - client0
    server1 = server_cpu() if server_cpu else None
    if m.server_cpu_s is not None:
        m.server_cpu_s = None if server0 is None or server1 is None else m.server_cpu_s + (server1 - server0)
    m.samples += samples
    m.pass_p50_ms.append(round(float(np.percentile(samples, 50)) / 1e6, 4))


def summary(m: Measured, corpus: Corpus) -> dict[str, Any]:
    system = m.system
    ms = np.asarray(m.samples) / 1e6
    cold = np.asarray(m.first_touch, dtype=bool)
    split: dict[str, Any] = {}
    if getattr(system, "partition_loads", None) is not None and cold.any() and not cold.all():
        split = {"first_touch_queries": int(cold.sum()), "warm_p50_ms": float(np.percentile(ms[~cold], 50)), "warm_p95_ms": float(np.percentile(ms[~cold], 95)),
                 "first_touch_p50_ms": float(np.percentile(ms[cold], 50)), "first_touch_p95_ms": float(np.percentile(ms[cold], 95))}
        tcpu = np.asarray(m.thread_cpu) / 1e6
        split |= {"first_touch_thread_cpu_p50_ms": float(np.percentile(tcpu[cold], 50)), "first_touch_thread_cpu_p95_ms": float(np.percentile(tcpu[cold], 95)),
                  "warm_thread_cpu_p50_ms": float(np.percentile(tcpu[~cold], 50)), "warm_thread_cpu_p95_ms": float(np.percentile(tcpu[~cold], 95))}
    if m.server_cpu_s is not None:  # CPU a query, every thread of this process / the server's processes
        split |= {"client_cpu_ms": 1e3 * m.client_cpu_s / len(ms), "server_cpu_ms": 1e3 * m.server_cpu_s / len(ms)}
    # CPU a query (a shared machine's load moves wall time; CPU much less): this thread's, and
    # the whole process's (a library's own threads, BLAS's, counted too)
    cpu = {f"{what}_cpu_{pct}_ms": float(np.percentile(np.asarray(v) / 1e6, pct)) for what, v in (("thread", m.thread_cpu), ("process", m.process_cpu)) for pct in (50, 95)}
    return split | cpu | {
        "system": system.name, "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
        "recall_at_10": float(np.mean(m.recalls)), "passes": len(m.pass_p50_ms), "pass_p50_ms": m.pass_p50_ms,
        "ingest_rows_per_s": (len(corpus.vectors) / m.ingest_s) if m.ingest_s > 0 and not isinstance(system, Floor) and not getattr(system, "reused", False) else None,
        "resident_mb": m.resident_mb, "store_mb": (b / 2**20) if (b := system.size_bytes()) else None,
    }


def make_system(name: str, args: argparse.Namespace, embedder: FixedEmbedder) -> System | None:
    """The system called `name` (None: a PostgreSQL one without --postgres-url)."""
    if name == "floor":
        return Floor()
    if name == "local":
        return LocalSystem(embedder, args.keep_local_store)
    if name == "local-warm":
        return LocalWarmSystem(embedder, args.keep_local_store)
    if name == "local-rowids":
        return LocalRowidsSystem(embedder, args.keep_local_store)
    if name in ("postgres", "postgres-clustered", "postgres-ann", "postgres-search", "postgres-search-vector"):
        if not args.postgres_url:
            return None
        return PostgresSystem(embedder, args.postgres_url, clustered=name == "postgres-clustered",
                              ann_min_rows=args.ann_min_rows if name == "postgres-ann" else None,
                              search_text=args.search_text if name.startswith("postgres-search") else None,
                              lexical=name == "postgres-search")
    return PEERS[name]()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memories", type=int, default=200_000)
    p.add_argument("--tenants", type=int, default=50)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--identities", type=int, default=60)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3,
                   help="timed passes of every system over the queries, systems in a rotated order each round")
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--systems", default="floor,local,postgres,postgres-clustered,postgres-ann,faiss,usearch,lancedb,chromadb,langgraph")
    p.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL 16 + pgvector (python -m contract_tests.postgres_server)")
    p.add_argument("--explain", action="store_true", help="print PostgreSQL's plan for one query")
    p.add_argument("--ann-min-rows", type=int, default=1000, help="postgres-ann: scopes with at least this many rows get a partial HNSW index")
    p.add_argument("--search-text", default="what do we know about this note in the synthetic enterprise memory",
                   help="postgres-search: the question's words (common words of the corpus by default)")
    p.add_argument("--keep-local-store", type=Path, default=None, metavar="DIR",
                   help="local: ingest into DIR once and keep it; a later run with the same corpus arguments reuses it"
                        " (its ingest rate is then not measured)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    corpus, queries, embedder = build(args)
    scopes = len(corpus.keys)
    print(f"corpus: {len(corpus.vectors)} memories in {scopes} scopes, {args.dim}-d; {len(queries)} queries over 4 scopes each"
          f" (permitted active rows per query: median {int(np.median([len(q.rows) for q in queries]))}); built in {time.perf_counter() - t0:.1f}s", flush=True)
    measured: list[Measured | dict[str, Any]] = []  # in --systems order; a dict: skipped
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    for name in names:
        try:
            system = make_system(name, args, embedder)
            if system is None:
                measured.append({"system": name, "skipped": "no --postgres-url"})
                continue
            measured.append(set_up(system, corpus, queries, args.warmup))
            if name.startswith("postgres") and args.explain:
                print(system.explain(queries[0]))  # type: ignore[attr-defined]
        except ImportError as exc:
            measured.append({"system": name, "skipped": f"not installed ({exc.name}); pip install -e '.[bench]'"})
    running = [m for m in measured if isinstance(m, Measured)]
    for round_ in range(args.rounds):  # every system once a round, the order rotated: they share the machine's moods
        shift = round_ % max(1, len(running))
        for m in running[shift:] + running[:shift]:
            timed_pass(m, queries, args.warmup, first=round_ == 0)
    results: list[dict[str, Any]] = []
    for key, m in zip(names, measured):
        row = {"key": key, **summary(m, corpus)} if isinstance(m, Measured) else {"key": key, **m}  # key: its --systems name
        if isinstance(m, Measured):
            m.system.close()
        results.append(row)
        print(json.dumps(row), flush=True)
    floor = next((r["p50_ms"] for r in results if r.get("system") == "floor" and "p50_ms" in r), None)
    print(f"\n{'system':40} {'p50 ms':>8} {'p95 ms':>8} {'x floor':>8} {'recall@10':>9} {'ingest/s':>9} {'RSS MB':>7} {'store MB':>8}")
    for r in results:
        if "skipped" in r:
            print(f"{r['system']:40} skipped: {r['skipped']}")
            continue
        ratio = r["p50_ms"] / floor if floor else float("nan")
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"  # noqa: E731
        print(f"{r['system']:40} {r['p50_ms']:8.3f} {r['p95_ms']:8.3f} {ratio:8.1f} {r['recall_at_10']:9.3f} {fmt(r['ingest_rows_per_s'], '9.0f')}"
              f" {fmt(r['resident_mb'], '7.0f')} {fmt(r['store_mb'], '8.0f')}")
        print(f"{'  CPU p50 / p95 ms: thread':40} {r['thread_cpu_50_ms']:8.3f} {r['thread_cpu_95_ms']:8.3f}   process {r['process_cpu_50_ms']:.3f} / {r['process_cpu_95_ms']:.3f}")
        print(f"{'  p50 ms of each pass':40} " + " / ".join(f"{v:.3f}" for v in r["pass_p50_ms"]))
        if "server_cpu_ms" in r:
            print(f"{'  CPU a query: client / server ms':40} {r['client_cpu_ms']:8.3f} {r['server_cpu_ms']:8.3f}")
        if "first_touch_queries" in r:
            print(f"{'  of which first touch of a scope':40} {r['first_touch_p50_ms']:8.3f} {r['first_touch_p95_ms']:8.3f} ({r['first_touch_queries']} queries);"
                  f" the others {r['warm_p50_ms']:.3f} / {r['warm_p95_ms']:.3f}")
            print(f"{'    thread CPU p50 / p95: first touch':40} {r['first_touch_thread_cpu_p50_ms']:8.3f} {r['first_touch_thread_cpu_p95_ms']:8.3f};"
                  f" the others {r['warm_thread_cpu_p50_ms']:.3f} / {r['warm_thread_cpu_p95_ms']:.3f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"machine": machine_info(), "args": vars(args) | {"out": str(args.out)}, "results": results}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
