"""Two models scored on the same items: McNemar's exact test of whether their error rates differ.

Pure functions (no Django). When two models answer the same n items, their error rates are paired: most
items are right (or wrong) for both, and only the items where they disagree say which is better.
Comparing two Wilson intervals treats the rates as independent samples, which wastes that pairing
(overlapping intervals can hide a clear difference, docs/benchmarking.md, "The cycle across rounds").

McNemar's test (McNemar 1947, "Note on the sampling error of the difference between correlated
proportions or percentages", Psychometrika 12(2)), in its exact form (Fay 2010, "Two-sided exact tests
and matching confidence intervals for discrete data", R Journal 2(1); as ``statsmodels``'
``mcnemar(exact=True)``): of the d = b + c discordant items (b: only the first model wrong, c: only the
second), under "same error rate" each is equally likely to fall either way, so b ~ Binomial(d, 1/2) and
the two-sided p-value is ``min(1, 2 * P(X <= min(b, c)))``. With d = 0 the models never disagree: p = 1.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["PairedComparison", "compare_fooled", "mcnemar_exact"]

#: Two-sided level at which a difference is called measured.
ALPHA = 0.05


def mcnemar_exact(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value of ``b`` and ``c`` discordant items (module docstring), in
    (0, 1]; computed with whole numbers, exact up to the final division.

    Raises:
        ValueError: a count is negative.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must not be negative, got {b} and {c}")
    d = b + c
    if d == 0:
        return 1.0
    tail = sum(math.comb(d, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**d)


@dataclass(frozen=True)
class PairedComparison:
    """Two models on the same n items: ``only_first`` items only the first got wrong (b),
    ``only_second`` only the second (c), ``p_value`` McNemar's exact two-sided p, and ``differs`` when
    p < ``ALPHA`` (0.05)."""

    n: int
    only_first: int
    only_second: int
    p_value: float

    @property
    def differs(self) -> bool:
        return self.p_value < ALPHA


def compare_fooled(first: Collection[int], second: Collection[int], n: int) -> PairedComparison:
    """McNemar's test of two models from the ids of the items each got wrong, out of the same ``n``.

    Args:
        first, second: item ids each model got wrong (subsets of the same n items).
        n: the items both were scored on.

    Raises:
        ValueError: more wrong items than n.
    """
    first, second = set(first), set(second)
    if len(first) > n or len(second) > n:
        raise ValueError(f"more wrong items than the {n} scored")
    b, c = len(first - second), len(second - first)
    return PairedComparison(n=n, only_first=b, only_second=c, p_value=mcnemar_exact(b, c))
