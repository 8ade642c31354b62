"""`Scan.best`, the top-k of both channels of a local search, against the order it promises.

The promise: the best `limit` finite values, best first, equal values in buffer order (also
when the tie straddles the cut), never a -inf row. The fast path (a partition or a sorted copy,
then the rows at or above the cut) and the general path must all keep it, so the arrays here are made of few
distinct values (many ties), -inf rows, and limits around the number of returnable rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from adapters.local.scan import Scan


def _expected(values: np.ndarray, limit: int) -> list[int]:
    finite = [i for i in range(len(values)) if values[i] > -np.inf]
    return sorted(finite, key=lambda i: (-float(values[i]), i))[:limit]


@pytest.mark.parametrize("few_distinct", [False, True])  # the cut by partition, or by a sorted copy
@pytest.mark.parametrize("seed", range(4))
def test_best_is_the_stable_top_k_of_the_finite_values(seed: int, few_distinct: bool) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(3000):
        n = int(rng.integers(0, 40))
        values = rng.integers(-3, 4, n).astype(np.float32) if rng.random() < 0.7 else rng.standard_normal(n).astype(np.float32)
        values[rng.random(n) < rng.random()] = -np.inf
        limit = int(rng.integers(1, n + 3))
        assert Scan.best(values, limit, few_distinct=few_distinct).tolist() == _expected(values, limit), (values.tolist(), limit)


def test_a_smaller_limit_gives_a_prefix_of_a_larger_ones_order() -> None:
    values = np.asarray([0.5, 0.9, 0.5, -np.inf, 0.9, 0.1, 0.5], dtype=np.float32)
    orders = [Scan.best(values, k).tolist() for k in range(1, 8)]
    assert orders[-1] == [1, 4, 0, 2, 6, 5]
    for shorter, longer in zip(orders, orders[1:]):
        assert longer[: len(shorter)] == shorter
    assert [Scan.best(values, k, few_distinct=True).tolist() for k in range(1, 8)] == orders


@pytest.mark.parametrize("few_distinct", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_best_with_a_floor_ranks_as_if_every_value_at_or_below_it_were_minus_inf(seed: int, few_distinct: bool) -> None:
    """The lexical ranking reads BM25 sums with 0 for "no candidate" (`floor=0.0`): it must rank
    exactly as `best` ranks the same sums with -inf written where they are 0."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(3000):
        n = int(rng.integers(0, 40))
        sums = rng.integers(0, 4, n).astype(np.float64) * rng.choice([1.0, 0.37])
        limit = int(rng.integers(1, n + 3))
        with_minus_inf = np.where(sums > 0.0, sums, -np.inf)
        expected = _expected(with_minus_inf, limit)
        assert Scan.best(sums, limit, few_distinct=few_distinct, floor=0.0).tolist() == expected, (sums.tolist(), limit)


@pytest.mark.parametrize("seed", range(3))
def test_best_keeps_the_first_rows_of_a_tie_at_the_cut_whether_it_sorts_them_all_or_picks_them_first(seed: int) -> None:
    """A scan's BM25 sums (thousands of rows, a handful of distinct values): the rows at or above
    the cut are few times the limit (sorted all at once) or many (the tie's first rows picked
    before sorting); both must give the stable top-k, with and without a floor."""
    rng = np.random.default_rng(200 + seed)
    short = long = 0
    for _ in range(400):
        n = int(rng.integers(50, 3000))
        levels = np.sort(rng.choice([0.0, 0.4, 1.3, 2.2, 2.9, 3.7, 5.1], int(rng.integers(2, 6)), replace=False))
        sums = rng.choice(levels, n, p=np.linspace(1.0, 0.1, len(levels)) / np.linspace(1.0, 0.1, len(levels)).sum())
        limit = int(rng.choice([1, 5, 50, 120]))
        with_minus_inf = np.where(sums > 0.0, sums, -np.inf)
        expected = _expected(with_minus_inf, limit)
        if len(expected) == limit:
            at_or_above = int(np.count_nonzero(with_minus_inf >= with_minus_inf[expected[-1]]))
            short += limit < at_or_above <= 6 * limit
            long += at_or_above > 6 * limit
        assert Scan.best(sums, limit, few_distinct=True, floor=0.0).tolist() == expected, (seed, limit)
        assert Scan.best(with_minus_inf, limit).tolist() == expected, (seed, limit)
    assert short > 20 and long > 20
