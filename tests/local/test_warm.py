"""`LocalBackend.warm`: a replica loads its scopes' partitions before traffic, within a byte budget.

A warmed store must answer exactly as a cold one (same hits, same order), its searches must load
no partition, the budget must hold, and warming must not freeze what it loaded: a memory
forgotten or written afterwards, here or by another process, is seen by the next search."""

from __future__ import annotations

import threading

import pytest

from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.errors import InvalidRequest
from adapters.local import LocalBackend
from adapters.local.partitions import Partition
from adapters.scopes import ScopeKey, ScopeSet

PROV = Provenance("alice", "assistant", "s1")
BIG = ScopeKey.workspace("acme", "alpha")
MID = ScopeKey.private("acme", "alice")
SMALL = ScopeKey.tenant("acme")
SIZES = {BIG: 30, MID: 12, SMALL: 5}


async def _filled(tmp_path) -> LocalBackend:
    writer = LocalBackend(tmp_path / "s")
    await writer.put_many([
        (scope, NewMemory(content=f"{scope.visibility.value} note {i} about deploys and budgets", kind="fact", provenance=PROV), f"{scope.visibility.value}-{i}")
        for scope, n in SIZES.items() for i in range(n)
    ])
    await writer.aclose()
    return LocalBackend(tmp_path / "s")


def _ids(result) -> list[str]:
    return [h.memory.id for h in result.hits]


async def test_a_warmed_store_answers_as_a_cold_one_and_loads_nothing_more(tmp_path):
    cold = await _filled(tmp_path)
    query = SearchQuery(ScopeSet.of(BIG, MID, SMALL), "deploys note 3", limit=10)
    expected = _ids(await cold.search(query))
    await cold.aclose()
    warm = LocalBackend(tmp_path / "s")
    assert warm.warm() == 3
    assert set(warm.partition_loads) == set(SIZES) and warm.resident_vector_bytes > 0
    loads = dict(warm.partition_loads)
    assert _ids(await warm.search(query)) == expected
    assert dict(warm.partition_loads) == loads  # the search loaded nothing
    assert warm.warm() == 0  # already resident
    await warm.aclose()


async def test_the_budget_bounds_what_is_loaded_largest_first_then_whatever_still_fits(tmp_path):
    backend = await _filled(tmp_path)
    row = Partition.bytes_per_row(backend.embedder.dimension) + Partition.RECORD_BYTES  # a row's vector, codes and record
    assert backend.warm(max_bytes=(SIZES[MID] + SIZES[SMALL]) * row) == 2  # BIG does not fit; MID, then SMALL do
    assert set(backend.partition_loads) == {MID, SMALL}
    assert backend.resident_vector_bytes <= (SIZES[MID] + SIZES[SMALL]) * row
    assert backend.warm(max_bytes=0) == 0
    await backend.aclose()


async def test_writes_after_warming_are_seen_here_and_from_another_process(tmp_path):
    backend = await _filled(tmp_path)
    backend.warm()
    scopes = ScopeSet.of(MID)
    victim = (await backend.search(SearchQuery(scopes, "private note 4", limit=1))).hits[0].memory
    assert await backend.delete(MID, victim.id)
    assert victim.id not in _ids(await backend.search(SearchQuery(scopes, "private note 4", limit=20)))
    other = LocalBackend(tmp_path / "s")  # another process's connection to the same store
    added = await other.put(MID, NewMemory(content="a fresh private decision about rollbacks", kind="decision", provenance=PROV), idempotency_key="fresh-1")
    await other.aclose()
    assert added.id in _ids(await backend.search(SearchQuery(scopes, "fresh private decision about rollbacks", limit=3)))
    await backend.aclose()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
async def test_a_bad_budget_is_refused(tmp_path, bad):
    backend = await _filled(tmp_path)
    with pytest.raises(InvalidRequest):
        backend.warm(max_bytes=bad)
    assert not backend.partition_loads
    await backend.aclose()


async def test_a_set_stop_event_ends_the_warm_up_after_the_partition_being_loaded(tmp_path, monkeypatch):
    backend = await _filled(tmp_path)
    stop = threading.Event()
    stop.set()
    assert backend.warm(stop=stop) == 0 and not backend.partition_loads  # stopped before the first
    load = backend._partition

    def load_then_stop(key):  # the shutdown arrives while the first (largest) partition loads
        part = load(key)
        stop.set()
        return part

    stop.clear()
    monkeypatch.setattr(backend, "_partition", load_then_stop)
    assert backend.warm(stop=stop) == 1
    assert set(backend.partition_loads) == {BIG}
    await backend.aclose()
