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
    from adapters.local.records import RecordColumns
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
    # rowid -> the decoded record of a row that was a hit: decoded from `records` or read from
    # SQLite by the store. Any mutation clears it, and so does every write transaction touching
    # the scope; it lives and dies with the partition (no other bound)
    decoded: "dict[int, StoredMemory]" = field(default_factory=dict, repr=False, compare=False)
    # the record columns of every row as the load read them, decoded one row at a time on its
    # first hit (`record`); dropped with `decoded`, so after any change hits are read again
    records: "RecordColumns | None" = field(default=None, repr=False, compare=False)
    # set once a recall has taken records from this partition: its next one decodes the rest
    recalled: bool = field(default=False, repr=False, compare=False)
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
        self.forget_records()

    def forget_records(self) -> None:
        """Drop every record this partition holds, decoded or not: the next hits read SQLite."""
        self.decoded.clear()
        self.records = None

    def record(self, rowid: int) -> StoredMemory | None:
        """The record of `rowid` (a row of this partition) from memory: decoded before, or
        decoded now from `records` and kept; None when neither holds it or its columns do not
        decode (the caller reads the row from SQLite, which quarantines it).

        The first recall of a loaded partition decodes its hits alone; from its next recall on
        (`recalled`), the rest of the rows are decoded at once, in bulk: a scope read once pays
        for its hits only, a scope in use pays for its records once and then finds every hit
        decoded, so no later recall of it decodes anything."""
        memory = self.decoded.get(rowid)
        if memory is None and self.records is not None:
            if self.recalled:
                self.decoded = self.records.memories() | self.decoded
                self.records = None
                return self.decoded.get(rowid)
            memory = self.records.memory(rowid)
            if memory is not None:
                self.decoded[rowid] = memory
        return memory

    @property
    def held_records(self) -> int:
        """How many records this partition holds, as columns or decoded (for memory budgets)."""
        return len(self.decoded) + (len(self.records) if self.records is not None else 0)

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
        self.forget_records()
        self.lexical = []
        return True

    def set_status(self, rowid: int, status_code: int) -> None:
        pos = self._position(rowid)
        if pos is not None:
            self.status[pos] = status_code
            self._bias.clear()
            self.forget_records()

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

    #: what one record held with its row costs in memory, about: ~700 bytes for a row's record
    #: columns as loaded (one tuple a row, its texts as SQLite returned them, equal kinds, statuses,
    #: provenance and metadata texts shared), measured with ~90-character contents
    #: (benchmarks/README.md, "A first touch decodes no record"); a decoded record is about as
    #: much again; more for longer texts. `warm` budgets with it (`held_records` of each partition).
    RECORD_BYTES = 700

    @staticmethod
    def bytes_per_row(dimension: int) -> int:
        """What one loaded row adds to `nbytes`: its vector, rowid, status and kind code."""
        return 4 * dimension + 8 + 1 + 4
