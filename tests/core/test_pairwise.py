"""Bradley-Terry ranking of core.pairwise against values derived by hand, with a direct maximisation of
the log-likelihood by scipy as a cross-check (test only), and the arena's pair draw against its rule."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize

from core.pairwise import (
    OUTCOMES,
    Ranking,
    Vote,
    draw_pair,
    fit_bradley_terry,
    pair_probabilities,
    pair_weights,
    rank,
)

POINTS = 400 / math.log(10)  # score points per unit of natural-log strength


def votes(a, b, outcome, n):
    return [Vote(a, b, outcome)] * n


def test_two_models_three_wins_to_one():
    # MLE: p_A / (p_A + p_B) = 3/4 -> p_A / p_B = 3 -> gap 400 log10(3) = 190.85 points; geometric
    # mean 1 -> p_A = sqrt(3), p_B = 1/sqrt(3) -> scores 1000 +- 95.42.
    scores = fit_bradley_terry(votes("A", "B", "a", 3) + votes("A", "B", "b", 1), prior=0)
    assert scores["A"] - scores["B"] == pytest.approx(400 * math.log10(3), abs=1e-4)
    assert scores["A"] == pytest.approx(1000 + 200 * math.log10(3), abs=1e-4)
    assert scores["A"] == pytest.approx(1095.424, abs=1e-3)
    assert scores["A"] + scores["B"] == pytest.approx(2000)


# Three models with strengths 4 : 2 : 1 and votes in exactly the Bradley-Terry proportions:
#   A-B: P(A) = 4/6 = 2/3 -> A 2, B 1;   B-C: 2/3 -> B 2, C 1;   A-C: 4/5 -> A 4, C 1.
# The likelihood equations W_i = sum_j N_ij p_i / (p_i + p_j) hold at p = (4, 2, 1):
#   A: 2 + 4 = 6 = 3 * 2/3 + 5 * 4/5;  B: 1 + 2 = 3 = 3 * 1/3 + 3 * 2/3;  C: 1 + 1 = 2 = 3 * 1/3 + 5 * 1/5.
# The graph is strongly connected, so that is the unique MLE. Geometric mean (4 * 2 * 1)^(1/3) = 2, so
# the strengths are 2, 1, 1/2: scores 1000 + 400 log10(2) = 1120.41, 1000, 879.59.
THREE = votes("A", "B", "a", 2) + votes("A", "B", "b", 1)
THREE += votes("B", "C", "a", 2) + votes("C", "B", "a", 1)
THREE += votes("C", "A", "b", 4) + votes("A", "C", "b", 1)
THREE_SCORES = {"A": 1000 + 400 * math.log10(2), "B": 1000.0, "C": 1000 - 400 * math.log10(2)}


def test_three_models_closed_form():
    scores = fit_bradley_terry(THREE, prior=0)
    assert scores == pytest.approx(THREE_SCORES, abs=1e-4)
    assert scores["A"] == pytest.approx(1120.412, abs=1e-3)
    # (a, b, outcome) tuples are accepted as well as Vote objects.
    assert fit_bradley_terry([(v.a, v.b, v.outcome) for v in THREE], prior=0) == pytest.approx(scores)


def test_ties_and_both_bad_count_as_half_a_win_each():
    # A's 2 wins to 1 over B become 1 win and 2 ties (A: 1 + 2/2 = 2, B: 0 + 2/2 = 1), and B's 2 wins
    # to 1 over C become 1 win and 2 "both bad": the wins per pair are unchanged, so is the MLE.
    with_ties = votes("A", "B", "a", 1) + votes("A", "B", "tie", 2)
    with_ties += votes("B", "C", "a", 1) + votes("C", "B", "both_bad", 2)
    with_ties += votes("C", "A", "b", 4) + votes("A", "C", "b", 1)
    assert fit_bradley_terry(with_ties, prior=0) == pytest.approx(THREE_SCORES, abs=1e-4)
    # Only ties: every model equal.
    assert fit_bradley_terry(votes(1, 2, "tie", 3) + votes(2, 3, "both_bad", 1)) == pytest.approx(
        {1: 1000.0, 2: 1000.0, 3: 1000.0}
    )


def test_prior_on_an_undefeated_model():
    # A beat B 3 times, never lost: the MLE is infinite. The prior's pseudo-ties add prior/2 wins to each
    # side: prior 1 -> 3.5 / 0.5 = 7 -> 400 log10(7) = 338.04 points; prior 0.5 -> 3.25 / 0.25 = 13 ->
    # 445.58 points; prior 2 -> 4 / 1 = 4 -> 240.82 points.
    three_wins = votes("A", "B", "a", 3)
    for prior, ratio in [(1.0, 7), (0.5, 13), (2.0, 4)]:
        scores = fit_bradley_terry(three_wins, prior=prior)
        assert scores["A"] - scores["B"] == pytest.approx(400 * math.log10(ratio), abs=1e-4)
    assert fit_bradley_terry(three_wins)["A"] - 1000 == pytest.approx(200 * math.log10(7), abs=1e-4)
    # Without the prior the estimate is infinite: prior 0 is fitted as 1e-9 pseudo-ties, a huge finite
    # gap of 400 log10(3 / 5e-10) = 3911.25 points, never an error, and never a crash in the bootstrap
    # (a resample of A's 3 wins and a single tie can hold 4 wins or 4 ties).
    scores = fit_bradley_terry(three_wins, prior=0)
    assert scores["A"] - scores["B"] == pytest.approx(400 * math.log10(3 / 5e-10), abs=0.01)
    ranking = rank(three_wins + [Vote("A", "B", "tie")], prior=0, samples=50)
    low, high = ranking.intervals["A"]
    assert 1000 < low < ranking.scores["A"] < high < 7000
    # The prior's pull fades with votes: 15 to 5 gives 15.5 / 5.5 (179.99 points) instead of 3 (190.85).
    scores = fit_bradley_terry(votes("A", "B", "a", 15) + votes("A", "B", "b", 5))
    assert scores["A"] - scores["B"] == pytest.approx(400 * math.log10(15.5 / 5.5), abs=1e-4)


def test_order_of_sides_does_not_matter():
    # A vote (B, A, "b") is the same fact as (A, B, "a").
    swapped = [Vote(v.b, v.a, {"a": "b", "b": "a"}.get(v.outcome, v.outcome)) for v in THREE]
    assert fit_bradley_terry(swapped, prior=0) == pytest.approx(THREE_SCORES, abs=1e-4)


def _direct_mle(vote_list, prior):
    """Maximise sum over pairs of w_ij log q_ij + w_ji log q_ji (q_ij = 1 / (1 + exp(t_j - t_i)), ties as
    half wins, prior/2 pseudo-wins each side of each pair that played) with scipy's BFGS."""
    keys = sorted({k for v in vote_list for k in (v.a, v.b)})
    index = {k: i for i, k in enumerate(keys)}
    wins: dict[tuple[int, int], float] = {}
    for v in vote_list:
        i, j = index[v.a], index[v.b]
        share = {"a": (1.0, 0.0), "b": (0.0, 1.0)}.get(v.outcome, (0.5, 0.5))
        wins[i, j] = wins.get((i, j), 0.0) + share[0]
        wins[j, i] = wins.get((j, i), 0.0) + share[1]
    for i, j in list(wins):
        wins[i, j] += prior / 2
    pairs = np.array(list(wins))
    weights = np.array(list(wins.values()))

    def minus_ll(theta):
        diff = theta[pairs[:, 1]] - theta[pairs[:, 0]]
        value = np.sum(weights * np.logaddexp(0, diff))
        q = 1 / (1 + np.exp(-diff))  # P(the second beats the first)
        grad = np.zeros_like(theta)
        np.add.at(grad, pairs[:, 1], weights * q)
        np.add.at(grad, pairs[:, 0], -weights * q)
        return value, grad

    theta = minimize(minus_ll, np.zeros(len(keys)), jac=True, method="BFGS", options={"gtol": 1e-10}).x
    theta -= theta.mean()
    return {k: 1000 + POINTS * theta[index[k]] for k in keys}


