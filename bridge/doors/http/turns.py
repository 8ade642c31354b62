"""`Turns`: requests start in the order they were read, at most one per turn of the event loop.

Why (measured with benchmarks/service_tail.py; benchmarks/README.md, "The service's tail at 8
concurrent requests (2026-12-03)"): a recall on the local store never suspends: it runs from the
request's first step to its answer in one go (~4-5 ms of CPU). The event loop reads its sockets
only between batches of ready callbacks, and one batch held every request read at the last read:
at 8 concurrent requests, batches of ~7 recalls (30-60 ms) with no read in between. A request
whose bytes arrived just after a read waited that whole batch before it was even read, and then
ran where the kernel's readiness order put it in the next batch, often last: two rounds instead
of one, the slowest 1% at twice the median.

What it does: the first request to `enter()` in a loop turn goes on at once, without suspending
(a lone request pays one `call_soon`); a request that enters while another has started in the
same turn waits, first come first served, and each following turn lets the next one go. So
between two requests' work the loop reads its sockets, and requests start in the order they were
read, which is within one request's work of the order they arrived.

It orders starts only and holds nothing across a suspension: a request that awaits I/O (a
PostgreSQL round trip, a worker thread) does not keep the next one waiting beyond one turn.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Turns"]


class Turns:
    """One start per loop turn, in the order of `enter()`; bound to the loop it is first used on
    (used on another, e.g. by a test's next loop, it starts afresh there)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False  # a request has started in the current turn
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def enter(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._started, self._waiting = loop, False, deque()
        if not self._started and not self._waiting:
            self._start()
            return
        turn: asyncio.Future[None] = loop.create_future()
        self._waiting.append(turn)
        await turn  # cancelled while waiting: skipped by `_next`; cancelled once given the turn: the next turn goes on

    def _start(self) -> None:  # called on the loop's thread: by `enter`, or by the turn's callback
        self._started = True
        asyncio.get_running_loop().call_soon(self._next_turn)  # runs after the loop's next read of its sockets

    def _next_turn(self) -> None:
        self._started = False
        self._next()

    def _next(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():  # a waiter cancelled meanwhile is skipped
                turn.set_result(None)
                self._start()
                return
