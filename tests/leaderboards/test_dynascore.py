"""Dynascore against values computed by hand (docs/domain.md, "Dynascore"; leaderboards/dynascore.py).

Common set-up of the hand cases: datasets D1 (weight 1) and D2 (weight 3), so w̃ = (0.25, 0.75);
metrics perf, throughput (examples/s), memory (GiB) with weights 2, 1, 1, so ω̃ = (0.5, 0.25, 0.25);
memory ceiling M = 16 GiB.
"""

from __future__ import annotations

import random

import pytest

from leaderboards.dynascore import DynascoreError, compute_dynascore, normalise_weights

W_D = {"D1": 1, "D2": 3}
W_J = {"perf": 2, "throughput": 1, "memory": 1}


def s(perf, throughput, memory):
    return {"perf": perf, "throughput": throughput, "memory": memory}


def test_three_models_two_with_equal_perf():
    # A: perf (0.6, 0.8), throughput (500, 500), memory (2, 2)
    # B: perf (0.9, 0.7), throughput (300, 100), memory (4, 4)
    # C: perf (0.5, 0.5), throughput (400, 400), memory (0.5, 0.5)
    #
    # Step 1, x = 0.25 * D1 + 0.75 * D2:
    #   A: perf 0.15 + 0.6 = 0.75;  throughput 125 + 375 = 500; memory 2
    #   B: perf 0.225 + 0.525 = 0.75; throughput 75 + 75 = 150;  memory 4
    #   C: perf 0.5;                 throughput 400;             memory 0.5
    # Step 2, memory' = 16 - memory: A 14, B 12, C 15.5.
    # Step 3, sorted by perf (ties in input order): C 0.5, A 0.75, B 0.75.
    #   Threshold 1e-4 * 0.75. Pair (C, A): Δperf 0.25, used. Pair (A, B): Δperf 0, skipped.
    #   AMRS_throughput = |500 - 400| / 0.25 = 400;  AMRS_memory = |14 - 15.5| / 0.25 = 6.
    # Step 4, ω̃ = 2/4, 1/4, 1/4.
    # Step 5:
    #   A = 0.5 * 0.75 + 0.25 * 500 / 400 + 0.25 * 14 / 6   = 0.375 + 0.3125  + 0.583333 = 1.270833
    #   B = 0.5 * 0.75 + 0.25 * 150 / 400 + 0.25 * 12 / 6   = 0.375 + 0.09375 + 0.5      = 0.96875
    #   C = 0.5 * 0.5  + 0.25 * 400 / 400 + 0.25 * 15.5 / 6 = 0.25  + 0.25    + 0.645833 = 1.145833
    # Ranks: A 1, C 2, B 3.
    scores = {
        "A": {"D1": s(0.6, 500, 2), "D2": s(0.8, 500, 2)},
        "B": {"D1": s(0.9, 300, 4), "D2": s(0.7, 100, 4)},
        "C": {"D1": s(0.5, 400, 0.5), "D2": s(0.5, 400, 0.5)},
    }
    result = compute_dynascore(scores, dataset_weights=W_D, metric_weights=W_J, memory_ceiling=16)

    assert result.dataset_weights == {"D1": 0.25, "D2": 0.75}
    assert result.metric_weights == {"perf": 0.5, "throughput": 0.25, "memory": 0.25}
    m = result.by_key()
    assert m["A"].raw == pytest.approx({"perf": 0.75, "throughput": 500, "memory": 2})
    assert m["B"].raw == pytest.approx({"perf": 0.75, "throughput": 150, "memory": 4})
    assert m["C"].raw == pytest.approx({"perf": 0.5, "throughput": 400, "memory": 0.5})
    assert m["A"].x["memory"] == pytest.approx(14)
    assert m["B"].x["memory"] == pytest.approx(12)
    assert m["C"].x["memory"] == pytest.approx(15.5)
    assert result.amrs == pytest.approx({"perf": 1.0, "throughput": 400, "memory": 6})
    assert result.pairs_used == {"throughput": 1, "memory": 1}
    assert result.left_out == {}
    assert m["A"].dynascore == pytest.approx(1.2708333333)
    assert m["B"].dynascore == pytest.approx(0.96875)
    assert m["C"].dynascore == pytest.approx(1.1458333333)
    assert [(r.key, r.rank) for r in result.models] == [("A", 1), ("C", 2), ("B", 3)]
    assert all(r.complete for r in result.models)


