"""Confidence intervals for proportions (fooling rates, accuracies) measured on n examples."""

from __future__ import annotations

import math

#: The standard normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (Wilson 1927, "Probable inference,
    the law of succession, and statistical inference", JASA 22(158)).

    ``centre = (p + z²/2n) / (1 + z²/n)``, ``half = z / (1 + z²/n) * sqrt(p(1-p)/n + z²/4n²)``. Unlike
    the normal (Wald) interval it stays inside [0, 1] and is not empty at p = 0 or 1; e.g. 8 of 20 gives
    [0.2188, 0.6134] at 95%.

    Args:
        successes: count in [0, n].
        n: examples, at least 1.
        z: normal quantile; default the 95% two-sided one.

    Returns:
        (low, high), both in [0, 1].

    Raises:
        ValueError: n < 1 or successes outside [0, n].
    """
    if n < 1:
        raise ValueError(f"an interval needs at least one example, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    return wilson_share(successes / n, n, z)


def wilson_share(p: float, n: float, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval (as ``wilson_interval``) of a share ``p`` in [0, 1] observed on ``n``, a
    real number at least 1: an effective sample size (``core.clustered``) as well as a count. ``n``
    under 1 is taken as 1.

    Returns:
        (low, high), both in [0, 1].
    """
    n = max(float(n), 1.0)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
