"""McNemar's exact test (core/paired.py): hand-worked tails, and scipy's and statsmodels' tests."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar

from core.paired import compare_fooled, mcnemar_exact


def test_by_hand():
    # b = 1, c = 9: d = 10, P(X <= 1) = (1 + 10) / 1024, doubled: 22 / 1024 = 0.021484375.
    assert mcnemar_exact(1, 9) == 22 / 1024
    assert mcnemar_exact(9, 1) == 22 / 1024
    # b = c: the tail holds more than half, doubled past 1: p = 1.
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    # b = 0, c = 5: 2 / 32 = 0.0625, not under 0.05; c = 6: 2 / 64 = 0.03125.
    assert mcnemar_exact(0, 5) == 0.0625 and mcnemar_exact(0, 6) == 0.03125


@pytest.mark.parametrize("b, c", [(0, 1), (2, 7), (10, 25), (40, 41), (120, 80), (500, 430)])
def test_against_scipy_and_statsmodels(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-9)
    table = [[7, b], [c, 11]]  # the concordant cells do not enter the test
    assert mcnemar_exact(b, c) == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)


def test_compare_fooled_counts_the_discordant_items():
    got = compare_fooled({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 2, 11}, n=50)
    # only the first: 3..10 (8 items); only the second: 11 (1): d = 9, P(X <= 1) = 10 / 512, doubled.
    assert (got.n, got.only_first, got.only_second) == (50, 8, 1)
    assert got.p_value == 20 / 512 and got.differs
    assert not compare_fooled({1, 2}, {3}, n=10).differs
    with pytest.raises(ValueError, match="more wrong"):
        compare_fooled(set(range(11)), set(), n=10)
    with pytest.raises(ValueError, match="negative"):
        mcnemar_exact(-1, 2)
