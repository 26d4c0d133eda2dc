"""Comparing the arms of a randomised study of people (the annotation-assistant study, docs/domain.md,
"Annotation assistants"): a rate or a ratio per arm, and a permutation test of the difference between
two arms.

Pure functions (numpy, no Django). Each person is in one arm (assigned by the server, at random) and
gives a numerator and a denominator (examples and hours, fooling examples and examples...); an arm's
figure is the ratio of its sums (every example weighs the same). Intervals per arm come from
``core.clustered`` (people resampled within the arm).

**The test** (a re-randomisation test; Fisher 1935, "The Design of Experiments", section 21; Edgington &
Onghena 2007, "Randomization Tests", ch. 1): under the null hypothesis that the arm changes nothing,
every person's numbers would have been the same in the other arm, so the arms' labels may be shuffled
among the people of the two arms (their numbers per arm kept). The p-value is the share of shufflings
whose difference of ratios is at least as far from 0 as the one observed, counting the observed one
(``(1 + k) / (1 + B)``; Phipson & Smyth 2010, "Permutation P-values Should Never Be Zero"). The unit
shuffled is the person, as the unit randomised, so one prolific person cannot make a difference look
surer than it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SHUFFLES = 4000


def ratio_of_sums(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    """``sum numerators / sum denominators``; None when the denominators sum to 0."""
    bottom = float(np.sum(denominators))
    return float(np.sum(numerators)) / bottom if bottom > 0 else None


@dataclass(frozen=True)
class Difference:
    """``ratio(b) - ratio(a)`` of two arms, its two-sided permutation ``p_value`` from ``shuffles``
    shufflings, and the people in each arm. ``difference`` and ``p_value`` are None when either arm has
    no denominator."""

    difference: float | None
    p_value: float | None
    people_a: int
    people_b: int
    shuffles: int


def permutation_test(
    numerators_a: Sequence[float],
    denominators_a: Sequence[float],
    numerators_b: Sequence[float],
    denominators_b: Sequence[float],
    *,
    shuffles: int = SHUFFLES,
    seed: int = 0,
) -> Difference:
    """The difference of ratios between arm b and arm a (one entry per person) and its permutation test
    (module docstring).

    Raises:
        ValueError: the lengths within an arm differ, or a value is negative.
    """
    ya, na = np.asarray(numerators_a, float), np.asarray(denominators_a, float)
    yb, nb = np.asarray(numerators_b, float), np.asarray(denominators_b, float)
    if ya.shape != na.shape or yb.shape != nb.shape:
        raise ValueError("each arm needs one numerator and one denominator per person")
    if (ya < 0).any() or (na < 0).any() or (yb < 0).any() or (nb < 0).any():
        raise ValueError("numerators and denominators must not be negative")
    ra, rb = ratio_of_sums(ya, na), ratio_of_sums(yb, nb)
    if ra is None or rb is None:
        return Difference(None, None, len(ya), len(yb), 0)
    observed = rb - ra
    y, n = np.concatenate([ya, yb]), np.concatenate([na, nb])
    in_b = np.zeros(len(y), dtype=bool)
    in_b[len(ya) :] = True
    rng = np.random.default_rng(seed)
    # Each row a shuffling of the arms' labels among the people: (B, m) of True for arm b.
    labels = np.array([rng.permutation(in_b) for _ in range(shuffles)])
    top_b, bottom_b = labels @ y, labels @ n
    top_a, bottom_a = (~labels) @ y, (~labels) @ n
    with np.errstate(divide="ignore", invalid="ignore"):
        shuffled = top_b / bottom_b - top_a / bottom_a
    valid = np.isfinite(shuffled)
    extreme = int((np.abs(shuffled[valid]) >= abs(observed) - 1e-12).sum())
    p_value = (1 + extreme) / (1 + int(valid.sum()))
    return Difference(observed, p_value, len(ya), len(yb), int(valid.sum()))