def test_tie_in_perf_keeps_input_order():
    # The same models given as B, A, C: sorted C, B, A, so the used pair is (C, B):
    # AMRS_throughput = |150 - 400| / 0.25 = 1000, AMRS_memory = |12 - 15.5| / 0.25 = 14.
    scores = {
        "B": {"D1": s(0.9, 300, 4), "D2": s(0.7, 100, 4)},
        "A": {"D1": s(0.6, 500, 2), "D2": s(0.8, 500, 2)},
        "C": {"D1": s(0.5, 400, 0.5), "D2": s(0.5, 400, 0.5)},
    }
    result = compute_dynascore(scores, dataset_weights=W_D, metric_weights=W_J)
    assert result.amrs == pytest.approx({"perf": 1.0, "throughput": 1000, "memory": 14})


def test_model_missing_a_score_is_incomplete_and_kept():
    # A: perf (0.6, 0.8), throughput (500, 500), memory (2, 2)
    # B: perf (0.4, 0.4), throughput (100, 300), memory (3, 3)
    # C: D1 only: perf 0.9, throughput 200, memory 1 (no score on D2)
    #
    # Step 1: A: perf 0.75, throughput 500, memory 2;  B: perf 0.4, throughput 25 + 225 = 250, memory 3.
    #   C has D1 only: its weights renormalised over D1 (0.25 / 0.25 = 1): perf 0.9, throughput 200,
    #   memory 1; flagged incomplete, missing D2 for the three metrics.
    # Step 2: memory' A 14, B 13, C 15.
    # Step 3 over the complete models only (A, B): sorted B 0.4, A 0.75; Δperf 0.35.
    #   AMRS_throughput = 250 / 0.35 = 714.285714;  AMRS_memory = 1 / 0.35 = 2.857143.
    # Step 5:
    #   A = 0.375 + 0.25 * 500 / 714.2857 + 0.25 * 14 / 2.857143 = 0.375 + 0.175 + 1.225  = 1.775
    #   B = 0.2   + 0.25 * 250 / 714.2857 + 0.25 * 13 / 2.857143 = 0.2   + 0.0875 + 1.1375 = 1.425
    #   C = 0.45  + 0.25 * 200 / 714.2857 + 0.25 * 15 / 2.857143 = 0.45  + 0.07  + 1.3125 = 1.8325
    scores = {
        "A": {"D1": s(0.6, 500, 2), "D2": s(0.8, 500, 2)},
        "B": {"D1": s(0.4, 100, 3), "D2": s(0.4, 300, 3)},
        "C": {"D1": s(0.9, 200, 1)},
    }
    result = compute_dynascore(scores, dataset_weights=W_D, metric_weights=W_J)
    m = result.by_key()
    assert m["C"].raw == pytest.approx({"perf": 0.9, "throughput": 200, "memory": 1})
    assert m["B"].raw == pytest.approx({"perf": 0.4, "throughput": 250, "memory": 3})
    assert not m["C"].complete
    assert set(m["C"].missing) == {("D2", "perf"), ("D2", "throughput"), ("D2", "memory")}
    assert m["A"].complete and m["B"].complete
    assert result.amrs["throughput"] == pytest.approx(250 / 0.35)
    assert result.amrs["memory"] == pytest.approx(1 / 0.35)
    assert m["A"].dynascore == pytest.approx(1.775)
    assert m["B"].dynascore == pytest.approx(1.425)
    assert m["C"].dynascore == pytest.approx(1.8325)
    assert [r.key for r in result.models] == ["C", "A", "B"]  # shown, ranked, not dropped


def test_metric_left_out_when_amrs_undefined():
    # A and B complete with equal perf (0.75); C incomplete. No pair of complete models with distinct
    # perf: AMRS undefined for throughput and memory, both left out; Dynascore = 0.5 * perf.
    scores = {
        "A": {"D1": s(0.6, 500, 2), "D2": s(0.8, 500, 2)},
        "B": {"D1": s(0.9, 300, 4), "D2": s(0.7, 100, 4)},
        "C": {"D1": s(0.9, 200, 1)},
    }
    result = compute_dynascore(scores, dataset_weights=W_D, metric_weights=W_J)
    assert result.amrs["throughput"] is None and result.amrs["memory"] is None
    assert set(result.left_out) == {"throughput", "memory"}
    assert "distinct perf" in result.left_out["throughput"]
    m = result.by_key()
    assert m["A"].dynascore == pytest.approx(0.375)
    assert m["B"].dynascore == pytest.approx(0.375)
    assert m["C"].dynascore == pytest.approx(0.45)
    assert m["A"].rank == m["B"].rank == 2 and m["C"].rank == 1