def test_against_a_direct_maximisation_of_the_likelihood():
    rng = random.Random(4)
    strength = {m: 10 ** rng.uniform(-1, 1) for m in range(8)}
    vote_list = []
    for _ in range(300):
        a, b = rng.sample(range(8), 2)
        r = rng.random()
        if r < 0.15:
            vote_list.append(Vote(a, b, rng.choice(["tie", "both_bad"])))
        else:
            vote_list.append(
                Vote(a, b, "a" if r < 0.15 + 0.85 * strength[a] / (strength[a] + strength[b]) else "b")
            )
    for prior in (0.0, 1.0):
        assert fit_bradley_terry(vote_list, prior=prior) == pytest.approx(
            _direct_mle(vote_list, prior), abs=1e-3
        )


def test_thinly_linked_models_converge():
    # A chain of 30 models, each linked to the next by 10 votes: plain MM needs thousands of steps here.
    rng = random.Random(9)
    chain = [Vote(i, i + 1, "a" if rng.random() < 0.6 else "b") for i in range(29) for _ in range(10)]
    assert fit_bradley_terry(chain) == pytest.approx(_direct_mle(chain, 1.0), abs=1e-3)
    ranking = rank(chain, samples=50)
    for key, (low, high) in ranking.intervals.items():
        assert low <= ranking.scores[key] <= high


