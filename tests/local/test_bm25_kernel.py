"""The compiled BM25 kernel (adapters/local/_kernels.c, `sums`) refuses what does not fit, before reading it.

It reads raw buffers: a postings piece that lies outside its partition, a position outside its
piece, a buffer of the wrong item size or length must raise ValueError, never be read past its
end. (Its sums are held to the plain BM25 formula, to the bit, in test_bm25_reference.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

from adapters.local import kernels
from adapters.local.postings import Postings

kernel = kernels.compiled
pytestmark = pytest.mark.skipif(kernel is None, reason="the compiled BM25 kernel was not built by this install (no C compiler)")

PROBES = np.array([5, 9, 6, 10], dtype=np.uint64)  # two terms (digests 5 and 9), then each plus one


def _piece(start: int, end: int, positions: list[int], digests: list[int] | None = None, *, positions_dtype: type | np.dtype = np.int32) -> Postings:
    digests = digests if digests is not None else [5] * len(positions)
    return Postings(start, end, np.array(digests, dtype=np.uint64), np.array(positions, dtype=positions_dtype),
                    np.ones(len(positions), dtype=np.float32), np.full(end - start, 3.0, dtype=np.float32))


def _sums(segments: list, size: int) -> tuple[bool, np.ndarray]:
    out = np.zeros(size)
    held = np.zeros(2)
    lengths = np.empty(size, dtype=np.float32)
    returnable = np.ones(size, dtype=bool)

    def weigh(total: float):
        return np.array([1.5, 2.5]), 3.0

    return kernel.sums(segments, PROBES, returnable, lengths, held, out, weigh, 1.2, 0.75), out


def test_a_well_formed_scan_is_summed_and_only_its_postings_rows_score() -> None:
    scored, out = _sums([([_piece(0, 3, [0, 2])], 0, 3), ([_piece(0, 2, [1], [9])], 3, 2)], 5)
    assert scored
    assert np.count_nonzero(out) == 3 and out[0] == out[2] and out[4] > 0 and out[1] == out[3] == 0


@pytest.mark.parametrize("segments, size, message", [
    ([([_piece(0, 3, [3])], 0, 3)], 3, "outside its piece"),  # position == end
    ([([_piece(0, 3, [-1])], 0, 3)], 3, "outside its piece"),
    ([([_piece(0, 2, [0]), _piece(2, 3, [1])], 0, 3)], 3, "outside its piece"),  # a position of the first piece in the second
    ([([_piece(0, 3, [0])], 2, 3)], 4, "outside the scan"),  # the segment runs past the buffer
    ([([_piece(1, 3, [1])], 0, 3)], 3, "does not fit"),  # a gap before the piece
    ([([_piece(0, 2, [1])], 0, 3)], 3, "do not cover"),  # rows left uncovered
    ([([_piece(0, 3, [0], positions_dtype=np.int64)], 0, 3)], 3, "positions"),  # 8-byte positions
    ([([_piece(0, 3, [0], positions_dtype=np.dtype(">i4"))], 0, 3)], 3, "native"),  # bytes in the other order
])
def test_what_does_not_fit_is_refused_before_it_is_read(segments: list, size: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _sums(segments, size)


def test_buffers_of_the_wrong_length_are_refused() -> None:
    segments = [([_piece(0, 3, [0])], 0, 3)]
    with pytest.raises(ValueError, match="out"):
        kernel.sums(segments, PROBES, np.ones(3, dtype=bool), np.empty(3, dtype=np.float32), np.zeros(2), np.zeros(2), lambda total: None, 1.2, 0.75)
    with pytest.raises(ValueError, match="held"):
        kernel.sums(segments, PROBES, np.ones(3, dtype=bool), np.empty(3, dtype=np.float32), np.zeros(3), np.zeros(3), lambda total: None, 1.2, 0.75)


def test_read_only_inputs_are_read_and_read_only_outputs_refused() -> None:
    segments = [([_piece(0, 3, [0, 2])], 0, 3)]
    probes, returnable = PROBES.copy(), np.ones(3, dtype=bool)
    probes.flags.writeable = returnable.flags.writeable = False  # inputs: read, never written
    held, out = np.zeros(2), np.zeros(3)
    assert kernel.sums(segments, probes, returnable, np.empty(3, dtype=np.float32), held, out, lambda total: (np.array([1.5, 2.5]), 3.0), 1.2, 0.75)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):  # the array it would fill
        kernel.sums(segments, PROBES, np.ones(3, dtype=bool), np.empty(3, dtype=np.float32), np.zeros(2), frozen, lambda total: None, 1.2, 0.75)
