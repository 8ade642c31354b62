"""The peers of `benchmarks/filtered_recall.py` — the systems a user would pick instead — and the
types every system shares (`Corpus`, `Query`, `System`). Each peer is built the way its own docs
recommend for filtered search; an uninstalled peer raises ImportError and is reported skipped.
Measures only; never imported by the library or the tests.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from adapters.scopes import ScopeKey

__all__ = ["K", "Corpus", "Query", "System", "PEERS"]

K = 10

@dataclass
class Corpus:
    batches: list[list[tuple[ScopeKey, Any, str]]]
    vectors: np.ndarray  # (n, dim) float32, row i = i-th item in batch order
    scope_of: np.ndarray  # row -> index into keys
    active: np.ndarray  # row -> bool
    keys: list[ScopeKey]
    texts: list[str]
    rows_of_scope: dict[int, np.ndarray] = field(default_factory=dict)


@dataclass
class Query:
    scopes: tuple[ScopeKey, ...]
    vector: np.ndarray
    truth: set[int]
    rows: np.ndarray  # permitted active rows



class System:
    name = "?"
    in_process = True

    def ingest(self, corpus: Corpus) -> None: ...

    def search(self, q: Query) -> list[int]: ...  # row numbers, best first

    def size_bytes(self) -> int | None:
        return None

    def close(self) -> None: ...


class FaissSystem(System):
    name = "faiss flat + selector"

    def ingest(self, corpus: Corpus) -> None:
        import faiss

        self.faiss = faiss
        self.index = faiss.IndexFlatIP(corpus.vectors.shape[1])
        self.index.add(corpus.vectors)

    def search(self, q: Query) -> list[int]:
        params = self.faiss.SearchParameters(sel=self.faiss.IDSelectorBatch(q.rows.astype(np.int64)))
        _, ids = self.index.search(q.vector[None, :], K, params=params)
        return [int(i) for i in ids[0] if i >= 0]


class UsearchSystem(System):
    name = "usearch per scope"

    def ingest(self, corpus: Corpus) -> None:
        from usearch.index import Index

        self.indexes: dict[ScopeKey, Any] = {}
        for s, rows in corpus.rows_of_scope.items():
            if len(rows):
                index = Index(ndim=corpus.vectors.shape[1], metric="ip", dtype="f32")
                index.add(rows.astype(np.uint64), corpus.vectors[rows])
                self.indexes[corpus.keys[s]] = index

    def search(self, q: Query) -> list[int]:
        found: list[tuple[float, int]] = []
        for key in q.scopes:
            index = self.indexes.get(key)
            if index is not None:
                m = index.search(q.vector, K)
                found += list(zip(m.distances.tolist(), m.keys.tolist()))
        return [int(k) for _, k in sorted(found)[:K]]


class LanceSystem(System):
    name = "lancedb prefilter"

    def ingest(self, corpus: Corpus) -> None:
        import lancedb
        import pyarrow as pa

        self.home = tempfile.mkdtemp(prefix="vb-bench-lance-")
        dim = corpus.vectors.shape[1]
        table = pa.table({
            "row": pa.array(np.arange(len(corpus.vectors))),
            "scope": pa.array([str(corpus.keys[s]) for s in corpus.scope_of.tolist()]),
            "status": pa.array(["active" if a else "other" for a in corpus.active.tolist()]),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(corpus.vectors.reshape(-1)), dim),
        })
        self.table = lancedb.connect(self.home).create_table("memories", table)
        self.table.create_scalar_index("scope")  # what a user tuning for prefiltered search would add

    def search(self, q: Query) -> list[int]:
        scopes = ", ".join("'" + str(k) + "'" for k in q.scopes)
        hits = (self.table.search(q.vector).metric("dot").where(f"scope IN ({scopes}) AND status = 'active'", prefilter=True)
                .limit(K).select(["row"]).to_list())
        return [int(h["row"]) for h in hits]

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


class ChromaSystem(System):
    name = "chromadb $in"

    def ingest(self, corpus: Corpus) -> None:
        import chromadb

        self.client = chromadb.EphemeralClient()
        self.col = self.client.create_collection(f"m{secrets.token_hex(4)}", metadata={"hnsw:space": "ip"})
        for start in range(0, len(corpus.vectors), 5000):
            end = min(start + 5000, len(corpus.vectors))
            self.col.add(ids=[str(i) for i in range(start, end)], embeddings=corpus.vectors[start:end],
                         metadatas=[{"scope": str(corpus.keys[corpus.scope_of[i]]), "status": "active" if corpus.active[i] else "other"} for i in range(start, end)])

    def search(self, q: Query) -> list[int]:
        res = self.col.query(query_embeddings=[q.vector], n_results=K,
                             where={"$and": [{"scope": {"$in": [str(k) for k in q.scopes]}}, {"status": "active"}]}, include=[])
        return [int(i) for i in res["ids"][0]]


class LangGraphSystem(System):
    name = "langgraph InMemoryStore"

    def ingest(self, corpus: Corpus) -> None:
        from langgraph.store.base import PutOp
        from langgraph.store.memory import InMemoryStore

        table = {t: corpus.vectors[i] for i, t in enumerate(corpus.texts)}
        self.queries: dict[str, np.ndarray] = {}

        def embed(texts: list[str]) -> list[list[float]]:
            return [(table[t] if t in table else self.queries[t]).tolist() for t in texts]

        self.store = InMemoryStore(index={"dims": corpus.vectors.shape[1], "embed": embed, "fields": ["text"]})
        ops = [PutOp((str(corpus.keys[corpus.scope_of[i]]),), str(i), {"text": corpus.texts[i], "status": "active" if corpus.active[i] else "other"})
               for i in range(len(corpus.texts))]
        for start in range(0, len(ops), 5000):
            self.store.batch(ops[start:start + 5000])

    def search(self, q: Query) -> list[int]:
        text = f"q{id(q)}"
        self.queries[text] = q.vector
        found: list[tuple[float, int]] = []
        for key in q.scopes:
            for item in self.store.search((str(key),), query=text, filter={"status": "active"}, limit=K):
                found.append((-(item.score or 0.0), int(item.key)))
        return [k for _, k in sorted(found)[:K]]


PEERS: dict[str, Callable[[], System]] = {
    "faiss": FaissSystem, "usearch": UsearchSystem, "lancedb": LanceSystem, "chromadb": ChromaSystem, "langgraph": LangGraphSystem,
}
