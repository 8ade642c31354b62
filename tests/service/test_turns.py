"""Requests start in the order they were read, at most one per turn of the event loop
(bridge/doors/http/turns.py), so the loop reads its sockets between two requests' work.

Without it, every request read at one poll ran back to back in the next batch of the loop's
callbacks, and a request read just after a poll waited two batches (benchmarks/README.md, "The
service's tail at 8 concurrent requests (2026-12-03)"). A loop turn is counted here by a
callback that re-schedules itself with `call_soon`: it runs exactly once per turn.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest

from bridge.doors.http.turns import Turns
from bridge.facade import MemoryBridge
from tests.service.asgikit import in_process_service


class LoopTurnCounter:
    """How many turns the running loop has made since `start()`."""

    def __init__(self) -> None:
        self.turn = 0
        self._handle: asyncio.Handle | None = None

    def start(self) -> "LoopTurnCounter":
        self._handle = asyncio.get_running_loop().call_soon(self._tick)
        return self

    def _tick(self) -> None:
        self.turn += 1
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()


class Entering:
    """Requests that enter one `Turns` and record, in order, the names of those that started."""

    def __init__(self) -> None:
        self.turns = Turns()
        self.started: list[str] = []

    async def request(self, name: str, arrive_after: int = 0) -> None:
        for _ in range(arrive_after):  # loop turns before the request is read
            await asyncio.sleep(0)
        await self.turns.enter()
        self.started.append(name)


async def test_a_lone_request_starts_without_waiting_for_a_turn() -> None:
    turns, counter = Turns(), LoopTurnCounter().start()
    try:
        await turns.enter()
        assert counter.turn == 0, "the only request must start at once, inline, not a loop turn later"
    finally:
        counter.stop()


async def test_requests_read_together_start_one_per_loop_turn_in_the_order_they_entered() -> None:
    turns, counter = Turns(), LoopTurnCounter().start()
    started: list[tuple[str, int]] = []

    async def request(name: str) -> None:
        await turns.enter()
        started.append((name, counter.turn))  # and the request's work would run here, without suspending

    try:
        await asyncio.gather(*(request(name) for name in "abcde"))
    finally:
        counter.stop()
    assert [name for name, _ in started] == list("abcde"), "requests must start first come, first served"
    turns_seen = [turn for _, turn in started]
    assert all(later > earlier for earlier, later in zip(turns_seen, turns_seen[1:])), (
        f"two requests started in one loop turn (no read of the sockets between them): {started}"
    )


async def test_a_request_read_while_others_wait_queues_behind_them() -> None:
    entering = Entering()
    request = entering.request
    await asyncio.gather(request("first"), request("second"), request("third"), request("late", arrive_after=1))
    assert entering.started == ["first", "second", "third", "late"]


async def test_a_waiter_cancelled_before_its_turn_is_skipped_and_the_rest_still_start() -> None:
    entering = Entering()
    first, doomed, last = (asyncio.ensure_future(entering.request(n)) for n in ("first", "doomed", "last"))
    await asyncio.sleep(0)  # all three have entered: "doomed" and "last" wait
    doomed.cancel()
    await asyncio.wait_for(asyncio.gather(first, last), timeout=5)
    assert entering.started == ["first", "last"]
    assert doomed.cancelled()


async def test_a_turn_given_to_a_request_cancelled_before_it_ran_passes_on() -> None:
    entering = Entering()
    tasks = [asyncio.ensure_future(entering.request(n)) for n in ("first", "given", "last")]
    await asyncio.sleep(0)  # "first" started; the next turn will hand "given" its turn
    await asyncio.sleep(0)
    tasks[1].cancel()
    await asyncio.wait_for(asyncio.gather(tasks[0], tasks[2]), timeout=5)
    assert "last" in entering.started and "given" not in entering.started


async def test_turns_used_on_a_new_loop_start_afresh() -> None:
    turns = Turns()
    turns._started = True  # as a previous loop (a previous test's) may have left it
    turns._loop = object()  # type: ignore[assignment]
    await asyncio.wait_for(turns.enter(), timeout=5)


# -- through the service's edge ------------------------------------------------------------------
@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, MemoryBridge]]:
    async with in_process_service(tmp_path) as (client, _, bridge):
        yield client, bridge


async def test_concurrent_recalls_through_the_edge_start_in_separate_loop_turns(served: tuple[httpx.AsyncClient, MemoryBridge], monkeypatch: pytest.MonkeyPatch) -> None:
    client, bridge = served
    counter = LoopTurnCounter().start()
    executed: list[int] = []
    real = MemoryBridge.execute

    async def execute(self: MemoryBridge, identity: Any, op: Any) -> Any:
        executed.append(counter.turn)
        return await real(self, identity, op)

    monkeypatch.setattr(MemoryBridge, "execute", execute)
    try:
        answers = await asyncio.gather(*(client.get("/api/v1/recall", params={"query": f"runbook {n}"}) for n in range(4)))
    finally:
        counter.stop()
    assert [a.status_code for a in answers] == [200] * 4
    assert len(executed) == 4 and len(set(executed)) == 4, f"recalls ran in the same loop turn, with no read between them: turns {executed}"
