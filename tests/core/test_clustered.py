"""Rates with intervals across people (core/clustered.py): hand-worked values, the reference packages
(scipy's bootstrap over paired samples, statsmodels' cluster-robust variance) and the edge cases."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from core.clustered import (
    BOOTSTRAP,
    MIN_PEOPLE,
    WILSON_EFFECTIVE,
    WILSON_PEOPLE,
    PeopleResample,
    clustered_rates,
    clustered_ratio_interval,
    effective_sample_size,
    ratios,
)

# Five people: (verified failures, conversations judged).
Y = [0, 1, 2, 0, 3]
N = [2, 2, 4, 1, 3]


def test_effective_sample_size_by_hand():
    # R = 6/12 = 0.5; residuals y - R n = -1, 0, 0, -0.5, 1.5, squares sum 3.5;
    # V = 5/4 * 3.5 / 144 = 0.030382; n_eff = 0.25 / V = 8.2286 (of 12 conversations).
    assert effective_sample_size(Y, N) == pytest.approx(0.25 / (5 / 4 * 3.5 / 144))
    assert effective_sample_size(Y, N) == pytest.approx(8.228571, abs=1e-6)
    [got] = clustered_rates(Y, N)
    assert (got.successes, got.n, got.people, got.rate) == (6, 12, 5, 0.5)
    assert got.effective_n == pytest.approx(8.228571, abs=1e-6)


def test_the_variance_is_statsmodels_cluster_robust_variance_of_a_mean():
    rng = np.random.default_rng(3)
    n = rng.integers(1, 9, size=40)
    y = rng.binomial(n, rng.beta(2, 6, size=40))
    person = np.repeat(np.arange(40), n)
    outcome = np.concatenate([[1] * k + [0] * (m - k) for k, m in zip(y, n, strict=True)])
    fit = sm.OLS(outcome, np.ones(len(outcome))).fit(
        cov_type="cluster", cov_kwds={"groups": person, "use_correction": False}
    )
    rate = y.sum() / n.sum()
    assert fit.params[0] == pytest.approx(rate)
    # statsmodels without its small-sample correction is sum_g (sum e)^2 / N^2; ours has m/(m-1) more.
    variance = fit.bse[0] ** 2 * 40 / 39
    assert effective_sample_size(y, n) == pytest.approx(rate * (1 - rate) / variance, rel=1e-9)


def test_one_conversation_each_is_the_independent_case():
    # Each person one conversation: the people are the conversations, so the clustered interval is the
    # usual one for a proportion, p +- 1.96 sqrt(p(1-p)/N) at N = 2000 (0.3: [0.2799, 0.3201]), and the
    # effective sample size is N - 1 (the m/(m-1) factor).
    y = np.array([1] * 600 + [0] * 1400)
    [got] = clustered_rates(y, np.ones(2000), samples=4000)
    half = 1.959964 * np.sqrt(0.3 * 0.7 / 2000)
    assert got.interval == pytest.approx((0.3 - half, 0.3 + half), abs=0.002)
    assert got.effective_n == pytest.approx(1999)
    assert got.method == BOOTSTRAP


def test_the_resampling_of_people_matches_scipys_paired_bootstrap():
    # The percentile interval of the resampled ratios, against scipy.stats.bootstrap resampling the
    # (y, n) pairs together: the same distribution, up to Monte Carlo error.
    rng = np.random.default_rng(5)
    n = rng.integers(1, 12, size=30)
    y = rng.binomial(n, rng.beta(1, 3, size=30))
    sums = PeopleResample(30, 20000, seed=1).sums(np.column_stack([y, n]))
    ours = np.quantile(ratios(sums[:, 0], sums[:, 1]), [0.025, 0.975])
    reference = stats.bootstrap(
        (y, n),
        lambda a, b, axis=-1: a.sum(axis=axis) / b.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=20000,
        method="percentile",
        rng=np.random.default_rng(2),
    ).confidence_interval
    assert ours == pytest.approx((reference.low, reference.high), abs=0.006)


def test_people_who_differ_widen_the_interval_beyond_wilsons():
    # Two kinds of people: five who always fool the model and fifteen who never do, 10 conversations
    # each. Wilson over 200 conversations treats 50 failures as independent; across people it is
    # 5 of 20 people, so the interval is near Wilson's over 20.
    y = [10] * 5 + [0] * 15
    [got] = clustered_rates(y, [10] * 20)
    assert got.rate == 0.25
    iid_width = got.iid_interval[1] - got.iid_interval[0]
    width = got.interval[1] - got.interval[0]
    assert width > 2.5 * iid_width
    assert got.effective_n == pytest.approx(19)  # each person one observation, times (m-1)/m
    assert got.interval[0] <= 0.25 <= got.interval[1]


def test_no_spread_between_people_falls_back_to_wilson_over_people():
    # No failure at all: Wilson's interval for 0 of 5 people, [0, 0.4345] (z = 1.96: centre
    # 0.38415/1.76829 = 0.21724, half the same).
    [got] = clustered_rates([0] * 5, [3, 4, 5, 1, 2])
    assert got.method == WILSON_PEOPLE
    assert got.interval == pytest.approx((0.0, 0.434482), abs=1e-6)
    assert got.effective_n == 15
    # Every person with the same rate, 1 of 4: Wilson for 1 of 5 people, [0.0362, 0.6245]
    # (centre 0.58415/1.76829 = 0.33035, half 1.10839 * sqrt(0.032 + 0.038415) = 0.29412).
    [same] = clustered_rates([1] * 5, [4] * 5)
    assert same.method == WILSON_PEOPLE
    assert same.interval == pytest.approx((0.036224, 0.624465), abs=1e-6)


def test_too_few_people_have_no_interval():
    [got] = clustered_rates([1, 0, 2, 1], [2, 3, 4, 1])
    assert MIN_PEOPLE == 5
    assert (got.people, got.rate, got.interval, got.method) == (4, 0.4, None, None)
    assert got.iid_interval is not None


def test_rows_of_one_table_and_a_row_without_attempts():
    y = np.array([[1, 0], [0, 0], [2, 0], [1, 0], [0, 0], [3, 0]])
    n = np.array([[2, 0], [3, 0], [4, 0], [1, 0], [2, 0], [5, 0]])
    first, empty = clustered_rates(y, n)
    assert first.rate == pytest.approx(7 / 17)
    assert (empty.rate, empty.interval, empty.effective_n, empty.people) == (None, None, None, 0)
    assert first.as_dict()["interval"] == list(first.interval)
    assert clustered_rates(y[:, 0], n[:, 0]) == [first]  # the same people drawn (same seed)


def test_cost_per_failure_is_unbounded_when_failures_are_rare():
    # One person of five has the only failure: a resample misses them with probability (4/5)^5 = 0.33.
    assert clustered_ratio_interval([1.0, 2.0, 1.0, 3.0, 1.0], [1, 0, 0, 0, 0])[1] == np.inf
    low, high = clustered_ratio_interval([1.0, 2.0, 1.0, 3.0, 1.0, 2.0], [1, 2, 1, 2, 1, 1])
    assert 0 <= low < 1.0 < high < np.inf  # 10 / 8 = 1.25 inside
    assert clustered_ratio_interval([1.0, 2.0], [1, 1]) is None


@pytest.mark.parametrize(
    "successes, attempts, message",
    [([1, 2], [1], "shape"), ([3], [2], "successes <= attempts"), ([-1], [2], "successes <= attempts")],
)
def test_bad_counts_are_refused(successes, attempts, message):
    with pytest.raises(ValueError, match=message):
        clustered_rates(successes, attempts)


def test_bad_confidence_is_refused():
    with pytest.raises(ValueError, match="confidence"):
        clustered_rates(Y, N, confidence=1.0)


def test_a_row_whose_successes_few_people_have_takes_wilson_on_the_effective_sample():
    # One person of eight found the only failure of 30 conversations. The bootstrap-t would drop every
    # resample without them (no t value) and collapse onto the rate ([0%, 3.8%] was seen); Wilson on the
    # effective sample (29.5 conversations here: the person's 1 of 4 barely differs from the rest) is
    # about Wilson's over the 30: [0.6%, 16.8%].
    [got] = clustered_rates([1, 0, 0, 0, 0, 0, 0, 0], [4, 4, 4, 4, 4, 3, 4, 3])
    assert got.method == WILSON_EFFECTIVE
    assert got.effective_n == pytest.approx(29.5058, abs=1e-4)
    assert got.interval == pytest.approx((0.00584, 0.16834), abs=1e-5)
    assert got.interval[1] > 0.1  # not collapsed onto the rate