def test_metric_left_out_when_amrs_zero_and_when_nobody_has_it():
    scores = {
        "A": {"D1": {"perf": 0.5, "throughput": 100}},
        "B": {"D1": {"perf": 0.7, "throughput": 100}},
    }
    result = compute_dynascore(
        scores, dataset_weights={"D1": 1}, metric_weights={"perf": 1, "throughput": 1, "fairness": 1}
    )
    assert result.amrs["throughput"] == 0
    assert "zero" in result.left_out["throughput"]
    assert result.amrs["fairness"] is None and result.left_out["fairness"] == "no model has a value"
    # Every model lacks fairness (weight > 0): incomplete, but fairness is left out of the sum, so the
    # Dynascore is ω̃_perf * perf = perf / 3.
    assert result.by_key()["B"].dynascore == pytest.approx(0.7 / 3)
    assert not result.by_key()["B"].complete


def test_a_counted_metric_missing_everywhere_for_one_model_gives_no_dynascore():
    scores = {
        "A": {"D1": s(0.5, 100, 1)},
        "B": {"D1": s(0.7, 200, 1)},
        "C": {"D1": {"perf": 0.9, "throughput": None, "memory": 1}},
    }
    result = compute_dynascore(scores, dataset_weights={"D1": 1}, metric_weights=W_J)
    c = result.by_key()["C"]
    assert c.dynascore is None and c.rank is None and not c.complete
    assert result.models[-1].key == "C"  # shown last, not dropped


def test_zero_weight_dataset_is_ignored_and_does_not_make_incomplete():
    scores = {"A": {"D1": s(0.5, 100, 1)}, "B": {"D1": s(0.7, 200, 1), "D2": s(0.1, 1, 1)}}
    result = compute_dynascore(scores, dataset_weights={"D1": 1, "D2": 0}, metric_weights=W_J)
    assert result.by_key()["A"].complete
    assert result.by_key()["B"].raw["perf"] == pytest.approx(0.7)


@pytest.mark.parametrize(
    "weights, message",
    [({"a": -1, "b": 1}, "negative"), ({"a": 0, "b": 0}, "zero"), ({"a": float("nan")}, "finite")],
)
def test_bad_weights_raise(weights, message):
    with pytest.raises(DynascoreError, match=message):
        normalise_weights(weights)


def test_200_models_10_datasets_match_the_formula_step_by_step():
    """Dynascore of 200 random models on 10 datasets against the steps of docs/domain.md,
    "Dynascore", written out plainly (exact resolutions). Its speed is measured by
    ``benchmarks/dynascore_bench.py``, not here."""
    rng = random.Random(0)
    datasets = [f"d{i}" for i in range(10)]
    metrics = ["perf", "throughput", "memory", "fairness", "robustness"]
    scores = {
        m: {
            d: {
                "perf": rng.random(),
                "throughput": rng.uniform(10, 1000),
                "memory": rng.uniform(0.1, 8),
                "fairness": rng.random(),
                "robustness": rng.random(),
            }
            for d in datasets
        }
        for m in range(200)
    }
    w_d = {d: i + 1 for i, d in enumerate(datasets)}  # 1..10, sum 55
    result = compute_dynascore(scores, dataset_weights=w_d, resolutions={})

    # Step 1-2: weighted means, memory flipped against M = 16.
    x = {m: {j: sum(w_d[d] / 55 * scores[m][d][j] for d in datasets) for j in metrics} for m in scores}
    for m in x:
        x[m]["memory"] = 16 - x[m]["memory"]
    # Step 3: AMRS over perf-sorted neighbours whose perfs differ by more than 1e-4 * max perf (the
    # 200 means crowd into a narrow band, so some neighbours are that close and are skipped).
    ordered = sorted(x, key=lambda m: x[m]["perf"])
    threshold = 1e-4 * max(x[m]["perf"] for m in x)
    pairs = [
        (a, b) for a, b in zip(ordered, ordered[1:], strict=False) if x[b]["perf"] - x[a]["perf"] > threshold
    ]
    assert 150 < len(pairs) < 199  # the threshold matters on this input
    amrs = {"perf": 1.0}
    for j in metrics[1:]:
        ratios = [abs(x[b][j] - x[a][j]) / (x[b]["perf"] - x[a]["perf"]) for a, b in pairs]
        amrs[j] = sum(ratios) / len(ratios)
    # Step 4-5: ω = 4/8 perf, 1/8 each other metric.
    omega = {"perf": 0.5, "throughput": 0.125, "memory": 0.125, "fairness": 0.125, "robustness": 0.125}
    expected = {m: sum(omega[j] * x[m][j] / amrs[j] for j in metrics) for m in x}

    assert result.amrs == pytest.approx(amrs)
    assert result.left_out == {}
    got = {r.key: r.dynascore for r in result.models}
    assert got == pytest.approx(expected)
    assert all(r.complete for r in result.models)
    by_rank = sorted(result.models, key=lambda r: r.rank)
    assert [r.key for r in by_rank] == sorted(expected, key=lambda m: -expected[m])


