"""The judge-corrected failure rate (core/rogan_gladen.py): hand-worked values, Wilson intervals of Se
and Sp against statsmodels, the refusals, and the bootstrap interval."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from core.rogan_gladen import corrected_rate, judge_errors


def validation(a: int, b: int, c: int, d: int) -> tuple[list[bool], list[bool]]:
    """Judge and people's verdicts with the 2 x 2 cells a (both failed), b (only people), c (only the
    judge), d (neither)."""
    judge = [True] * a + [False] * b + [True] * c + [False] * d
    people = [True] * (a + b) + [False] * (c + d)
    return judge, people


def test_sensitivity_and_specificity_by_hand():
    errors = judge_errors(*validation(14, 6, 8, 72))
    # Se = 14 / 20 = 0.7, Sp = 72 / 80 = 0.9.
    assert (errors.n, errors.cells, errors.sensitivity, errors.specificity) == (100, (14, 6, 8, 72), 0.7, 0.9)
    assert errors.sensitivity_interval == pytest.approx(proportion_confint(14, 20, method="wilson"))
    assert errors.specificity_interval == pytest.approx(proportion_confint(72, 80, method="wilson"))


def test_the_correction_by_hand():
    # The judge says 110 of 500 failed (p = 0.22); r = (0.22 + 0.9 - 1) / (0.7 + 0.9 - 1) = 0.12 / 0.6
    # = 0.2: it missed 30% of failures and flagged 10% of good answers, and the two nearly cancel.
    got = corrected_rate(*validation(14, 6, 8, 72), [True] * 110 + [False] * 390)
    assert got.refused is None
    assert (got.observed, got.outputs) == (0.22, 500)
    assert got.corrected == pytest.approx(0.2)
    low, high = got.interval
    assert low < 0.2 < high and high - low < 0.5
    assert got.undefined_share == 0.0
    # A judge saying "failed" less often than its false positives explain: clipped to 0.
    assert corrected_rate(*validation(14, 6, 8, 72), [True] * 5 + [False] * 95).corrected == 0.0
    # ... and more often than it could with every output failed: clipped to 1 (p = 0.9 > Se = 0.7).
    assert corrected_rate(*validation(14, 6, 8, 72), [True] * 90 + [False] * 10).corrected == 1.0


def test_the_interval_carries_the_uncertainty_of_se_and_sp():
    # The same judge measured on 10 times fewer validation items: a wider interval around the same r.
    many = corrected_rate(*validation(140, 60, 80, 720), [True] * 110 + [False] * 390)
    few = corrected_rate(*validation(14, 6, 8, 72), [True] * 110 + [False] * 390)
    assert many.corrected == pytest.approx(few.corrected)
    assert (many.interval[1] - many.interval[0]) < 0.6 * (few.interval[1] - few.interval[0])


@pytest.mark.parametrize(
    "cells, reason",
    [
        ((5, 2, 2, 10), "fewer than 20 outputs judged by both people and the judge (19)"),
        ((0, 0, 5, 20), "people settled no output as failed"),
        ((10, 10, 10, 10), "no better than chance: sensitivity 0.50 + specificity 0.50 <= 1"),
    ],
)
def test_refusals_say_why(cells, reason):
    got = corrected_rate(*validation(*cells), [True, False])
    assert (got.corrected, got.interval) == (None, None)
    assert reason in got.refused
    assert got.observed == 0.5  # the raw rate is still given


def test_no_output_left_to_correct():
    got = corrected_rate(*validation(14, 6, 8, 72), [])
    assert got.refused == "no output left that people did not judge" and got.observed is None


def test_bad_input():
    with pytest.raises(ValueError, match="judge verdicts"):
        judge_errors([True], [True, False])
    with pytest.raises(ValueError, match="confidence"):
        corrected_rate([True], [True], [True], confidence=0)
