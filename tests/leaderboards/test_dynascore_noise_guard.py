"""The Dynascore's noise guard: differences below a metric's measurement resolution count as zero in the
AMRS (leaderboards/dynascore.py, "Measurement resolution"). Values computed by hand in the comments.

One dataset D1 (weight 1), memory ceiling M = 16 GiB.
"""

from __future__ import annotations

import pytest

from leaderboards.dynascore import RESOLUTIONS, Resolution, compute_dynascore, measured_spreads

W_J = {"perf": 2, "throughput": 1, "memory": 1}  # ω̃ = 0.5, 0.25, 0.25


def one(perf, throughput, memory):
    return {"D1": {"perf": perf, "throughput": throughput, "memory": memory}}


# Like the demo: three models of one architecture whose memory differs by a few MiB and whose
# throughput differs by a few percent.
DEMO_LIKE = {
    "A": one(0.60, 400, 0.452),
    "B": one(0.62, 410, 0.455),
    "C": one(0.65, 390, 0.449),
}


def test_the_resolutions_are_the_documented_ones():
    assert RESOLUTIONS == {
        "memory": Resolution(absolute=0.01),
        "throughput": Resolution(relative=0.05, measured=True),
    }
    assert Resolution(absolute=0.01).threshold(0.45, 0.9) == 0.01
    assert Resolution(relative=0.05).threshold(100, 200) == pytest.approx(10)  # 5% of the larger
    # With the models' spreads u (examples/s): the largest of the floor and the two spreads.
    assert Resolution(relative=0.05).threshold(100, 200, 12.0, 3.0) == 12.0
    assert Resolution(relative=0.05).threshold(100, 200, 4.0, 9.0) == pytest.approx(10)


def test_without_the_guard_memory_noise_dominates():
    # Sorted by perf: A 0.60, B 0.62, C 0.65; Δperf 0.02 and 0.03.
    # memory: |Δ| 0.003 and 0.006 -> AMRS = (0.003/0.02 + 0.006/0.03) / 2 = (0.15 + 0.2) / 2 = 0.175
    # throughput: |Δ| 10 and 20 -> AMRS = (10/0.02 + 20/0.03) / 2 = (500 + 666.667) / 2 = 583.333
    # A = 0.5 * 0.60 + 0.25 * 400 / 583.333 + 0.25 * (16 - 0.452) / 0.175
    #   = 0.30 + 0.171429 + 22.211429 = 22.682857: memory, a 3 MiB difference, is 98% of it.
    result = compute_dynascore(DEMO_LIKE, dataset_weights={"D1": 1}, metric_weights=W_J, resolutions={})
    assert result.amrs == pytest.approx({"perf": 1, "throughput": 583.333333, "memory": 0.175})
    assert result.by_key()["A"].dynascore == pytest.approx(22.682857, abs=1e-5)


def test_the_guard_leaves_out_metrics_whose_differences_are_noise():
    # memory: |Δ| 0.003 and 0.006 GiB < 0.01 GiB -> both ratios 0 -> AMRS 0 -> left out.
    # throughput: |Δ| 10 < 5% of 410 = 20.5 and 20 < 5% of 410 = 20.5 -> both 0 -> left out.
    # Dynascore = ω̃_perf * perf = 0.5 * perf: A 0.30, B 0.31, C 0.325.
    result = compute_dynascore(DEMO_LIKE, dataset_weights={"D1": 1}, metric_weights=W_J)
    assert result.amrs == {"perf": 1.0, "throughput": 0.0, "memory": 0.0}
    assert result.pairs_used == {"throughput": 2, "memory": 2}
    assert set(result.left_out) == {"throughput", "memory"}
    assert "measurement resolution (0.01 GiB)" in result.left_out["memory"]
    assert (
        "measurement resolution (the larger of 5% of the value and the measured spread)"
        in result.left_out["throughput"]
    )
    scores = {r.key: r.dynascore for r in result.models}
    assert scores == pytest.approx({"A": 0.30, "B": 0.31, "C": 0.325})
    assert [(r.key, r.rank) for r in result.models] == [("C", 1), ("B", 2), ("A", 3)]
    # x' keeps the measured values: only the AMRS is guarded.
    assert result.by_key()["A"].x["memory"] == pytest.approx(16 - 0.452)


