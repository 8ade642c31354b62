"""The compiled top-k cut (adapters/local/_kernels.c, `best`) against its numpy twin, index for index.

`Scan.best` decides which buffer rows a search returns and in which order: the kernel must pick
exactly `Scan._best_numpy`'s rows in its order, ties at the cut included (equal values keep
buffer order), for float32 vector scores and float64 BM25 sums, with and without a floor, for
every limit. The values are drawn from few distinct ones, so ties are everywhere, with -inf rows
(masked) and zeros (no lexical candidate) among them.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from adapters.local import kernels
from adapters.local.scan import Scan

pytestmark = pytest.mark.skipif(kernels.compiled is None, reason="the compiled kernels were not built by this install (no C compiler)")


def _values(rng: random.Random, n: int, dtype: type) -> np.ndarray:
    distinct = [rng.uniform(-1.0, 1.0) for _ in range(rng.randint(1, 12))] + [0.0, -np.inf]
    return np.array([rng.choice(distinct) for _ in range(n)], dtype=dtype)


@pytest.mark.parametrize("seed", range(4))
def test_the_kernel_cuts_exactly_as_numpy_does(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(300):
        dtype = rng.choice([np.float32, np.float64])
        values = _values(rng, rng.choice([0, 1, 5, 60, 400, 2500]), dtype)
        limit = rng.choice([1, 3, 10, 50, 100, 5000])
        floor = rng.choice([-np.inf, 0.0])
        want = Scan._best_numpy(values, limit, few_distinct=rng.random() < 0.5, floor=floor)
        got = Scan.best(values, limit, floor=floor)
        assert got.dtype == np.intp and got.tolist() == want.tolist(), (len(values), limit, floor)
        checked += len(want)
    assert checked > 1000


def test_a_nan_is_refused_not_ranked() -> None:
    with pytest.raises(ValueError, match="NaN"):
        Scan.best(np.array([0.5, np.nan, 0.2], dtype=np.float32), 2)


def test_values_of_another_type_are_refused() -> None:
    with pytest.raises(ValueError, match="float32 or float64"):
        kernels.compiled.best(np.arange(5, dtype=np.int32), 0.0, np.empty(2, dtype=np.intp))
