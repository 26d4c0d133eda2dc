"""Krippendorff's alpha, nominal and ordinal, with its bootstrap interval over items
(core/reliability.py): a hand-worked case, the ``krippendorff`` package, core.metrics' nominal alpha."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from core.metrics import krippendorff_alpha_nominal
from core.reliability import alpha, reliability


def test_by_hand():
    # yes-yes 4, no-no 2, yes-no 1, no-yes 1: n_yes 5, n_no 3, n 8; 1 - 7 * 2 / 30 = 16/30.
    units = [["yes", "yes"], ["no", "no"], ["yes", "no"], ["yes", "yes"], ["yes"]]  # the last pairs nothing
    got = reliability(units, "nominal", ["yes", "no"], samples=0)
    assert (got.items, got.answers, got.interval) == (4, 8, None)
    assert got.alpha == pytest.approx(16 / 30)
    # Ordinal on a 3-point scale, [[1, 1], [1, 2], [3, 3]]: o(1,1) 2, o(1,2) = o(2,1) 1, o(3,3) 2;
    # n_1 3, n_2 1, n_3 2, n 6. d2(1,2) = (3 + 1 - 2)^2 = 4, d2(1,3) = (6 - 2.5)^2 = 12.25,
    # d2(2,3) = (1 + 2 - 1.5)^2 = 2.25. Observed 2 * 4 = 8; expected 2 * (3 * 1 * 4 + 3 * 2 * 12.25 +
    # 1 * 2 * 2.25) = 2 * 90 = 180; alpha = 1 - 5 * 8 / 180 = 7/9.
    assert alpha([[1, 1], [1, 2], [3, 3]], "ordinal", [1, 2, 3]) == pytest.approx(7 / 9)


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_the_krippendorff_package(level, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, 40)
    data = np.where(rng.random((5, 40)) < 0.6, truth, rng.integers(1, 6, (5, 40))).astype(float)
    data[rng.random((5, 40)) < 0.35] = np.nan
    units = [[int(v) for v in data[:, u] if not np.isnan(v)] for u in range(40)]
    expected = krippendorff.alpha(
        reliability_data=data, level_of_measurement=level, value_domain=[1, 2, 3, 4, 5]
    )
    assert alpha(units, level, [1, 2, 3, 4, 5]) == pytest.approx(expected, abs=1e-12)
    if level == "nominal":
        assert alpha(units) == pytest.approx(krippendorff_alpha_nominal(units), abs=1e-12)


def test_the_interval_over_items():
    rng = np.random.default_rng(4)
    truth = rng.integers(1, 4, 200)
    units = [[t if rng.random() < 0.8 else rng.integers(1, 4) for _ in range(3)] for t in truth]
    got = reliability(units, "ordinal", [1, 2, 3])
    low, high = got.interval
    assert low < got.alpha < high and high - low < 0.2
    fewer = reliability(units[:40], "ordinal", [1, 2, 3])
    assert fewer.interval[1] - fewer.interval[0] > high - low  # fewer items, a wider interval
    assert reliability(units, "ordinal", [1, 2, 3]) == got  # seeded


def test_undefined_and_bad_input():
    assert alpha([["a", "a"], ["a", "a"]]) is None  # no variation
    assert reliability([["a"], ["b"]]).items == 0
    with pytest.raises(ValueError, match="level"):
        alpha([[1, 2]], "ratio")
    with pytest.raises(ValueError, match="rank order"):
        alpha([[1, 2]], "ordinal")