def test_one_pair_below_the_resolution_and_one_above():
    # Weights 4, 1, 1: ω̃ = 2/3, 1/6, 1/6.
    # Sorted by perf: A 0.60, B 0.62, C 0.65; Δperf 0.02 and 0.03.
    # memory: (A, B) |Δ| 0.003 < 0.01 -> 0;  (B, C) |Δ| 0.057 -> 0.057 / 0.03 = 1.9;  AMRS = 0.95
    # throughput: (A, B) |Δ| 10 >= 5% of 110 = 5.5 -> 10 / 0.02 = 500;  (B, C) |Δ| 0 -> 0;  AMRS = 250
    # A = 2/3 * 0.60 + 1/6 * 100 / 250 + 1/6 * 15.550 / 0.95 = 0.4     + 0.066667 + 2.728070 = 3.194737
    # B = 2/3 * 0.62 + 1/6 * 110 / 250 + 1/6 * 15.547 / 0.95 = 0.413333 + 0.073333 + 2.727544 = 3.214211
    # C = 2/3 * 0.65 + 1/6 * 110 / 250 + 1/6 * 15.490 / 0.95 = 0.433333 + 0.073333 + 2.717544 = 3.224211
    scores = {"A": one(0.60, 100, 0.45), "B": one(0.62, 110, 0.453), "C": one(0.65, 110, 0.51)}
    result = compute_dynascore(
        scores, dataset_weights={"D1": 1}, metric_weights={"perf": 4, "throughput": 1, "memory": 1}
    )
    assert result.left_out == {}
    assert result.amrs == pytest.approx({"perf": 1, "throughput": 250, "memory": 0.95})
    by_key = {r.key: r.dynascore for r in result.models}
    assert by_key == pytest.approx({"A": 3.194737, "B": 3.214211, "C": 3.224211}, abs=1e-6)


def test_a_difference_equal_to_the_resolution_counts():
    # memory 0.45 and 0.46: |Δ| = 0.01 (0.010000000000000009 in floats) is not below 0.01 GiB.
    # AMRS_memory = 0.01 / 0.1 = 0.1. throughput 100 and 105.3: |Δ| 5.3 >= 5% of 105.3 = 5.265.
    scores = {"A": one(0.5, 100, 0.45), "B": one(0.6, 105.3, 0.46)}
    result = compute_dynascore(scores, dataset_weights={"D1": 1}, metric_weights=W_J)
    assert result.left_out == {}
    assert result.amrs == pytest.approx({"perf": 1, "throughput": 53, "memory": 0.1})
    # and 105 (|Δ| 5 < 5.25) is noise:
    scores["B"] = one(0.6, 105, 0.46)
    result = compute_dynascore(scores, dataset_weights={"D1": 1}, metric_weights=W_J)
    assert set(result.left_out) == {"throughput"}


def test_exact_metrics_are_not_guarded():
    # fairness differs by 0.001 over Δperf 0.1: a real (tiny) difference, AMRS = 0.01.
    scores = {
        "A": {"D1": {"perf": 0.5, "fairness": 0.900}},
        "B": {"D1": {"perf": 0.6, "fairness": 0.901}},
    }
    result = compute_dynascore(scores, dataset_weights={"D1": 1}, metric_weights={"perf": 1, "fairness": 1})
    assert result.amrs["fairness"] == pytest.approx(0.01)
    assert result.left_out == {}


# --- measured spreads (dynascore.py, "Measured spread") --------------------------------------------

W_T = {"perf": 1, "throughput": 1}  # ω̃ = 0.5, 0.5


def pair(thr_a, thr_b):
    return {"A": {"D1": {"perf": 0.5, "throughput": thr_a}}, "B": {"D1": {"perf": 0.6, "throughput": thr_b}}}


def spreads(r_a, r_b):
    return {"A": {"D1": {"throughput": r_a}}, "B": {"D1": {"throughput": r_b}}}


def test_a_difference_equal_to_the_larger_spread_counts_and_one_below_does_not():
    # A 100 with spread 10% -> u_A = 10; B 110 with 2% -> u_B = 2.2; floor 5% of 110 = 5.5.
    # Threshold max(5.5, 10, 2.2) = 10: |Δ| = 10 is not below it, so it counts: AMRS = 10 / 0.1 = 100.
    result = compute_dynascore(
        pair(100, 110), dataset_weights={"D1": 1}, metric_weights=W_T, spreads=spreads(0.1, 0.02)
    )
    assert result.left_out == {}
    assert result.amrs["throughput"] == pytest.approx(100)
    assert result.by_key()["A"].spread == {"throughput": pytest.approx(10)}
    assert result.by_key()["B"].spread == {"throughput": pytest.approx(2.2)}
    # A's spread 11% -> u_A = 11 > 10: the difference is within A's passes, so noise; left out.
    result = compute_dynascore(
        pair(100, 110), dataset_weights={"D1": 1}, metric_weights=W_T, spreads=spreads(0.11, 0.02)
    )
    assert result.amrs["throughput"] == 0.0
    assert result.left_out["throughput"] == (
        "AMRS is zero: every difference in throughput between neighbours is below its measurement "
        "resolution (the larger of 5% of the value and the measured spread)"
    )
    # The larger of the two counts, whichever model it belongs to: B's 10% of 110 = 11 > 10.
    result = compute_dynascore(
        pair(100, 110), dataset_weights={"D1": 1}, metric_weights=W_T, spreads=spreads(0.0, 0.1)
    )
    assert set(result.left_out) == {"throughput"}


