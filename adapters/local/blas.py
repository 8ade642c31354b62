"""A large partition scan runs on ONE BLAS thread.

Why: a scan is one matrix-vector product per partition, which is memory-bound. OpenBLAS splits
any product of more than a few thousand elements over all its threads and then waits for the
slowest; on a shared machine (or a service worker with concurrent requests) one of those threads
is regularly descheduled, and the whole recall waits for it. Measured on a loaded 2-core machine
(benchmarks/README.md): a 4,000 x 384 product took p50 118-184 us / p95 42-56 ms on OpenBLAS's two
threads against 232 us / 8.3 ms on one, and the local backend's recall p95 followed the two-thread
figure. Small scans keep whatever the process configured: they are quick either way, and the
switch costs a few microseconds.

What it must never do: leave the process's BLAS thread count changed after a scan (it is
restored, also on an exception), or fail a search because threadpoolctl or a BLAS library cannot
be found (then nothing is switched).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["ONE_THREAD_MIN_ELEMENTS", "one_blas_thread"]

#: rows x dimension from which a scan switches to one BLAS thread (about 2,700 rows of 384 floats)
ONE_THREAD_MIN_ELEMENTS = 1 << 20

_lock = threading.Lock()
_blas: list[Any] | None = None  # threadpoolctl's controllers of the loaded BLAS libraries


def _controllers() -> list[Any]:
    global _blas
    if _blas is None:
        with _lock:
            if _blas is None:
                try:
                    from threadpoolctl import ThreadpoolController

                    _blas = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
                except Exception:  # no threadpoolctl, or a BLAS it cannot drive: scan as configured
                    _blas = []
    return _blas


class one_blas_thread:
    """`with one_blas_thread(elements):` -- one BLAS thread inside, the previous count after."""

    __slots__ = ("_elements", "_restore")

    def __init__(self, elements: int) -> None:
        self._elements = elements
        self._restore: list[tuple[Any, int]] = []

    def __enter__(self) -> "one_blas_thread":
        if self._elements >= ONE_THREAD_MIN_ELEMENTS:
            for lib in _controllers():
                threads = lib.get_num_threads()
                if threads is not None and threads > 1:
                    lib.set_num_threads(1)
                    self._restore.append((lib, threads))
        return self

    def __exit__(self, *exc: object) -> None:
        for lib, threads in self._restore:
            lib.set_num_threads(threads)
        self._restore.clear()
