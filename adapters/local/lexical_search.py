"""The lexical channel as a concern of the local backend: BM25 (adapters/local/lexical.py) over
the ScopeSet, fused with the vector channel's ranking of the same search (adapters/shared/fusion.py).

Why apart from lexical.py: that module is the index and its query, which the schema upgrade also
needs; this one stands on the open store (lock, connection, embedder). What it must never do:
search any scope but those of the ScopeSet the vector channel was given.
"""

from __future__ import annotations

import math
import time

import numpy as np

from adapters.base import SearchQuery, Status, require_scope_set
from adapters.local.lexical import FUSION_DEPTH, search_lexical
from adapters.local.store import LocalStoreBase, guarded
from adapters.scopes import ScopeKey, ScopeSet
from adapters.shared.fusion import fuse

__all__ = ["LocalLexical"]

class LocalLexical(LocalStoreBase):
    """The lexical channel as a concern of the local backend (search.py fuses it in)."""

    #: False: `search` is the vector channel alone (benchmarks compare the two)
    lexical_channel: bool = True

    @guarded
    def search_lexical(self, scopes: ScopeSet, text: str, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}),
                       kinds: frozenset[str] | None = None, now: float | None = None) -> list[tuple[ScopeKey, int, float]]:
        """BM25 top-`limit` over exactly the ScopeSet (the module function): (scope, rowid, bm25)."""
        require_scope_set(scopes)
        with self._lock:
            self._refresh_if_changed_elsewhere()
            return search_lexical(self._db, scopes, text, limit=limit, statuses=statuses, kinds=kinds, now=time.time() if now is None else float(now))

    def fused_with_lexical(self, ranked: list[tuple[ScopeKey, int, float]], query: SearchQuery, vector: np.ndarray) -> list[tuple[ScopeKey, int, float]]:
        """`ranked` (the vector channel, over the same ScopeSet) fused with the lexical channel,
        top `query.limit`; the vector channel alone when the channel is off or the text has no terms."""
        if not self.lexical_channel:
            return ranked[: query.limit]
        lexical = self.search_lexical(query.scopes, query.text, limit=max(query.limit, FUSION_DEPTH), statuses=query.statuses, kinds=query.kinds, now=query.at())
        if not lexical:
            return ranked[: query.limit]
        seen = {rowid for _, rowid, _ in ranked}
        return fuse(ranked, lexical, query.limit, self._cosines([r for _, r, _ in lexical if r not in seen], vector))

    def _cosines(self, rowids: list[int], vector: np.ndarray) -> dict[int, float]:
        """The query's similarity to rows the vector channel did not return (read from SQLite;
        a vector of the wrong size scores 0: the partition load quarantines it)."""
        if not rowids:
            return {}
        with self._lock:
            rows = self._db.execute(f"SELECT rowid, vector FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})", rowids).fetchall()
        want = 4 * self.embedder.dimension
        out: dict[int, float] = {}
        for rowid, blob in rows:
            if isinstance(blob, bytes) and len(blob) == want:
                value = float(np.frombuffer(blob, dtype=np.float32) @ vector)
                out[rowid] = value if math.isfinite(value) else 0.0
        return out
