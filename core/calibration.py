"""Calibration of a classifier's confidence: the expected calibration error (ECE) with a bootstrap
interval, and the paired difference between two models on the same items (docs/measurements.md,
"Calibration").

Pure functions (numpy, no Django).

* **ECE** (Naeini, Cooper & Hauskrecht 2015, "Obtaining Well Calibrated Probabilities Using Bayesian
  Binning", AAAI; in the form of Guo, Pleiss, Sun & Weinberger 2017, "On Calibration of Modern Neural
  Networks", ICML, eq. 3): the items' confidences (the top probability) fall in M equal bins
  ``B_m = ((m - 1) / M, m / M]`` (a confidence of 0 in the first); then
  ``ECE = sum_m |B_m| / n * |acc(B_m) - conf(B_m)|``, with ``acc`` the share of the bin's items the
  model got right and ``conf`` their mean confidence. In [0, 1]; 0 for a calibrated model. M = 15 by
  default, as Guo et al.
* **Interval**: the items are independent draws (a held-out set), so they are resampled with
  replacement (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13). The plug-in ECE
  is biased upward (each bin's gap is the absolute value of a noisy difference, so noise adds to it;
  Kumar, Liang & Ma 2019, "Verified Uncertainty Calibration", NeurIPS, section 5), and the percentile
  interval inherits that bias: in the simulation of ``benchmarks/ece_coverage.py`` it missed a
  calibrated model's ECE almost always. The **basic bootstrap** interval
  ``[2 ECE - q_(97.5%), 2 ECE - q_(2.5%)]`` (Davison & Hinkley 1997, "Bootstrap Methods and their
  Application", eq. 5.6) reflects the resamples about the estimate, which removes the bootstrap's
  estimate of the bias; clipped to [0, 1]. Its coverage is in docs/measurements.md.
* **Paired difference** (two models on the same items, e.g. a target before and after training with
  new examples): the same resampled items for both, so the interval of ``ECE_b - ECE_a`` reflects that
  the items are shared (basic bootstrap again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BINS = 15
SAMPLES = 2000


def _arrays(confidences: Sequence[float], correct: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(confidences, dtype=float)
    y = np.asarray(correct, dtype=float)
    if c.ndim != 1 or c.shape != y.shape:
        raise ValueError(f"{c.shape} confidences but {y.shape} correctness flags")
    if not len(c):
        raise ValueError("no items")
    if not np.isfinite(c).all() or (c < 0).any() or (c > 1).any():
        raise ValueError("confidences must be probabilities in [0, 1]")
    return c, y


def bin_index(confidences: np.ndarray, bins: int = BINS) -> np.ndarray:
    """The bin of each confidence: ``ceil(c * M) - 1`` clipped to [0, M - 1] (bins closed on the right,
    0 in the first)."""
    return np.clip(np.ceil(confidences * bins).astype(int) - 1, 0, bins - 1)


def _ece_of_weights(
    c: np.ndarray, y: np.ndarray, index: np.ndarray, weights: np.ndarray, bins: int
) -> np.ndarray:
    """ECE of each row of ``weights`` ((B, n) multiplicities of the items): one resample per row."""
    rows = weights.shape[0]
    offset = (np.arange(rows)[:, None] * bins + index[None, :]).ravel()
    size = rows * bins
    # |B_m| / n * |acc - conf| = |sum of right answers - sum of confidences| / n, per bin.
    hits = np.bincount(offset, weights=(weights * y).ravel(), minlength=size).reshape(rows, bins)
    conf = np.bincount(offset, weights=(weights * c).ravel(), minlength=size).reshape(rows, bins)
    total = weights.sum(axis=1)
    return np.abs(hits - conf).sum(axis=1) / total


def expected_calibration_error(
    confidences: Sequence[float], correct: Sequence[bool], *, bins: int = BINS
) -> float:
    """The ECE (module docstring) of items with these top-label ``confidences`` (in [0, 1]) and
    ``correct`` flags (the top label was right).

    Raises:
        ValueError: no items, shapes differ, or a confidence outside [0, 1] or not finite.
    """
    c, y = _arrays(confidences, correct)
    return float(_ece_of_weights(c, y, bin_index(c, bins), np.ones((1, len(c))), bins)[0])


def _multiplicities(n: int, samples: int, seed: int) -> np.ndarray:
    """(samples, n) counts of each item in a resample of n drawn with replacement."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=samples).astype(float)


def _basic(estimate: float, resampled: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    low_q, high_q = np.quantile(resampled, [alpha, 1 - alpha])
    return 2 * estimate - high_q, 2 * estimate - low_q


@dataclass(frozen=True)
class Calibration:
    """A model's ECE on ``n`` items with its 95% basic-bootstrap ``interval`` and its accuracy."""

    ece: float
    interval: tuple[float, float]
    accuracy: float
    n: int


def calibration(
    confidences: Sequence[float],
    correct: Sequence[bool],
    *,
    bins: int = BINS,
    samples: int = SAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> Calibration:
    """The ECE with its basic-bootstrap interval over items (module docstring), clipped to [0, 1].

    Raises:
        ValueError: as ``expected_calibration_error``.
    """
    c, y = _arrays(confidences, correct)
    index = bin_index(c, bins)
    estimate = float(_ece_of_weights(c, y, index, np.ones((1, len(c))), bins)[0])
    resampled = _ece_of_weights(c, y, index, _multiplicities(len(c), samples, seed), bins)
    low, high = _basic(estimate, resampled, confidence)
    return Calibration(estimate, (max(0.0, low), min(1.0, high)), float(y.mean()), len(c))


def paired_difference(
    before: tuple[Sequence[float], Sequence[bool]],
    after: tuple[Sequence[float], Sequence[bool]],
    *,
    bins: int = BINS,
    samples: int = SAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, tuple[float, float]]:
    """``ECE(after) - ECE(before)`` of two models on the same items (each ``(confidences, correct)``,
    in the same item order), with its basic-bootstrap interval from resampling the items jointly.

    Raises:
        ValueError: the two hold different numbers of items, or as ``expected_calibration_error``.
    """
    c0, y0 = _arrays(*before)
    c1, y1 = _arrays(*after)
    if len(c0) != len(c1):
        raise ValueError(f"{len(c0)} items before but {len(c1)} after")
    weights = _multiplicities(len(c0), samples, seed)
    ones = np.ones((1, len(c0)))
    i0, i1 = bin_index(c0, bins), bin_index(c1, bins)
    estimate = float(_ece_of_weights(c1, y1, i1, ones, bins)[0] - _ece_of_weights(c0, y0, i0, ones, bins)[0])
    resampled = _ece_of_weights(c1, y1, i1, weights, bins) - _ece_of_weights(c0, y0, i0, weights, bins)
    return estimate, _basic(estimate, resampled, confidence)
