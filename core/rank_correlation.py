"""Rank correlation between two orderings of the same items (e.g. models ranked by two rounds)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired sequences of scores (Kendall 1938, "A new measure of rank
    correlation", Biometrika 30; tau-b, Kendall 1945, corrects for ties), computed by
    ``scipy.stats.kendalltau``.

    ``tau_b = (C - D) / sqrt((C + D + T_x) (C + D + T_y))`` over the item pairs: C concordant, D
    discordant, T_x tied in xs only, T_y tied in ys only. E.g. A > B > C against A > C > B gives
    C = 2, D = 1: tau = 1/3.

    Args:
        xs, ys: the items' scores under the two orderings, paired by position (same length).

    Returns:
        tau in [-1, 1]; None when it is undefined: fewer than 2 items, or every item tied in either
        sequence.

    Raises:
        ValueError: the sequences differ in length.
    """
    if len(xs) != len(ys):
        raise ValueError(f"paired sequences differ in length: {len(xs)} and {len(ys)}")
    if len(xs) < 2:
        return None
    from scipy.stats import kendalltau  # imported here: scipy's import is slow and rarely needed

    tau = kendalltau(list(xs), list(ys), variant="b").statistic
    return None if tau is None or math.isnan(tau) else float(tau)
