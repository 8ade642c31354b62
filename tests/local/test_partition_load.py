"""A partition loaded from SQLite holds exactly what the row-by-row checks would keep.

The load builds a partition of sound rows column by column and falls back to checking rows one
by one only when some row is damaged; both ways must give the same rows, status and kind codes
and earliest expiry, and a damaged row must still be quarantined alone."""

from __future__ import annotations

import numpy as np

from adapters.base import NewMemory, Provenance, Status
from adapters.local import LocalBackend
from adapters.local.records import COLUMNS, row_to_memory
from adapters.local.store import _PARTITION_COLUMNS
from adapters.scopes import ScopeKey, ScopeSet

A = ScopeKey.workspace("acme", "alpha")
PROV = Provenance("alice", "assistant", "s1")


async def _filled(tmp_path) -> LocalBackend:
    writer = LocalBackend(tmp_path / "s")
    statuses = [Status.ACTIVE, Status.PENDING, Status.SUPERSEDED]
    await writer.put_many([
        (A, NewMemory(content=f"note {i}", kind=("fact", "event", "note")[i % 3], provenance=PROV, status=statuses[i % 3],
                      expires_at=(None if i % 4 else 4_000_000_000.0 + i)), f"k{i}")
        for i in range(40)
    ])
    await writer.aclose()
    return LocalBackend(tmp_path / "s")


def _rows(backend: LocalBackend):
    return backend._db.execute(f"SELECT {_PARTITION_COLUMNS} FROM memories m WHERE m.scope = ?", (str(A),)).fetchall()


async def test_the_column_load_equals_the_row_by_row_checks(tmp_path):
    backend = await _filled(tmp_path)
    fast = backend._partition(A)
    assert backend.partition_loads[A] == 1 and fast.size == 40
    slow, damaged = backend._checked_partition(A, _rows(backend), False, backend.embedder.dimension)
    assert damaged == []
    for name in ("rowids", "status", "kind"):
        assert np.array_equal(getattr(fast, name)[: fast.size], getattr(slow, name)[: slow.size]), name
    assert np.array_equal(fast.matrix[: fast.size], slow.matrix[: slow.size])
    assert fast.next_expiry == slow.next_expiry == 4_000_000_000.0
    assert fast.matrix.flags.writeable and fast.matrix.flags.c_contiguous  # appends and swap-removes write into it
    # both hold every row's record, and it is the record the hits' own SELECT decodes
    records = {r[0]: row_to_memory(r, A) for r in backend._db.execute(f"SELECT {COLUMNS} FROM memories")}
    assert fast.decoded == slow.decoded == records and len(records) == 40
    await backend.aclose()


async def test_one_damaged_vector_is_quarantined_alone_and_the_rest_still_load(tmp_path):
    backend = await _filled(tmp_path)
    victim = backend._db.execute("SELECT rowid, id FROM memories WHERE scope = ? ORDER BY rowid LIMIT 1 OFFSET 7", (str(A),)).fetchone()
    bad = np.zeros(backend.embedder.dimension, dtype=np.float32)
    bad[3] = np.nan
    backend._db.execute("UPDATE memories SET vector = ? WHERE rowid = ?", (bad.tobytes(), victim[0]))
    part = backend._partition(A)
    assert part.size == 39 and victim[0] not in part.rowids[: part.size].tolist()
    assert [q.memory_id for q in await backend.quarantined()] == [victim[1]]
    ranked = backend.search_vector(ScopeSet.of(A), np.ones(backend.embedder.dimension, dtype=np.float32) / 20, limit=50, statuses=frozenset(Status))
    assert len(ranked) == 39
    await backend.aclose()
