"""The expected calibration error and its intervals (core/calibration.py): a hand-worked value, a check
against scikit-learn's reliability curve, and the paired difference."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from core.calibration import bin_index, calibration, expected_calibration_error, paired_difference


def test_ece_by_hand():
    """15 bins. 0.9 and 0.9 fall in bin 14 ((13/15, 14/15]): accuracy 1/2, confidence 0.9, gap 0.4,
    weight 2/4 -> 0.2. 0.6 and 0.55 fall in bin 9 ((8/15, 9/15]): accuracy 1, confidence 0.575, gap
    0.425, weight 2/4 -> 0.2125. ECE = 0.4125."""
    assert list(bin_index(np.array([0.9, 0.6, 0.55, 0.0, 1.0]))) == [13, 8, 8, 0, 14]
    assert expected_calibration_error([0.9, 0.9, 0.6, 0.55], [True, False, True, True]) == pytest.approx(
        0.4125
    )


def test_a_perfectly_calibrated_bin_has_no_error():
    # Ten items at 0.7, seven right: accuracy 0.7 = confidence 0.7.
    assert expected_calibration_error([0.7] * 10, [True] * 7 + [False] * 3) == pytest.approx(0.0, abs=1e-12)


def test_ece_agrees_with_scikit_learns_reliability_curve():
    """ECE = sum over bins of (items in the bin / n) * |fraction right - mean confidence|, with the
    bins and per-bin means scikit-learn's ``calibration_curve`` gives (uniform strategy)."""
    rng = np.random.default_rng(5)
    confidence = rng.uniform(0.5, 1.0, 3000)
    correct = rng.random(3000) < confidence - 0.1
    fraction_right, mean_confidence = calibration_curve(correct, confidence, n_bins=15, strategy="uniform")
    counts, _ = np.histogram(confidence, bins=np.linspace(0, 1, 16))
    counts = counts[counts > 0]
    reference = float(np.sum(counts / len(confidence) * np.abs(fraction_right - mean_confidence)))
    assert expected_calibration_error(confidence, correct) == pytest.approx(reference, rel=1e-9)


def test_the_interval_holds_the_estimate_and_narrows_with_more_items():
    rng = np.random.default_rng(1)
    small_c = rng.uniform(0.5, 1, 200)
    large_c = rng.uniform(0.5, 1, 5000)
    small = calibration(small_c, rng.random(200) < small_c - 0.15)
    large = calibration(large_c, rng.random(5000) < large_c - 0.15)
    for result in (small, large):
        assert result.interval[0] <= result.ece <= result.interval[1]
    assert large.interval[1] - large.interval[0] < (small.interval[1] - small.interval[0]) / 3
    assert abs(large.ece - 0.15) < 0.02  # the gap is 0.15 at every confidence
    assert calibration(small_c, rng.random(200) < small_c - 0.15, seed=4) != small  # seeded resamples


def test_the_paired_difference_of_a_model_with_itself_is_zero_and_bad_input_is_refused():
    rng = np.random.default_rng(2)
    c = rng.uniform(0.5, 1, 300)
    y = rng.random(300) < c
    diff, interval = paired_difference((c, y), (c, y))
    assert diff == 0.0 and interval == (0.0, 0.0)
    worse = np.clip(c + 0.2, 0, 1)
    diff, (low, high) = paired_difference((c, y), (worse, y))
    assert diff > 0 and low <= diff <= high
    with pytest.raises(ValueError, match="items before but"):
        paired_difference((c, y), (c[:10], y[:10]))
    with pytest.raises(ValueError, match="probabilities in"):
        expected_calibration_error([1.2], [True])
    with pytest.raises(ValueError, match="no items"):
        expected_calibration_error([], [])
