"""Every partition scan that OpenBLAS would split over threads runs on ONE BLAS thread.

Why: a scan is one matrix-vector product per partition, which is memory-bound. OpenBLAS splits
any single-precision matrix-vector product of at least 2,304 x 4 = 9,216 elements (24 rows of
384 floats) over all its threads and then waits for the slowest; on a shared machine (or a
service worker with concurrent requests) one of those threads is regularly descheduled, and the
whole recall waits for it. Measured on the loaded 2-core machine (benchmarks/README.md): a
1,400 x 384 product, the median identity's readable set, took p50 22-34 ms on OpenBLAS's two
threads against 0.3-0.5 ms on one (load average 12); 4,000 x 384 earlier took p95 42-56 ms
against 8.3 ms. On a quiet machine two threads win by about 2x on the minimum (113 vs 190 us
for 1,400 rows), which a served recall never sees: concurrent requests already use every core.
Smaller products are single-threaded inside OpenBLAS anyway, so nothing is switched for them.

The switch calls OpenBLAS's own get/set functions directly (threadpoolctl finds them once):
threadpoolctl's public setter takes a lock and checks a controlling thread on every call,
which cost more than a small scan.

What it must never do: leave the process's BLAS thread count changed after a scan (it is
restored, also on an exception), or fail a search because threadpoolctl or a BLAS library cannot
be found (then nothing is switched).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["ONE_THREAD_MIN_ELEMENTS", "one_blas_thread"]

#: rows x dimension from which a scan switches to one BLAS thread: OpenBLAS's own threading
#: threshold for a single-precision matrix-vector product (2,304 x GEMM_MULTITHREAD_THRESHOLD 4)
ONE_THREAD_MIN_ELEMENTS = 2304 * 4

_lock = threading.Lock()
_blas: list[Any] | None = None  # one get/set pair per loaded BLAS library


class _RawThreads:
    """OpenBLAS's `openblas_get_num_threads` / `openblas_set_num_threads`, called directly."""

    __slots__ = ("get_num_threads", "set_num_threads")

    def __init__(self, get: Any, set_: Any) -> None:
        self.get_num_threads, self.set_num_threads = get, set_


def _switch_for(controller: Any) -> Any:
    """The cheapest way to read and set this library's thread count: OpenBLAS's raw symbols
    when it runs its own pthreads pool (threadpoolctl's affix-aware lookup), else the controller."""
    if getattr(controller, "internal_api", None) == "openblas" and getattr(controller, "threading_layer", None) == "pthreads":
        lookup = getattr(controller, "_get_symbol", None)
        if lookup is not None:
            get, set_ = lookup("openblas_get_num_threads"), lookup("openblas_set_num_threads")
            if get is not None and set_ is not None:
                return _RawThreads(get, set_)
    return controller


def _controllers() -> list[Any]:
    global _blas
    if _blas is None:
        with _lock:
            if _blas is None:
                try:
                    from threadpoolctl import ThreadpoolController

                    _blas = [_switch_for(c) for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
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
