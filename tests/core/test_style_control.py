"""Style control (core/style_control.py): the counts of an answer's style, the fit against statsmodels'
logistic regression on the same rows, the plain Bradley-Terry fit when style never varies, and a
simulated length effect recovered within its interval."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from core.pairwise import fit_bradley_terry
from core.style_control import FEATURES, StyledVote, _design, style_controlled, style_counts

PLAIN = {"length": 10, "headers": 0, "lists": 0, "bold": 0}


def test_style_counts():
    text = "# Title\n\nSome **bold** and __more__ text.\n\n- one\n* two\n3. three\n#not a header\n"
    # 16 white-space separated words, markers included ("#", "-", "*", "3."); "#not" is no header.
    assert style_counts(text) == {"length": 16, "headers": 1, "lists": 3, "bold": 2}
    assert style_counts("") == {"length": 0, "headers": 0, "lists": 0, "bold": 0}


def test_without_style_differences_it_is_the_plain_bradley_terry_fit():
    votes = [("x", "y", "a")] * 3 + [("x", "y", "b"), ("y", "z", "a"), ("x", "z", "tie")]
    styled = [StyledVote(a, b, o, PLAIN, PLAIN) for a, b, o in votes]
    got = style_controlled(styled, samples=0)
    plain = fit_bradley_terry(votes)
    for key in "xyz":
        assert got.scores[key] == pytest.approx(plain[key], abs=1e-6)
    assert got.coefficients == dict.fromkeys(FEATURES)


def _simulated(n, beta, seed):
    """Five models of known strength; each vote's answers have random lengths, and the log-odds of a
    winning is theta_a - theta_b + beta * (the standardised normalised length difference). No ties."""
    rng = random.Random(seed)
    theta = {f"m{i}": t for i, t in enumerate((0.8, 0.4, 0.0, -0.4, -0.8))}
    raw = []
    for _ in range(n):
        a, b = rng.sample(sorted(theta), 2)
        la, lb = rng.randint(5, 300), rng.randint(5, 300)
        raw.append((a, b, la, lb, (la - lb) / (la + lb + 1)))
    d = np.array([r[4] for r in raw])
    mean, sd = d.mean(), d.std()
    votes = []
    for a, b, la, lb, diff in raw:
        p = 1 / (1 + math.exp(-(theta[a] - theta[b] + beta * (diff - mean) / sd)))
        outcome = "a" if rng.random() < p else "b"
        votes.append(StyledVote(a, b, outcome, {**PLAIN, "length": la}, {**PLAIN, "length": lb}))
    return theta, votes


def test_the_fit_is_statsmodels_logistic_regression_on_the_same_rows():
    import statsmodels.api as sm

    _, votes = _simulated(600, 0.5, seed=3)
    votes[0] = StyledVote(votes[0].a, votes[0].b, "tie", votes[0].style_a, votes[0].style_b)
    got = style_controlled(votes, samples=0)
    keys = list(dict.fromkeys(k for v in votes for k in (v.a, v.b)))
    left, right, cov, y, w, _, _ = _design(votes, keys, 1.0)
    x = np.zeros((len(y), len(keys) + cov.shape[1]))
    x[np.arange(len(y)), left] += 1
    x[np.arange(len(y)), right] -= 1
    x[:, len(keys) :] = cov
    reference = sm.GLM(y, np.delete(x, 0, axis=1), family=sm.families.Binomial(), freq_weights=w).fit(
        tol=1e-12
    )
    assert got.coefficients["length"] == pytest.approx(reference.params[-1], abs=1e-8)
    # Model 0 pinned at 0 in statsmodels: the differences of log-strengths agree.
    theta = np.concatenate([[0.0], reference.params[: len(keys) - 1]])
    points = 400 / math.log(10)
    for i, key in enumerate(keys):
        assert got.scores[key] - got.scores[keys[0]] == pytest.approx(points * theta[i], abs=1e-5)


def test_a_simulated_length_effect_is_recovered_within_its_interval():
    """3,000 votes with beta 0.5: the estimate's interval holds 0.5, and the style-controlled scores
    keep the models' order; the other features never vary and have no coefficient."""
    theta, votes = _simulated(3000, 0.5, seed=11)
    got = style_controlled(votes, samples=100, seed=1)
    low, high = got.coefficient_intervals["length"]
    assert low <= 0.5 <= high and 0.3 < got.coefficients["length"] < 0.7
    assert sorted(theta, key=lambda k: -got.scores[k]) == sorted(theta, key=lambda k: -theta[k])
    assert got.coefficients["bold"] is None and got.coefficient_intervals["bold"] is None


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="against itself"):
        style_controlled([StyledVote("x", "x", "a", PLAIN, PLAIN)])
    with pytest.raises(ValueError, match="unknown outcome"):
        style_controlled([StyledVote("x", "y", "maybe", PLAIN, PLAIN)])
    with pytest.raises(ValueError, match="prior"):
        style_controlled([], prior=-1)
    assert style_controlled([]).scores == {}


def test_a_feature_that_differs_in_too_few_votes_gets_no_coefficient():
    """Bold differs between the answers in 2 of 600 votes (fewer than MIN_VARIED = 10): one vote cannot
    bear a coefficient, so it has none, and says in how many votes it differed; length still has one."""
    from core.style_control import MIN_VARIED

    _, votes = _simulated(600, 0.5, seed=4)
    for k in (0, 1):
        v = votes[k]
        votes[k] = StyledVote(v.a, v.b, v.outcome, {**v.style_a, "bold": 1}, v.style_b)
    got = style_controlled(votes, samples=20)
    assert MIN_VARIED == 10 and got.varied["bold"] == 2 and got.coefficients["bold"] is None
    assert got.coefficient_intervals["bold"] is None and got.coefficients["length"] is not None
    row = next(c for c in got.as_dict()["coefficients"] if c["feature"] == "bold")
    assert (row["coefficient"], row["varied"]) == (None, 2)