def test_a_lower_is_better_metric_is_flipped_against_its_ceiling():
    # Two models, one dataset; "asr" (an attack success rate) is lower-is-better with ceiling 1.
    # A: perf 0.5, asr 0.4 -> x' = 0.6; B: perf 0.7, asr 0.1 -> x' = 0.9.
    # AMRS_asr = |0.9 - 0.6| / |0.7 - 0.5| = 1.5; weights perf 1, asr 1 -> ω̃ = 1/2 each.
    # Dynascore A = 0.5 * 0.5 + 0.5 * 0.6 / 1.5 = 0.45; B = 0.5 * 0.7 + 0.5 * 0.9 / 1.5 = 0.65.
    scores = {"A": {"d": {"perf": 0.5, "asr": 0.4}}, "B": {"d": {"perf": 0.7, "asr": 0.1}}}
    result = compute_dynascore(
        scores,
        dataset_weights={"d": 1},
        metric_weights={"perf": 1, "asr": 1},
        metrics=["perf", "asr"],
        ceilings={"asr": 1.0},
    )
    by = result.by_key()
    assert by["A"].x["asr"] == pytest.approx(0.6) and by["A"].raw["asr"] == pytest.approx(0.4)
    assert result.amrs["asr"] == pytest.approx(1.5)
    assert by["A"].dynascore == pytest.approx(0.45) and by["B"].dynascore == pytest.approx(0.65)
    # Without the ceiling, asr would count as higher-is-better: A's 0.4 beats B's 0.1 on it.
    plain = compute_dynascore(
        scores, dataset_weights={"d": 1}, metric_weights={"perf": 1, "asr": 1}, metrics=["perf", "asr"]
    )
    assert plain.by_key()["A"].x["asr"] == pytest.approx(0.4)


def _one_dataset(rows):
    return {m: {"d": values} for m, values in rows.items()}


def test_only_one_metric_weighted_and_no_perf_ranks_on_that_metric():
    # No model has perf (a board before any item is scored); only "bt" weighs. perf cannot be the
    # yardstick, so bt is (AMRS 1) and, ω̃_bt = 1, each Dynascore is the model's bt: 1069, 970, 961.
    # (Before: bt's AMRS against perf was undefined, bt left out, every Dynascore 0 and every rank 1.)
    scores = _one_dataset({"A": {"bt": 1069.0}, "B": {"bt": 970.0}, "C": {"bt": 961.0}})
    result = compute_dynascore(
        scores, dataset_weights={"d": 1}, metric_weights={"perf": 0, "bt": 5}, metrics=["perf", "bt"]
    )
    by = result.by_key()
    assert result.reference == "bt" and result.amrs["bt"] == 1.0
    assert [by[m].dynascore for m in "ABC"] == [1069.0, 970.0, 961.0]
    assert [by[m].rank for m in "ABC"] == [1, 2, 3]
    # perf weighs 0: no model is incomplete for lacking it, and it is not "left out" of a sum it is not in.
    assert all(by[m].complete and by[m].missing == () for m in "ABC")
    assert result.left_out == {"perf": "AMRS undefined: 0 models with complete bt and perf values"}


