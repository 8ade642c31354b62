"""The local backend's compiled kernel (adapters/local/_kernels.c), or None where the install
did not build it (setup.py builds it only where a C compiler is found).

Each function has a numpy twin that gives the same results to the bit, runs where `compiled` is
None, and is what the tests hold the kernel to (a test sets `compiled` to None to run the twin):
- `sums`, a scan's BM25 sums: `_bm25_sums_numpy` (adapters/local/lexical_search.py);
- `fuse`, the fusion of a scan's two rankings: `fused_rows` (adapters/shared/fusion.py), called
  through `_fused_rows` (adapters/local/search.py).

Tried and not kept, twice: the top-k cut (`Scan.best`) as a bounded heap in C. On the benchmark's
scans it was no faster than numpy's partition on the float32 scores (19-22 against 10-21 us a
cut; numpy's selection is vectorised) and saved ~8 us a recall on BM25 sums: not worth a
third function with its own exactness burden (benchmarks/README.md).
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["compiled"]

compiled: ModuleType | None
try:
    from adapters.local import _kernels as compiled
except ImportError:  # pragma: no cover - an install without a C compiler
    compiled = None
