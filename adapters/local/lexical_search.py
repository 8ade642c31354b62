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
    #: rows per scope-tagged token, as the index's vocabulary last said, and the (foreign commits,
    #: own changes) stamp it was read at: any write, here or by another process, starts it afresh
    _lexical_rows: dict[str, int]
    _lexical_rows_stamp: tuple[int, int] = (-1, -1)

    @guarded
    def search_lexical(self, scopes: ScopeSet, text: str, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}),
                       kinds: frozenset[str] | None = None, now: float | None = None) -> list[tuple[ScopeKey, int, float]]:
        """BM25 top-`limit` over exactly the ScopeSet (the module function): (scope, rowid, bm25)."""
        require_scope_set(scopes)
        with self._lock:
            self._refresh_if_changed_elsewhere()
            stamp = (self._data_version, self._db.total_changes)
            if self._lexical_rows_stamp != stamp:
                self._lexical_rows, self._lexical_rows_stamp = {}, stamp
            sizes = {str(entry.key): self._partition(entry.key).size for entry in scopes}  # loaded by the vector channel
            return search_lexical(self._db, scopes, text, limit=limit, statuses=statuses, kinds=kinds, now=time.time() if now is None else float(now),
                                  sizes=sizes, token_rows=self._lexical_rows)

    def fused_with_lexical(self, ranked: list[tuple[ScopeKey, int, float]], query: SearchQuery, vector: np.ndarray) -> list[tuple[ScopeKey, int, float]]:
        """`ranked` (the vector channel, over the same ScopeSet) fused with the lexical channel,
        top `query.limit`; the vector channel alone when the channel is off or the text has no terms."""
        if not self.lexical_channel:
            return ranked[: query.limit]
        lexical = self.search_lexical(query.scopes, query.text, limit=max(query.limit, FUSION_DEPTH), statuses=query.statuses, kinds=query.kinds, now=query.at())
        if not lexical:
            return ranked[: query.limit]
        seen = {rowid for _, rowid, _ in ranked}
        return fuse(ranked, lexical, query.limit, self._cosines([(k, r) for k, r, _ in lexical if r not in seen], vector))

    def _cosines(self, rows: list[tuple[ScopeKey, int]], vector: np.ndarray) -> dict[int, float]:
        """The query's similarity to lexical candidates the vector channel did not return, from
        the partitions already in memory (a row with no vector there, quarantined, scores 0)."""
        out: dict[int, float] = {}
        by_scope: dict[ScopeKey, list[int]] = {}
        for scope, rowid in rows:
            by_scope.setdefault(scope, []).append(rowid)
        with self._lock:
            for scope, rowids in by_scope.items():
                part = self._partition(scope)
                if part.size == 0 or part.matrix is None:
                    continue
                positions = np.flatnonzero(np.isin(part.rowids[: part.size], np.asarray(rowids, dtype=np.int64)))
                similarities = part.matrix[positions] @ np.asarray(vector, dtype=np.float32)
                for rowid, value in zip(part.rowids[positions].tolist(), similarities.tolist()):
                    out[rowid] = value if math.isfinite(value) else 0.0
        return out