def test_models_without_votes_and_no_votes_at_all():
    ranking = rank(votes("A", "B", "a", 3) + votes("A", "B", "b", 1), models=["C", "A"], samples=50, prior=0)
    assert ranking.scores["C"] == 1000.0
    assert ranking.intervals["C"] is None
    assert ranking.scores["A"] == pytest.approx(1000 + 200 * math.log10(3), abs=1e-4)
    assert ranking.votes_of("C") == 0 and ranking.votes_of("A") == 4
    assert ranking.rank_interval("C") == (1, 3)
    assert ranking.width("C") == math.inf

    empty = rank([], models=[7, 8])
    assert empty.scores == {7: 1000.0, 8: 1000.0}
    assert empty.intervals == {7: None, 8: None}
    assert (empty.n_votes, empty.samples, empty.votes_per_pair) == (0, 0, {})
    assert fit_bradley_terry([], models=[7]) == {7: 1000.0}
    assert rank([]).scores == {}


def test_separate_parts_are_each_centred():
    # A-B (3 to 1) and C-D (1 to 1) share no vote: each part has its own geometric mean 1.
    scores = fit_bradley_terry(
        votes("A", "B", "a", 3) + votes("A", "B", "b", 1) + [Vote("C", "D", "a"), Vote("C", "D", "b")],
        prior=0,
    )
    assert scores == pytest.approx(
        {"A": 1000 + 200 * math.log10(3), "B": 1000 - 200 * math.log10(3), "C": 1000.0, "D": 1000.0}, abs=1e-4
    )


def test_votes_per_pair_and_count():
    ranking = rank(THREE + [Vote("B", "A", "tie")], samples=10)
    # THREE: A-B 3, B-C 3, A-C 5 votes, and one more A-B tie.
    assert ranking.n_votes == 12
    assert ranking.votes_per_pair == {
        frozenset({"A", "B"}): 4,
        frozenset({"B", "C"}): 3,
        frozenset({"A", "C"}): 5,
    }


def test_bootstrap_interval_of_two_models_by_hand():
    # 100 votes, A wins 60 (prior 0). Resampling the votes makes A's wins k ~ Binomial(100, 0.6)
    # (sd 4.9), whose 2.5% and 97.5% quantiles are about 60 -+ 1.96 * 4.9 = 50.4 and 69.6; exactly
    # 50 and 69 (P(k <= 49) = 0.017, P(k <= 50) = 0.027; P(k <= 68) = 0.960, P(k <= 69) = 0.975).
    # A's score is 1000 + 200 log10(k / (100 - k)): k = 50 -> 1000, k = 69 -> 1000 + 200 log10(69/31) =
    # 1069.50; the estimate k = 60 -> 1035.22. One win more or less moves a bound by about 3.5 points,
    # the tolerance.
    ranking = rank(votes("A", "B", "a", 60) + votes("A", "B", "b", 40), samples=2000, seed=3, prior=0)
    assert ranking.scores["A"] == pytest.approx(1000 + 200 * math.log10(1.5), abs=1e-4)
    low, high = ranking.intervals["A"]
    assert low == pytest.approx(1000.0, abs=3.6)
    assert high == pytest.approx(1000 + 200 * math.log10(69 / 31), abs=3.6)
    # B's interval mirrors A's around 1000.
    assert ranking.intervals["B"] == pytest.approx((2000 - high, 2000 - low))


def test_intervals_contain_the_estimate_and_are_seeded():
    rng = random.Random(1)
    vote_list = [Vote(*rng.sample("PQRSTU", 2), rng.choice(OUTCOMES)) for _ in range(200)]
    vote_list += [Vote("P", "V", "a")]  # one vote: every resample holds it or not
    first = rank(vote_list, samples=100, seed=11)
    assert first == rank(vote_list, samples=100, seed=11)
    assert rank(vote_list, samples=100, seed=12).intervals != first.intervals
    assert first.samples == 100 and first.confidence == 0.95
    for key, (low, high) in first.intervals.items():
        assert low <= first.scores[key] <= high
    narrower = rank(vote_list, samples=100, seed=11, confidence=0.5)
    assert narrower.width("P") < first.width("P")
    assert sum(first.scores.values()) / len(first.scores) == pytest.approx(1000.0)