def test_spreads_below_the_floor_leave_the_fixed_resolution():
    # Spreads 1%: u = 1 and 1.05, below the floor 5% of 105 = 5.25, so the fixed guard decides:
    # |Δ| 5.3 (105.3) counts, |Δ| 5 (105) does not, as without spreads.
    tight = spreads(0.01, 0.01)
    counts = compute_dynascore(pair(100, 105.3), dataset_weights={"D1": 1}, metric_weights=W_T, spreads=tight)
    assert counts.left_out == {} and counts.amrs["throughput"] == pytest.approx(53)
    noise = compute_dynascore(pair(100, 105), dataset_weights={"D1": 1}, metric_weights=W_T, spreads=tight)
    assert set(noise.left_out) == {"throughput"}


def test_an_old_score_without_a_spread_counts_with_the_fixed_five_percent():
    # No spreads at all, or entries that are not spreads (text, negative, a bool, NaN): r = 0.05,
    # u = 5% of the value, never above the floor, so the guard is the fixed one: 105.3 counts, 105 not.
    for given in (None, {}, spreads("3%", -0.2), spreads(True, float("nan"))):
        counts = compute_dynascore(
            pair(100, 105.3), dataset_weights={"D1": 1}, metric_weights=W_T, spreads=given
        )
        assert counts.left_out == {}, given
        assert counts.by_key()["A"].spread == {"throughput": pytest.approx(5)}  # 5% of 100
        noise = compute_dynascore(
            pair(100, 105), dataset_weights={"D1": 1}, metric_weights=W_T, spreads=given
        )
        assert set(noise.left_out) == {"throughput"}, given


def test_spreads_are_aggregated_over_datasets_like_the_values():
    # Weights D1 1, D2 3 -> w̃ 0.25, 0.75.
    # A: D1 100 (spread 20%), D2 200 (an old Score: 5%). x_A = 25 + 150 = 175;
    #    u_A = 0.25 * (0.2 * 100) + 0.75 * (0.05 * 200) = 5 + 7.5 = 12.5.
    # B: D1 120, D2 210, spreads 1%: x_B = 30 + 157.5 = 187.5; u_B = 0.25 * 1.2 + 0.75 * 2.1 = 1.875.
    # Threshold max(5% of 187.5 = 9.375, 12.5, 1.875) = 12.5 = |Δ|: counts; AMRS = 12.5 / 0.1 = 125.
    def scores(b_d2):
        return {
            "A": {"D1": {"perf": 0.5, "throughput": 100}, "D2": {"perf": 0.5, "throughput": 200}},
            "B": {"D1": {"perf": 0.6, "throughput": 120}, "D2": {"perf": 0.6, "throughput": b_d2}},
        }

    given = {"A": {"D1": {"throughput": 0.2}}, "B": {"D1": {"throughput": 0.01}, "D2": {"throughput": 0.01}}}
    weights = {"D1": 1, "D2": 3}
    result = compute_dynascore(scores(210), dataset_weights=weights, metric_weights=W_T, spreads=given)
    assert result.by_key()["A"].raw["throughput"] == pytest.approx(175)
    assert result.by_key()["A"].spread["throughput"] == pytest.approx(12.5)
    assert result.by_key()["B"].spread["throughput"] == pytest.approx(1.875)
    assert result.left_out == {} and result.amrs["throughput"] == pytest.approx(125)
    # B's D2 209: x_B = 30 + 156.75 = 186.75, |Δ| 11.75 < 12.5 -> noise (the fixed 5% alone,
    # 9.3375, would have counted it).
    result = compute_dynascore(scores(209), dataset_weights=weights, metric_weights=W_T, spreads=given)
    assert set(result.left_out) == {"throughput"}
    assert compute_dynascore(scores(209), dataset_weights=weights, metric_weights=W_T).left_out == {}


def test_measured_spreads_reads_only_spreads_of_measured_metrics():
    assert measured_spreads({"throughput": 400.0, "throughput_spread": 0.031, "memory_spread": 0.5}) == {
        "throughput": 0.031
    }
    assert measured_spreads({"throughput": 400.0}) == {}  # an old Score
    assert measured_spreads({"throughput_spread": None}) == {}  # one pass
    assert measured_spreads({"throughput_spread": -1}) == {} and measured_spreads(None) == {}
    assert measured_spreads({"throughput_spread": 0}) == {"throughput": 0.0}
