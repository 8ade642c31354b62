"""The compiled fusion (adapters/local/_kernels.c, `fuse`) against `fused_rows`, and what it refuses.

The local search fuses its two rankings with the kernel where the install built it
(adapters/local/search.py, `_fused_rows`). It must choose the same rows in the same order with
the same scores, to the bit, as `fused_rows` (itself held to the plain fusion in
test_fusion_order.py), on rankings that share rows and tie on cosines; and, since it reads raw
buffers, it must refuse an index outside the rows, a ranking that names a row twice, a buffer of
the wrong item size or length and a read-only output, before reading past anything.
"""

from __future__ import annotations

import numpy as np
import pytest

from adapters.local import kernels, search
from adapters.shared.fusion import LEXICAL_WEIGHT, RRF_K, VECTOR_WEIGHT, fused_rows

from tests.local.test_fusion_order import _fused_rows_case

kernel = kernels.compiled
pytestmark = pytest.mark.skipif(kernel is None, reason="the compiled kernel was not built by this install (no C compiler)")


def _fuse(vector: np.ndarray, lexical: np.ndarray, ids: np.ndarray, cosines: np.ndarray, limit: int, out: np.ndarray | None = None) -> tuple[int, list[float]]:
    out = np.empty(len(vector) + len(lexical), dtype=np.intp) if out is None else out
    return kernel.fuse(vector, lexical, ids, cosines, limit, out, float(RRF_K), VECTOR_WEIGHT, LEXICAL_WEIGHT)  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", range(3))
def test_the_kernel_fuses_as_fused_rows_to_the_bit(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    shared = 0
    for case in range(1500):
        size = 1500 if case % 300 == 0 else int(rng.integers(1, 60))
        ids, cosines, vector, lexical, limit = _fused_rows_case(rng, size)
        vector, lexical = vector.astype(np.intp), lexical.astype(np.intp)
        shared += bool(np.intersect1d(vector, lexical).size)
        expected_rows, expected_scores = fused_rows(vector, lexical, ids, cosines, limit)
        rows, scores = search._fused_rows(vector, lexical, ids, cosines, limit)
        assert rows.tolist() == expected_rows.tolist() and scores == expected_scores, (ids, cosines, vector, lexical, limit)
    assert shared > 100  # the rankings did share rows, where the weights add up


def test_the_search_uses_the_kernel_and_the_numpy_path_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_fused_rows` answers alike with the kernel switched off (what an install without a C
    compiler runs), and reaches the kernel when it is on."""
    rng = np.random.default_rng(7)
    ids, cosines, vector, lexical, limit = _fused_rows_case(rng, 40)
    vector, lexical = vector.astype(np.intp), lexical.astype(np.intp)
    with_kernel = search._fused_rows(vector, lexical, ids, cosines, limit)
    calls: list[int] = []

    class Counting:
        def fuse(self, *args: object) -> object:
            calls.append(1)
            return kernel.fuse(*args)  # type: ignore[union-attr]

    monkeypatch.setattr(kernels, "compiled", Counting())
    search._fused_rows(vector, lexical, ids, cosines, limit)
    monkeypatch.setattr(kernels, "compiled", None)
    without = search._fused_rows(vector, lexical, ids, cosines, limit)
    assert calls == [1]
    assert with_kernel[0].tolist() == without[0].tolist() and with_kernel[1] == without[1]


def test_a_shared_row_counts_once_with_both_weights() -> None:
    ids = np.array([10, 11, 12, 13], dtype=np.int64)
    cosines = np.array([0.9, 0.5, 0.4, 0.3], dtype=np.float32)
    vector = np.array([0, 1], dtype=np.intp)
    lexical = np.array([3, 1], dtype=np.intp)  # row 1 in both: its weight is both terms, listed once
    count, scores = _fuse(vector, lexical, ids, cosines, 10, out := np.empty(4, dtype=np.intp))
    assert out[:count].tolist() == [0, 1, 3]
    assert scores == [pytest.approx(0.9), pytest.approx(0.5), pytest.approx(0.3)]


def test_an_index_outside_the_rows_is_refused() -> None:
    ids, cosines = np.arange(4, dtype=np.int64), np.zeros(4, dtype=np.float32)
    for vector, lexical in ((np.array([0, 4]), np.array([1])), (np.array([0]), np.array([-1])), (np.array([9]), np.array([], dtype=np.intp))):
        with pytest.raises(ValueError, match="outside the rows"):
            _fuse(vector.astype(np.intp), lexical.astype(np.intp), ids, cosines, 3)


def test_a_ranking_naming_a_row_twice_is_refused() -> None:
    ids, cosines = np.arange(4, dtype=np.int64), np.zeros(4, dtype=np.float32)
    with pytest.raises(ValueError, match="twice"):
        _fuse(np.array([1, 2, 1], dtype=np.intp), np.array([0], dtype=np.intp), ids, cosines, 3)
    with pytest.raises(ValueError, match="twice"):
        _fuse(np.array([1], dtype=np.intp), np.array([3, 3], dtype=np.intp), ids, cosines, 3)


def test_buffers_of_the_wrong_kind_length_or_access_are_refused() -> None:
    ids, cosines = np.arange(4, dtype=np.int64), np.zeros(4, dtype=np.float32)
    vector, lexical = np.array([0, 1], dtype=np.intp), np.array([2], dtype=np.intp)
    with pytest.raises(ValueError, match="cosines"):
        _fuse(vector, lexical, ids, cosines.astype(np.float64), 3)  # float64 cosines
    with pytest.raises(ValueError, match="cosines"):
        _fuse(vector, lexical, ids, cosines[:3], 3)  # fewer cosines than ids
    with pytest.raises(ValueError, match="vector"):
        _fuse(vector.astype(np.int32), lexical, ids, cosines, 3)
    with pytest.raises(ValueError, match="out"):
        _fuse(vector, lexical, ids, cosines, 3, np.empty(2, dtype=np.intp))  # no room for both rankings
    read_only = np.empty(3, dtype=np.intp)
    read_only.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        _fuse(vector, lexical, ids, cosines, 3, read_only)
    with pytest.raises(ValueError, match="negative limit"):
        _fuse(vector, lexical, ids, cosines, -1)
