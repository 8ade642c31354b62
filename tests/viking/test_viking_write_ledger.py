"""Retried writes are idempotent AT THE SERVICE, even under faults and search lag.

Viking's event/add makes its own ids and a new event is searchable only after a lag, so a write
whose answer was lost cannot be found by the retry; the adapter's write ledger records every call
before it is sent and `reconcile_writes` removes the copies once the lag has passed.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from adapters.errors import BackendUnavailable
from adapters.scopes import ScopeKey
from adapters.viking import RetryPolicy, VikingBackend
from contract_tests.backends.viking import make_simulated
from contract_tests.viking_simulator import Fault, VikingSimulator
from tests.viking.vikingkit import Waits, mem

ALICE = ScopeKey.private("acme", "alice")
WS = ScopeKey.workspace("acme", "alpha")
LAG = 3.0
LAG_BOUND = 5.0


def _backend(sim: VikingSimulator, state_dir: Path | None = None) -> VikingBackend:
    retry = RetryPolicy(attempts=4, backoff_base=0.1, backoff_cap=1.0, sleep=Waits(), jitter=lambda c: c)
    _, backend = make_simulated(sim, retry=retry, clock=lambda: sim.now, search_lag_bound=LAG_BOUND)
    if state_dir is not None:
        backend.ledger.close()
        from adapters.viking.ledger import WriteLedger

        backend.ledger = WriteLedger(state_dir)
    return backend


def _copies(sim: VikingSimulator, group_ids: set[str]) -> Counter[str]:
    return Counter(e.group_id for e in sim.all_events() if e.group_id in group_ids)


def _inject_faults(sim: VikingSimulator, rate: float, seed: int) -> None:
    """`rate` of event/add calls fail: half of them AFTER the service applied the write (the
    answer is lost: the ambiguous case), half before; searches fail at `rate / 2`."""
    rng = random.Random(seed)
    ambiguous = rate / 2
    sim.inject(Fault("commit_then_fail", status=500, path="/event/add", match=lambda p, b: rng.random() < ambiguous, times=-1))
    sim.inject(Fault("http", status=503, path="/event/add", match=lambda p, b: rng.random() < (rate - ambiguous) / (1 - ambiguous), times=-1))
    sim.inject(Fault("http", status=503, path="/search", match=lambda p, b: rng.random() < rate / 2, times=-1))


async def test_retried_writes_under_faults_and_search_lag_leave_exactly_one_physical_copy_each() -> None:
    """N writes, each retried by its caller until acknowledged, at 80% injected faults with a 3 s
    search lag: after the lag, exactly N physical records at the service (one per memory)."""
    sim = VikingSimulator(start_time=1_750_000_000.0)
    sim.search_lag = LAG
    backend = _backend(sim)
    await backend.put(WS, mem("warm-up"), idempotency_key="warm")  # registers the scope before the faults
    warm = {e.group_id for e in sim.all_events() if e.group_id}
    _inject_faults(sim, 0.8, seed=18)
    n = 60
    acknowledged: dict[str, str] = {}
    for i in range(n):
        for _ in range(200):  # the caller retries with the SAME idempotency key, as the bridge does
            try:
                stored = await backend.put(WS, mem(f"decision {i}"), idempotency_key=f"k{i}")
            except BackendUnavailable:
                sim.advance(1.0)
                continue
            acknowledged[f"k{i}"] = stored.id
            break
        else:
            pytest.fail(f"write k{i} was never acknowledged")
        sim.advance(0.5)
    ids = set(acknowledged.values())
    before = _copies(sim, ids)
    sim.faults.clear()
    sim.advance(LAG_BOUND + LAG + 1)
    removed = await backend.reconcile_writes()
    after = _copies(sim, ids)
    assert sum(before.values()) - removed == sum(after.values())
    assert sum(before.values()) > n, "the fault mix should have left copies for the ledger to remove"
    assert after == Counter({i: 1 for i in ids}), f"copies left: {[(k, c) for k, c in after.items() if c != 1]}"
    assert backend.ledger.pending_count() == 0
    memories = {e.group_id for e in sim.all_events() if e.group_id and e.group_id not in warm and e.group_id.startswith("m")}
    assert memories == ids, "a write that was never acknowledged left a record behind"
    for key, memory_id in acknowledged.items():
        assert (await backend.get(WS, memory_id)).content == f"decision {key[1:]}"
    await backend.aclose()


async def test_a_lost_answer_under_search_lag_is_reconciled_to_one_copy(sim: VikingSimulator, backend: VikingBackend) -> None:
    sim.search_lag = 15
    sim.inject(Fault("commit_then_fail", status=500, path="/event/add", match=lambda p, b: "tea" in str(b), times=1))
    stored = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert stored.created is True
    assert len([e for e in sim.all_events() if e.group_id == stored.id]) == 2  # the lag hid the first copy
    again = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")  # not searchable yet: the ledger knows
    assert again.created is False and again == stored
    assert len([e for e in sim.all_events() if e.group_id == stored.id]) == 2
    sim.advance(15 + backend.config.search_lag_bound)
    assert await backend.reconcile_writes() == 1
    assert len([e for e in sim.all_events() if e.group_id == stored.id]) == 1
    assert (await backend.get(ALICE, stored.id)) == stored


async def test_retried_write_survives_an_adapter_restart_without_a_second_copy(tmp_path: Path) -> None:
    """Every attempt of the first process lost its answer (4 invisible copies); a new process on
    the same state dir retries the key: it adopts one copy and removes the other three."""
    sim = VikingSimulator(start_time=1_750_000_000.0)
    sim.search_lag = LAG
    first = _backend(sim, tmp_path)
    await first.put(ALICE, mem("warm-up"), idempotency_key="warm")
    sim.inject(Fault("commit_then_fail", status=500, path="/event/add", times=-1))
    with pytest.raises(BackendUnavailable):
        await first.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    await first.aclose()
    sim.faults.clear()
    memory_id = next(e.group_id for e in sim.all_events() if e.memory_info.get("summary") == "alice likes tea")
    assert len([e for e in sim.all_events() if e.group_id == memory_id]) == 4
    assert oct((tmp_path / "viking-write-ledger.sqlite3").stat().st_mode & 0o777) == "0o600"

    second = _backend(sim, tmp_path)
    sim.advance(LAG_BOUND + LAG + 1)
    again = await second.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert again.id == memory_id and again.created is False
    await second.reconcile_writes()
    assert len([e for e in sim.all_events() if e.group_id == memory_id]) == 1
    await second.aclose()


async def test_a_write_that_never_landed_leaves_no_ledger_row_after_reconciliation(sim: VikingSimulator, backend: VikingBackend) -> None:
    await backend.put(ALICE, mem("warm-up"), idempotency_key="warm")
    sim.inject(Fault("timeout", path="/event/add", times=-1))  # ambiguous to the adapter, nothing applied
    with pytest.raises(BackendUnavailable):
        await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    sim.faults.clear()
    assert backend.ledger.pending_count() == 1
    sim.advance(backend.config.search_lag_bound + 1)
    assert await backend.reconcile_writes() == 0
    assert backend.ledger.pending_count() == 0
    assert await backend.find_by_idempotency_key(ALICE, "a1") is None


class _Crash(BaseException):
    """Stands for the process dying (kill -9) right after the service acknowledged the add."""


async def test_a_process_that_died_between_the_answer_and_the_ledger_leaves_no_extra_copy(tmp_path: Path) -> None:
    sim = VikingSimulator(start_time=1_750_000_000.0)
    sim.search_lag = LAG
    first = _backend(sim, tmp_path)
    await first.put(ALICE, mem("warm-up"), idempotency_key="warm")

    def die(*args: object, **kw: object) -> None:
        raise _Crash()

    first.ledger.won = die  # type: ignore[method-assign]
    with pytest.raises(_Crash):
        await first.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    second = _backend(sim, tmp_path)  # restarted before the write became searchable
    again = await second.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert len([e for e in sim.all_events() if e.group_id == again.id]) == 2  # the retry could not see the first
    sim.advance(LAG_BOUND + LAG + 1)
    await second.reconcile_writes()
    assert len([e for e in sim.all_events() if e.group_id == again.id]) == 1
    assert second.ledger.pending_count() == 0
    await second.aclose()
