"""The Wilson score interval (core/intervals.py, Wilson 1927), against values computed by hand.

With z = 1.959964 (95%), n = 20, k = 8: p = 0.4, z²/n = 0.192073, centre = (0.4 + 0.096037) / 1.192073
= 0.416113, half = 1.959964 / 1.192073 * sqrt(0.012 + 0.002401) = 0.197306, so [0.2188, 0.6134].
"""

from __future__ import annotations

import pytest

from core.intervals import Z_95, wilson_interval


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (8, 20, 0.2188, 0.6134),
        (2, 20, 0.0279, 0.3010),
        (16, 20, 0.5840, 0.9193),
        (0, 10, 0.0, 0.2775),  # not empty at p = 0, unlike the normal interval
        (10, 10, 0.7225, 1.0),
    ],
)
def test_hand_computed_intervals(successes, n, low, high):
    got = wilson_interval(successes, n)
    assert got == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_the_interval_is_symmetric_in_successes_and_failures():
    low, high = wilson_interval(3, 17)
    mirrored_low, mirrored_high = wilson_interval(14, 17)
    assert (low, high) == (pytest.approx(1 - mirrored_high), pytest.approx(1 - mirrored_low))


def test_more_examples_narrow_the_interval():
    small, large = wilson_interval(8, 20), wilson_interval(80, 200)
    assert large[1] - large[0] < small[1] - small[0]
    assert Z_95 == pytest.approx(1.959964, abs=1e-6)


@pytest.mark.parametrize(("successes", "n"), [(0, 0), (-1, 5), (6, 5)])
def test_impossible_counts_are_refused(successes, n):
    with pytest.raises(ValueError):
        wilson_interval(successes, n)
