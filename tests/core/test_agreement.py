"""Cohen's kappa and the paired bootstrap of core.agreement against values computed by hand, with
scikit-learn's cohen_kappa_score and a plain item-resampling bootstrap as cross-checks (test only)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from core.agreement import NO_ITEMS, ONE_LABEL, Agreement, agreement, cohen_kappa

U, S = "unsafe", "safe"

# Ten items, judge's label first, people's second:
#                 people U   people S   judge's total
#   judge U          4          1            5
#   judge S          2          3            5
#   people's total   6          4           10
# p_o = (4 + 3) / 10 = 0.7
# p_e = (5/10)(6/10) + (5/10)(4/10) = 0.30 + 0.20 = 0.5
# kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
JUDGE = [U] * 4 + [U] + [S] * 2 + [S] * 3
PEOPLE = [U] * 4 + [S] + [U] * 2 + [S] * 3


def test_two_by_two_kappa_by_hand():
    assert cohen_kappa(JUDGE, PEOPLE) == pytest.approx(0.4)
    # Kappa is symmetric in its two raters (the table is transposed, p_o and p_e unchanged).
    assert cohen_kappa(PEOPLE, JUDGE) == pytest.approx(0.4)
    result = agreement(JUDGE, PEOPLE, samples=200)
    assert result.n == 10
    assert result.kappa == pytest.approx(0.4)
    assert result.raw == pytest.approx(0.7)


def test_three_labels_by_hand():
    # Six items over three rubric answers (one emoji label, one RTL label):
    #   judge   a a b b c ✅
    #   people  a b b b c שלום
    # agree on items 1, 3, 4, 5 -> p_o = 4/6
    # judge's marginals:  a 2, b 2, c 1, ✅ 1     people's: a 1, b 3, c 1, שלום 1
    # p_e = (2*1 + 2*3 + 1*1 + 1*0 + 0*1) / 36 = 9/36 = 1/4
    # kappa = (4/6 - 1/4) / (3/4) = (8/12 - 3/12) / (9/12) = 5/9
    judge = ["a", "a", "b", "b", "c", "✅"]
    people = ["a", "b", "b", "b", "c", "שלום"]
    assert cohen_kappa(judge, people) == pytest.approx(5 / 9)
    assert cohen_kappa(judge, people) == pytest.approx(cohen_kappa_score(judge, people))


def test_edge_tables_by_hand():
    # Opposite on both items: p_o = 0, p_e = 1/2 * 1/2 + 1/2 * 1/2 = 1/2 -> kappa = -1.
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)
    # The judge says x always, people half x half y: p_o = 1/2, p_e = 1 * 1/2 = 1/2 -> kappa = 0.
    assert cohen_kappa(["x"] * 4, ["x", "x", "y", "y"]) == pytest.approx(0.0)
    # Always x against always y: p_o = 0, p_e = 1 * 0 = 0 -> kappa = 0.
    assert cohen_kappa(["x"] * 3, ["y"] * 3) == pytest.approx(0.0)


def test_both_constant_and_equal_is_undefined():
    # Five items, "failed" on both sides:
    #                 people F   judge's total
    #   judge F          5            5
    # p_o = 5/5 = 1, p_e = (5/5)(5/5) = 1 -> kappa = (1 - 1) / (1 - 1) = 0/0: undefined. A judge that says
    # "failed" to everything agrees with people who happened to see only failures, and kappa cannot tell
    # that from chance; scikit-learn's cohen_kappa_score says "undefined" and gives nan as well.
    with pytest.warns(UserWarning) as caught:  # scikit-learn also warns of the single label it found
        assert np.isnan(cohen_kappa_score(["failed"] * 5, ["failed"] * 5))
    assert any(isinstance(w.message, UndefinedMetricWarning) for w in caught)
    assert cohen_kappa(["failed"] * 5, ["failed"] * 5) is None
    result = agreement(["failed"] * 5, ["failed"] * 5, samples=100)
    assert (result.n, result.kappa, result.kappa_interval) == (5, None, None)
    assert result.kappa_undefined == ONE_LABEL == "one label on both sides"
    # Raw agreement is defined: every item agrees.
    assert (result.raw, result.raw_interval) == (1.0, (1.0, 1.0))


def test_resamples_with_one_label_on_both_sides_are_left_out_of_the_interval():
    # A judge that says "failed" to all 10 items; people settled 9 failed and 1 good:
    #                 people F   people G   judge's total
    #   judge F          9          1           10
    # p_o = 9/10, p_e = (10/10)(9/10) + (0/10)(1/10) = 9/10 -> kappa = 0 (a constant judge is chance).
    # Every resample holding the good item has the judge constant too: p_o = p_e, kappa exactly 0. A
    # resample without it (probability 0.9^10 = 0.35) has one label on both sides: undefined, left out
    # of the interval (it counted as 1.0 before, which put the interval's top at 1.0).
    judge, people = ["failed"] * 10, ["failed"] * 9 + ["good"]
    assert cohen_kappa(judge, people) == 0.0 == cohen_kappa_score(judge, people)
    result = agreement(judge, people, samples=1000, seed=4)
    assert (result.kappa, result.kappa_interval, result.kappa_undefined) == (0.0, (0.0, 0.0), None)


def test_labels_are_compared_by_equality_whatever_their_type():
    # 1 and "1" are different labels, None is a label of its own.
    # Items: (1, "1") disagree, (None, None) agree, ("1", "1") agree -> p_o = 2/3
    # judge: 1 -> 1, None -> 1, "1" -> 1;  people: "1" -> 2, None -> 1
    # p_e = (1*0 + 1*1 + 1*2) / 9 = 3/9 = 1/3 -> kappa = (2/3 - 1/3) / (2/3) = 1/2
    assert cohen_kappa([1, None, "1"], ["1", None, "1"]) == pytest.approx(0.5)


def test_empty_and_unequal_inputs():
    assert cohen_kappa([], []) is None
    assert agreement([], []) == Agreement(
        n=0, kappa=None, kappa_interval=None, raw=None, raw_interval=None, kappa_undefined=NO_ITEMS
    )
    with pytest.raises(ValueError, match="2 judge labels but 3"):
        cohen_kappa(["a", "b"], ["a", "b", "c"])
    with pytest.raises(ValueError):
        agreement(["a"], [])
    with pytest.raises(ValueError, match="samples"):
        agreement(["a"], ["a"], samples=-1)
    for confidence in (0, 1, 1.5):
        with pytest.raises(ValueError, match="confidence"):
            agreement(["a"], ["a"], confidence=confidence)


def test_against_scikit_learn_on_random_labels():
    rng = np.random.default_rng(3)
    for n, k in [(7, 2), (50, 3), (1000, 5)]:
        judge = rng.integers(0, k, n).tolist()
        people = [x if rng.random() < 0.6 else int(rng.integers(0, k)) for x in judge]
        assert cohen_kappa(judge, people) == pytest.approx(cohen_kappa_score(judge, people), abs=1e-12)


def _labels_with(n: int, agree: int) -> tuple[list[str], list[str]]:
    """n items, the first ``agree`` the same (alternating U and S), the rest opposite."""
    judge = [U if i % 2 else S for i in range(n)]
    people = [j if i < agree else (S if j == U else U) for i, j in enumerate(judge)]
    return judge, people


def test_raw_interval_matches_the_normal_approximation():
    # 400 items, 320 agree: p_o = 0.8. Resampling items makes the number agreeing Binomial(400, 0.8):
    # sd = sqrt(0.8 * 0.2 / 400) = 0.02, so the 95% interval is about 0.8 -+ 1.96 * 0.02 = (0.761, 0.839).
    judge, people = _labels_with(400, 320)
    result = agreement(judge, people, samples=4000, seed=1)
    assert result.raw == pytest.approx(0.8)
    low, high = result.raw_interval
    assert low == pytest.approx(0.761, abs=0.006)
    assert high == pytest.approx(0.839, abs=0.006)


def test_multinomial_bootstrap_matches_resampling_items():
    # Drawing the table's cell counts from a multinomial is the same distribution as resampling the
    # items' indices with replacement: both intervals agree to the Monte Carlo error.
    rng = np.random.default_rng(5)
    judge = rng.choice(["a", "b", "c"], 300).tolist()
    people = [x if rng.random() < 0.7 else str(rng.choice(["a", "b", "c"])) for x in judge]
    result = agreement(judge, people, samples=4000, seed=2)
    codes = {"a": 0, "b": 1, "c": 2}
    j = np.array([codes[x] for x in judge])
    p = np.array([codes[x] for x in people])
    idx = rng.integers(0, 300, (4000, 300))  # 4000 resamples of the 300 items' indices
    ji, pi = j[idx], p[idx]
    p_o = np.mean(ji == pi, axis=1)
    p_e = sum(np.mean(ji == k, axis=1) * np.mean(pi == k, axis=1) for k in range(3))
    kappas = (p_o - p_e) / (1 - p_e)
    # That formula is Cohen's kappa: scikit-learn agrees on the first resamples.
    for row in range(3):
        assert kappas[row] == pytest.approx(cohen_kappa_score(ji[row], pi[row]))
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert result.kappa_interval[0] == pytest.approx(low, abs=0.015)
    assert result.kappa_interval[1] == pytest.approx(high, abs=0.015)
    # The standard error's width is about 4 * sqrt(p_o (1 - p_o) / n) / (1 - p_e): far wider than the
    # tolerance, so the check has teeth.
    assert high - low > 0.1


def test_interval_contains_the_estimate_and_is_seeded():
    judge, people = _labels_with(200, 150)
    first = agreement(judge, people, seed=7)
    assert first == agreement(judge, people, seed=7)
    assert first.kappa_interval[0] <= first.kappa <= first.kappa_interval[1]
    assert first.raw_interval[0] <= first.raw <= first.raw_interval[1]
    assert agreement(judge, people, seed=8).kappa_interval != first.kappa_interval
    # p_o = 0.75, p_e = 0.5 (balanced labels both sides) -> kappa = 0.5
    assert first.kappa == pytest.approx(0.5)
    # A 90% interval is narrower than the 95% one from the same seed.
    narrower = agreement(judge, people, seed=7, confidence=0.9)
    assert (
        narrower.kappa_interval[1] - narrower.kappa_interval[0]
        < first.kappa_interval[1] - first.kappa_interval[0]
    )


def test_no_samples_means_no_interval():
    result = agreement(JUDGE, PEOPLE, samples=0)
    assert result.kappa == pytest.approx(0.4)
    assert result.kappa_interval is None and result.raw_interval is None
    assert result.raw == pytest.approx(0.7)