def test_order_rank_and_rank_interval():
    ranking = Ranking(
        scores={"A": 1100.0, "B": 1000.0, "C": 1000.0, 4: 900.0},
        intervals={"A": (1050.0, 1150.0), "B": (990.0, 1010.0), "C": (900.0, 1005.0), 4: None},
        votes_per_pair={},
        n_votes=0,
        samples=0,
    )
    assert ranking.order() == ["A", "B", "C", 4]
    assert [ranking.rank_of(k) for k in ["A", "B", "C", 4]] == [1, 2, 2, 4]
    # A: nobody wholly above; B's and C's intervals lie wholly below A's (1010, 1005 < 1050) -> (1, 4 - 2).
    # B: A wholly above (1050 > 1010); nothing wholly below 990 (C reaches 1005; 4 has no interval).
    # C: A above (1050 > 1005), B not (990 < 1005).
    assert ranking.rank_interval("A") == (1, 2)
    assert ranking.rank_interval("B") == (2, 4)
    assert ranking.rank_interval("C") == (2, 4)
    assert ranking.rank_interval(4) == (1, 4)
    with pytest.raises(KeyError):
        ranking.rank_of("Z")


def test_bad_input():
    with pytest.raises(ValueError, match="unknown outcome 'A'"):
        fit_bradley_terry([Vote(1, 2, "A")])
    with pytest.raises(ValueError, match="against itself"):
        rank([Vote(1, 1, "tie")])
    with pytest.raises(ValueError, match="prior"):
        fit_bradley_terry([], prior=-1)
    with pytest.raises(ValueError, match="prior"):
        rank([], prior=math.inf)
    with pytest.raises(ValueError, match="samples"):
        rank([], samples=-1)
    with pytest.raises(ValueError, match="confidence"):
        rank([], confidence=1)


def _ranking(scores, intervals, votes_per_pair):
    """A ranking built by hand, for the pair draw."""
    return Ranking(scores=scores, intervals=intervals, votes_per_pair=votes_per_pair, n_votes=1, samples=10)


def _frequencies(ranking, models, draws, seed):
    rng = random.Random(seed)
    counts = dict.fromkeys(pair_weights(ranking, models), 0)
    for _ in range(draws):
        counts[draw_pair(ranking, models, rng=rng)] += 1
    return counts


def _within_binomial(count, draws, p, z=4.0):
    """|count - n p| within z binomial standard deviations (z = 4: a two-sided 6e-5 chance per pair of a
    false alarm for a fair draw; the seeds are fixed anyway)."""
    return abs(count - draws * p) <= z * math.sqrt(draws * p * (1 - p))


def test_the_pair_draw_follows_the_rule_wide_intervals_and_rarely_played_pairs():
    # Widths: A 40, B 200, C 40, D 40 points. Votes: AB 5, AC 9, AD 0, BC 5, BD 1, CD 9.
    # Rule: weight (w_i + w_j) / (1 + n_ij):
    #   AB 240 / 6 = 40, AC 80 / 10 = 8, AD 80 / 1 = 80, BC 240 / 6 = 40, BD 240 / 2 = 120, CD 80 / 10 = 8
    #   sum 296 -> P = 40/296, 8/296, 80/296, 40/296, 120/296, 8/296.
    ranking = _ranking(
        {"A": 1100.0, "B": 1000.0, "C": 990.0, "D": 900.0},
        {"A": (1080.0, 1120.0), "B": (900.0, 1100.0), "C": (970.0, 1010.0), "D": (880.0, 920.0)},
        {frozenset("AB"): 5, frozenset("BC"): 5, frozenset("BD"): 1, frozenset("CD"): 9, frozenset("AC"): 9},
    )
    expected = {
        ("A", "B"): 40 / 296,
        ("A", "C"): 8 / 296,
        ("A", "D"): 80 / 296,
        ("B", "C"): 40 / 296,
        ("B", "D"): 120 / 296,
        ("C", "D"): 8 / 296,
    }
    assert pair_probabilities(ranking, ["A", "B", "C", "D"]) == pytest.approx(expected)
    draws = 20_000
    counts = _frequencies(ranking, ["A", "B", "C", "D"], draws, seed=1)
    for pair, p in expected.items():
        assert _within_binomial(counts[pair], draws, p), (pair, counts[pair], draws * p)
    # The band is narrow enough to tell this rule from its neighbours: a uniform draw, one on widths
    # alone, one on votes alone and the former rule (always B against D) each expect some pair's count
    # outside it, so a draw by any of them would fail the loop above.
    alternatives = {
        "uniform": dict.fromkeys(expected, 1.0),
        "widths only": {pair: (240 if "B" in pair else 80) for pair in expected},
        "votes only": {pair: 1 / (1 + n) for pair, n in zip(expected, (5, 9, 0, 5, 1, 9), strict=True)},
        "widest against least played": {**dict.fromkeys(expected, 0.0), ("B", "D"): 1.0},
    }
    for name, weights in alternatives.items():
        total = sum(weights.values())
        assert any(
            not _within_binomial(draws * weights[pair] / total, draws, p) for pair, p in expected.items()
        ), name