def test_two_metrics_weighted_without_perf_are_measured_against_the_heavier_one():
    # perf weighs 0 and no model has it; "asr" (lower is better, ceiling 1) weighs 2 and "tps" 1: asr is
    # the yardstick. x'_asr = 1 - asr: C 0.5, A 0.7, B 0.9 (sorted), neighbours 0.2 apart.
    # AMRS_tps = mean(|20 - 30| / 0.2, |40 - 20| / 0.2) = mean(50, 100) = 75; ω̃ = 2/3, 1/3.
    # A = 2/3 * 0.7 + 1/3 * 20 / 75 = 0.55556; B = 2/3 * 0.9 + 1/3 * 40 / 75 = 0.77778;
    # C = 2/3 * 0.5 + 1/3 * 30 / 75 = 0.46667.
    scores = _one_dataset(
        {"A": {"asr": 0.3, "tps": 20.0}, "B": {"asr": 0.1, "tps": 40.0}, "C": {"asr": 0.5, "tps": 30.0}}
    )
    result = compute_dynascore(
        scores,
        dataset_weights={"d": 1},
        metric_weights={"perf": 0, "asr": 2, "tps": 1},
        metrics=["perf", "asr", "tps"],
        ceilings={"asr": 1.0},
    )
    by = result.by_key()
    assert result.reference == "asr" and result.amrs["tps"] == pytest.approx(75)
    assert by["A"].dynascore == pytest.approx(0.7 * 2 / 3 + 20 / 75 / 3)
    assert by["B"].dynascore == pytest.approx(0.9 * 2 / 3 + 40 / 75 / 3)
    assert by["C"].dynascore == pytest.approx(0.5 * 2 / 3 + 30 / 75 / 3)
    assert [r.key for r in result.models] == ["B", "A", "C"]


def test_perf_weighted_but_missing_everywhere_is_left_out_and_the_rest_still_rank():
    # perf weighs 1 but no model has it: left out ("no model has a value"), every model incomplete
    # for it, and the only other weighted metric, tps (weight 1), is the yardstick: ω̃ = 1/2 each,
    # Dynascore = tps / 2.
    scores = _one_dataset({"A": {"perf": None, "tps": 20.0}, "B": {"tps": 40.0}})
    result = compute_dynascore(
        scores, dataset_weights={"d": 1}, metric_weights={"perf": 1, "tps": 1}, metrics=["perf", "tps"]
    )
    by = result.by_key()
    assert result.left_out == {"perf": "no model has a value"} and result.reference == "tps"
    assert (by["A"].dynascore, by["B"].dynascore) == (10.0, 20.0)
    assert (by["B"].rank, by["A"].rank) == (1, 2)
    assert not by["A"].complete and by["A"].missing == (("d", "perf"),)


def test_the_stand_in_yardstick_is_one_two_models_have():
    # No perf; asr (weight 2, only A has it) and bt (weight 2, A and B have it). asr as the yardstick
    # left bt out ("AMRS undefined: 1 model with complete asr and bt"); bt, which two models have,
    # serves: AMRS bt = 1, and asr's AMRS against it is undefined (only A has both), so asr is left out.
    # ω̃ = 2/4 each (perf weighs 0): A = 0.5 * 1029 = 514.5, B = 0.5 * 971 = 485.5.
    scores = _one_dataset({"A": {"asr": 0.0, "bt": 1029.0}, "B": {"bt": 971.0}})
    result = compute_dynascore(
        scores,
        dataset_weights={"d": 1},
        metric_weights={"perf": 0, "asr": 2, "bt": 2},
        metrics=["perf", "asr", "bt"],
    )
    by = result.by_key()
    assert result.reference == "bt"
    assert result.left_out["asr"] == "AMRS undefined: 1 model with complete bt and asr values"
    assert (by["A"].dynascore, by["B"].dynascore) == (514.5, 485.5)
    assert (by["A"].rank, by["B"].rank) == (1, 2)


def test_nothing_to_rank_on_gives_no_dynascore_rather_than_a_shared_zero():
    # The only weighted metric is one no model has: no Dynascore, no rank, for anyone.
    scores = _one_dataset({"A": {"perf": 0.5}, "B": {"perf": 0.7}})
    result = compute_dynascore(
        scores, dataset_weights={"d": 1}, metric_weights={"perf": 0, "bt": 1}, metrics=["perf", "bt"]
    )
    assert result.left_out["bt"] == "no model has a value"
    assert all(r.dynascore is None and r.rank is None for r in result.models)


def test_perf_weighted_zero_stays_the_yardstick_when_it_measures_every_weighted_metric():
    # perf weighs 0 but every model has a distinct perf: Dynaboard's AMRS against perf, unchanged.
    # Sorted by perf A 0.5, B 0.7: AMRS_tps = |40 - 20| / 0.2 = 100; Dynascore = tps / 100.
    scores = _one_dataset({"A": {"perf": 0.5, "tps": 20.0}, "B": {"perf": 0.7, "tps": 40.0}})
    result = compute_dynascore(
        scores, dataset_weights={"d": 1}, metric_weights={"perf": 0, "tps": 1}, metrics=["perf", "tps"]
    )
    by = result.by_key()
    assert result.reference == "perf" and result.amrs["tps"] == pytest.approx(100)
    assert (by["A"].dynascore, by["B"].dynascore) == (pytest.approx(0.2), pytest.approx(0.4))
