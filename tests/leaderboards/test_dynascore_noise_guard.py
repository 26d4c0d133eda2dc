"""The Dynascore's noise guard: differences below a metric's measurement resolution count as zero in the
AMRS (leaderboards/dynascore.py, "Measurement resolution"). Values computed by hand in the comments.

One dataset D1 (weight 1), memory ceiling M = 16 GiB.
"""

from __future__ import annotations

import pytest

from leaderboards.dynascore import RESOLUTIONS, Resolution, compute_dynascore

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
    assert RESOLUTIONS == {"memory": Resolution(absolute=0.01), "throughput": Resolution(relative=0.05)}
    assert Resolution(absolute=0.01).threshold(0.45, 0.9) == 0.01
    assert Resolution(relative=0.05).threshold(100, 200) == pytest.approx(10)  # 5% of the larger


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
    assert "measurement resolution (5% of the value)" in result.left_out["throughput"]
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