def test_a_model_without_votes_counts_twice_the_widest_interval_and_no_interval_at_all_is_uniform():
    ranking = _ranking(
        {"A": 1100.0, "B": 900.0, "N": 1000.0},
        {"A": (1000.0, 1200.0), "B": (850.0, 950.0), "N": None},
        {frozenset("AB"): 3},
    )
    # w: A 200, B 100, N (no votes) 2 * 200 = 400; AB 300 / 4 = 75, AN 600 / 1, BN 500 / 1; sum 1175.
    expected = {("A", "B"): 75 / 1175, ("A", "N"): 600 / 1175, ("B", "N"): 500 / 1175}
    assert pair_probabilities(ranking, ["A", "B", "N"]) == pytest.approx(expected)
    draws = 10_000
    counts = _frequencies(ranking, ["A", "B", "N"], draws, seed=2)
    for pair, p in expected.items():
        assert _within_binomial(counts[pair], draws, p), (pair, counts[pair], draws * p)
    # A model the ranking has never seen is one without votes, too.
    assert pair_probabilities(ranking, ["A", "B", "new"]) == pytest.approx(
        {("A", "B"): 75 / 1175, ("A", "new"): 600 / 1175, ("B", "new"): 500 / 1175}
    )
    # No vote anywhere: every pair alike, 1/6 each of four models.
    blank = rank([], models=range(4))
    assert pair_probabilities(blank, range(4)) == pytest.approx(
        dict.fromkeys(pair_weights(blank, range(4)), 1 / 6)
    )
    counts = _frequencies(blank, range(4), 6_000, seed=3)
    assert all(_within_binomial(n, 6_000, 1 / 6) for n in counts.values()), counts
    # A zero-width interval still weighs MIN_WIDTH (1 point): every pair keeps a chance.
    narrow = _ranking({"A": 1000.0, "B": 1000.0}, {"A": (1000.0, 1000.0), "B": (1000.0, 1000.0)}, {})
    assert pair_weights(narrow, ["A", "B"]) == {("A", "B"): 2.0}


def test_the_draw_never_self_pairs_and_repeats_with_a_seed():
    rng = random.Random(2)
    for trial in range(200):
        n = rng.randint(2, 6)
        models = list(range(n))
        vote_list = [Vote(*rng.sample(models, 2), rng.choice(OUTCOMES)) for _ in range(rng.randint(0, 8))]
        ranking = rank(vote_list, models=models, samples=5, seed=trial)
        offered = models + [rng.choice(models)]  # a repeated key
        first, second = draw_pair(ranking, offered, rng=random.Random(trial))
        assert first != second and {first, second} <= set(models)
        assert (first, second) == draw_pair(ranking, offered, rng=random.Random(trial))
        assert math.fsum(pair_probabilities(ranking, offered).values()) == pytest.approx(1.0)
    # Without an rng the operating system's source draws: not one fixed pair.
    blank = rank([], models=range(10))
    assert len({draw_pair(blank, range(10)) for _ in range(200)}) > 1


def test_the_draw_needs_two_models():
    ranking = rank([])
    with pytest.raises(ValueError, match="two different models"):
        draw_pair(ranking, ["A"])
    with pytest.raises(ValueError, match="two different models"):
        draw_pair(ranking, ["A", "A"])
    with pytest.raises(ValueError):
        pair_probabilities(ranking, [])
