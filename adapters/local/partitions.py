"""In-memory vector partitions: one contiguous float32 matrix per ScopeKey.

A recall scans only the partitions of its ScopeSet, so its cost follows what the identity may
read, not the size of the store, and a row outside the set is never even a candidate. Rows carry
small parallel arrays (status code, kind code) so status/kind filters are applied *before* the
top-k, which is what keeps "k permitted rows when k exist" true under heavy filtering.

This module never touches SQLite; `LocalBackend` keeps it in step with the database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from adapters.base import StoredMemory
    from adapters.local.postings import Postings

_GROWTH = 1.25  # spare capacity on append; keeps resident memory close to the raw vector bytes


@dataclass
class Partition:
    dimension: int
    rowids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    status: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    matrix: np.ndarray | None = None
    size: int = 0
    # allowed status codes -> float32 0 / -inf per row (None: every row allowed); any mutation clears it
    _bias: dict[tuple[int, ...], np.ndarray | None] = field(default_factory=dict, repr=False, compare=False)
    # rowid -> the decoded record: every sound row's, filled by the store when it loads the
    # partition, then the rows it reads for hits since. Any mutation clears it, and so does every
    # write transaction touching the scope; it lives and dies with the partition (no other bound)
    decoded: "dict[int, StoredMemory]" = field(default_factory=dict, repr=False, compare=False)
    # the earliest `expires_at` of any row loaded or appended (inf: none expires). A search at a
    # time before it has no expired row to mask and skips the expiry query. Removing a row never
    # raises it (an earlier value only costs that query); a reload recomputes it.
    next_expiry: float = math.inf
    # the lexical postings of positions [0, the last piece's end), built by the store on the first
    # lexical search (adapters/local/lexical_search.py). Appending leaves them valid (the next
    # search indexes the new rows); a removal moves a row to another position and drops them.
    # Status changes need nothing: the search masks rows by status at query time.
    lexical: "list[Postings]" = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def from_rows(cls, dimension: int, rowids: np.ndarray, status: np.ndarray, kind: np.ndarray, matrix: np.ndarray) -> "Partition":
        part = cls(dimension)
        part.rowids = np.ascontiguousarray(rowids, dtype=np.int64)
        part.status = np.ascontiguousarray(status, dtype=np.int8)
        part.kind = np.ascontiguousarray(kind, dtype=np.int32)
        matrix = np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1, dimension)
        part.matrix = matrix if matrix.flags.writeable else matrix.copy()  # frombuffer views are read-only
        part.size = len(part.rowids)
        return part

    def _reserve(self, extra: int) -> None:
        capacity = 0 if self.matrix is None else self.matrix.shape[0]
        need = self.size + extra
        if need <= capacity:
            return
        new_capacity = max(need, int(capacity * _GROWTH) + 8)
        matrix = np.zeros((new_capacity, self.dimension), dtype=np.float32)
        rowids = np.zeros(new_capacity, dtype=np.int64)
        status = np.zeros(new_capacity, dtype=np.int8)
        kind = np.zeros(new_capacity, dtype=np.int32)
        if self.size and self.matrix is not None:
            matrix[: self.size] = self.matrix[: self.size]
            rowids[: self.size] = self.rowids[: self.size]
            status[: self.size] = self.status[: self.size]
            kind[: self.size] = self.kind[: self.size]
        self.matrix, self.rowids, self.status, self.kind = matrix, rowids, status, kind

    def append(self, rowids: np.ndarray, status: np.ndarray, kind: np.ndarray, vectors: np.ndarray, *, earliest_expiry: float | None = None) -> None:
        n = len(rowids)
        if earliest_expiry is not None and earliest_expiry < self.next_expiry:
            self.next_expiry = earliest_expiry
        self._reserve(n)
        s = self.size
        self.matrix[s : s + n] = vectors  # type: ignore[index]  # _reserve allocated it
        self.rowids[s : s + n] = rowids
        self.status[s : s + n] = status
        self.kind[s : s + n] = kind
        self.size = s + n
        self._bias.clear()
        self.decoded.clear()

    def _position(self, rowid: int) -> int | None:
        hits = np.flatnonzero(self.rowids[: self.size] == rowid)
        return int(hits[0]) if len(hits) else None

    def remove(self, rowid: int) -> bool:
        """Swap-remove: order inside a partition carries no meaning."""
        pos = self._position(rowid)
        if pos is None:
            return False
        last = self.size - 1
        if self.matrix is None:  # a found position implies rows, hence a matrix; never reached
            return False
        if pos != last:
            self.matrix[pos] = self.matrix[last]
            self.rowids[pos] = self.rowids[last]
            self.status[pos] = self.status[last]
            self.kind[pos] = self.kind[last]
        self.matrix[last] = 0.0  # no stale vector lingers in spare capacity
        self.size = last
        self._bias.clear()
        self.decoded.clear()
        self.lexical = []
        return True

    def set_status(self, rowid: int, status_code: int) -> None:
        pos = self._position(rowid)
        if pos is not None:
            self.status[pos] = status_code
            self._bias.clear()
            self.decoded.clear()

    def status_bias(self, allowed: tuple[int, ...]) -> np.ndarray | None:
        """0 for rows whose status code is in `allowed`, -inf otherwise; None when all are allowed.

        Adding it to the scores excludes the other rows before any top-k. Cached until the
        partition changes, so the common "active only" search costs one vector add.
        """
        if allowed in self._bias:
            return self._bias[allowed]
        ok = np.isin(self.status[: self.size], np.asarray(allowed, dtype=np.int8))
        bias = None if ok.all() else np.where(ok, np.float32(0.0), np.float32(-np.inf)).astype(np.float32)
        if len(self._bias) >= 4:
            self._bias.clear()
        self._bias[allowed] = bias
        return bias

    def scores_into(self, query: np.ndarray, out: np.ndarray) -> None:
        """`out[:] = matrix @ query` for the live rows, without an intermediate array."""
        if self.matrix is None or self.size == 0:
            return
        np.matmul(self.matrix[: self.size], query, out=out)

    def scores(self, query: np.ndarray) -> np.ndarray:
        if self.size == 0 or self.matrix is None:
            return np.zeros(0, dtype=np.float32)
        return self.matrix[: self.size] @ query

    @property
    def nbytes(self) -> int:
        return 0 if self.matrix is None else self.matrix.nbytes + self.rowids.nbytes + self.status.nbytes + self.kind.nbytes

    #: what one decoded record held with its row costs in memory, about: ~600 bytes measured with
    #: ~90-character contents (shared scope key, kind, provenance and metadata; benchmarks/README.md,
    #: "Records held with their partition"); more for longer texts. `warm` budgets with it.
    RECORD_BYTES = 600

    @staticmethod
    def bytes_per_row(dimension: int) -> int:
        """What one loaded row adds to `nbytes`: its vector, rowid, status and kind code."""
        return 4 * dimension + 8 + 1 + 4
