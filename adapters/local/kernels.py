"""The local backend's compiled kernels (adapters/local/_kernels.c), or None where the install
did not build them (setup.py builds them only where a C compiler is found).

Each kernel has a numpy twin that gives the same results to the bit, runs where `compiled` is
None, and is what the tests hold the kernel to:
- `sums`: a scan's BM25 sums, `LocalLexical._bm25_sums_numpy` (adapters/local/lexical_search.py);
- `best`: a scan's top-k cut, `Scan._best_numpy` (adapters/local/scan.py).

One switch for both: a test sets `compiled` to None to run the numpy twins.
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["compiled"]

compiled: ModuleType | None
try:
    from adapters.local import _kernels as compiled
except ImportError:  # pragma: no cover - an install without a C compiler
    compiled = None
