"""What a worker process of `viking-bridge serve` does once, when it has started.

Why: CPython's cyclic garbage collector walks every tracked object of the process at each full
pass. A worker's start-up leaves ~100k of them that live as long as the process (the modules of
FastAPI, pydantic, numpy and the embedder, the app, the bridge and its stores): a full pass over
them took 35-50 ms of the event loop, and one came every few hundred requests. Every request in
flight waits out such a pause, so at 8 concurrent requests it sat in the p99.

`freeze_start_up_heap` collects once, then moves every object alive into the collector's
permanent generation (`gc.freeze`), which no pass walks again; what requests allocate later is
collected as before. Only a process that is nothing but a worker does this: an object frozen
that later becomes unreachable in a reference cycle is never reclaimed, which is right for what
a worker built to live as long as itself, and wrong for an application that embeds the
service in its own process (or a test session that starts many apps): `create_app` leaves the
collector alone, `create_worker_app` (what `serve` runs) asks for it.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["freeze_start_up_heap"]

log = logging.getLogger("viking_bridge.service")


def freeze_start_up_heap() -> int:
    """Collect, then freeze what is left; returns the number of objects frozen."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("worker start-up: %d objects moved out of the garbage collector's passes", frozen)
    return frozen
