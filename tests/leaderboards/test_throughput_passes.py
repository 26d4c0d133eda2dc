"""Honest throughput (leaderboards/evaluation.py, "throughput"): the median of several timed passes on a
fixed sample, with their relative range stored as the spread. The clock is scripted and the predictor a
stub (no timed assertion): every figure below is computed by hand in the comments."""

from __future__ import annotations

import pytest

from leaderboards import evaluation
from leaderboards.evaluation import (
    evaluate_model_on_dataset,
    throughput_sample_indices,
    throughput_sample_size,
    throughput_summary,
    time_passes,
)
from leaderboards.model_page import metric_figures, throughput_text


class ScriptedClock:
    """Returns the given readings in order; fails the test when read more often than scripted."""

    def __init__(self, readings):
        self.readings = list(readings)

    def __call__(self) -> float:
        assert self.readings, "the clock was read more often than scripted"
        return self.readings.pop(0)


class Recorder:
    """A stand-in for ``_Predictor.labels``: records what each pass predicted."""

    def __init__(self):
        self.calls = []

    def __call__(self, texts, inputs):
        self.calls.append((list(texts), list(inputs)))
        return ["x"] * len(texts)


def test_the_sample_is_evenly_spaced_and_deterministic():
    # floor(i * 10 / 4) for i = 0..3: 0, 2.5 -> 2, 5, 7.5 -> 7.
    assert throughput_sample_indices(10, 4) == [0, 2, 5, 7]
    assert throughput_sample_indices(3, 4) == [0, 1, 2]  # smaller than the sample: the whole dataset
    assert throughput_sample_indices(4, 4) == [0, 1, 2, 3]
    assert throughput_sample_indices(256, 128) == list(range(0, 256, 2))
    assert throughput_sample_indices(1000, 128) == throughput_sample_indices(1000, 128)
    assert len(set(throughput_sample_indices(1000, 128))) == 128


def test_a_dataset_of_long_items_gets_fewer_items_per_pass():
    # 1,000 pairs of 400 + 70 characters: floor(16000 * 1000 / 470000) = 34 items.
    pairs = [("p" * 400, "h" * 70)] * 1000
    assert throughput_sample_size(pairs, 128, 16000) == 34
    # 3,000 statements of 60 characters: 16000 / 60 = 266 > 128: the item bound holds.
    assert throughput_sample_size(["s" * 60] * 3000, 128, 16000) == 128
    # 100 passages of 5,000 characters: 3 by characters, raised to the floor of 16.
    assert throughput_sample_size(["q" * 5000] * 100, 128, 16000) == 16
    # Mixed lengths go by the mean: 10 of 100 and 10 of 1,900 characters, mean 1,000: 16000 / 1000.
    assert throughput_sample_size(["a" * 100] * 10 + ["b" * 1900] * 10, 128, 16000) == 16
    assert throughput_sample_size(["a" * 100] * 10 + ["b" * 1900] * 10, 128, 18000) == 18
    # Never more than the dataset, and no character bound with 0.
    assert throughput_sample_size(["q" * 5000] * 10, 128, 16000) == 10
    assert throughput_sample_size(pairs, 128, 0) == 128


def test_median_and_relative_range_by_hand():
    # Sorted 98, 99, 100, 101, 104: median 100; range 104 - 98 = 6; spread 6 / 100 = 0.06.
    assert throughput_summary([100, 104, 98, 101, 99]) == (100, pytest.approx(0.06))
    # Even count: median (100 + 110) / 2 = 105; spread 10 / 105.
    assert throughput_summary([110, 100]) == (105, pytest.approx(10 / 105))
    assert throughput_summary([50.0]) == (50.0, None)  # one pass: no spread
    assert throughput_summary([]) == (None, None)


def test_a_small_dataset_is_timed_whole_and_its_prediction_pass_counts(monkeypatch):
    # 3 items, sample 4: the whole dataset. Prediction pass 0.5 s -> 6/s; then 4 more passes of
    # 0.6, 0.4, 0.5, 0.75 s -> 5, 7.5, 6, 4 /s. Passes [6, 5, 7.5, 6, 4]: median 6, spread 3.5 / 6.
    run = Recorder()
    clock = ScriptedClock([10.0, 10.6, 20.0, 20.4, 30.0, 30.5, 40.0, 40.75])
    texts, inputs = ["a", "b", "c"], [{"s": "a"}, {"s": "b"}, {"s": "c"}]
    monkeypatch.setattr(evaluation, "_clock", clock)
    measure = time_passes(run, texts, inputs, full_seconds=0.5, passes=5, sample_size=4)
    assert measure.passes == pytest.approx([6, 5, 7.5, 6, 4])
    assert len(run.calls) == 4 and all(call == (texts, inputs) for call in run.calls)
    metrics = measure.metrics()
    assert metrics["throughput"] == pytest.approx(6)
    assert metrics["throughput_spread"] == pytest.approx(3.5 / 6)
    assert metrics["throughput_sample"] == 3
    assert metrics["throughput_extra_seconds"] == pytest.approx(0.6 + 0.4 + 0.5 + 0.75)
    assert clock.readings == []


def test_a_large_dataset_is_timed_on_the_sample_only(monkeypatch):
    # 10 items, sample 4 -> items 0, 2, 5, 7; 3 passes of 0.5, 0.4, 0.8 s -> 8, 10, 5 /s (the
    # prediction pass, over all 10, is not one of them). Median 8, spread (10 - 5) / 8 = 0.625.
    run = Recorder()
    monkeypatch.setattr(evaluation, "_clock", ScriptedClock([0.0, 0.5, 1.0, 1.4, 2.0, 2.8]))
    texts = [f"t{i}" for i in range(10)]
    inputs = [{"i": i} for i in range(10)]
    measure = time_passes(run, texts, inputs, full_seconds=99.0, passes=3, sample_size=4)
    assert measure.passes == pytest.approx([8, 10, 5])
    assert run.calls == [(["t0", "t2", "t5", "t7"], [{"i": 0}, {"i": 2}, {"i": 5}, {"i": 7}])] * 3
    metrics = measure.metrics()
    assert metrics["throughput"] == pytest.approx(8)
    assert metrics["throughput_spread"] == pytest.approx(0.625)
    assert metrics["throughput_sample"] == 4


def test_one_pass_is_the_old_measurement_without_a_spread(monkeypatch):
    # The prediction pass alone: 3 items in 0.25 s = 12/s; no extra pass, no clock reading, no spread.
    run = Recorder()
    monkeypatch.setattr(evaluation, "_clock", ScriptedClock([]))
    measure = time_passes(run, ["a", "b", "c"], [{}, {}, {}], full_seconds=0.25, passes=1, sample_size=128)
    assert run.calls == []
    assert measure.metrics() == {
        "throughput": 12.0,
        "throughput_passes": [12.0],
        "throughput_spread": None,
        "throughput_sample": 3,
        "throughput_extra_seconds": 0.0,
    }


@pytest.mark.django_db
def test_the_evaluation_stores_median_passes_and_spread(
    tiny_registered_model, toy_dataset, settings, monkeypatch
):
    # 20 toy items, sample 128: timed whole. Passes (setting) 3. Clock: prediction pass 0 -> 2 s
    # (20 / 2 = 10/s), then 10 -> 11 (20/s) and 20 -> 20.5 (40/s). Median 20, spread (40 - 10) / 20 = 1.5.
    settings.DYNABENCH_THROUGHPUT_PASSES = 3
    settings.DYNABENCH_THROUGHPUT_SAMPLE = 128
    clock = ScriptedClock([0.0, 2.0, 10.0, 11.0, 20.0, 20.5])
    monkeypatch.setattr(evaluation, "_clock", clock)
    m = evaluate_model_on_dataset(tiny_registered_model, toy_dataset).metrics
    assert clock.readings == []
    assert m["seconds"] == 2.0 and m["throughput_full_pass"] == 10.0  # the keys older readers use
    assert m["throughput"] == 20.0
    assert m["throughput_passes"] == [10.0, 20.0, 40.0]
    assert m["throughput_spread"] == pytest.approx(1.5)
    assert m["throughput_sample"] == 20
    assert m["throughput_extra_seconds"] == 1.5
    assert m["n"] == 20 and 0 <= m["accuracy"] <= 1  # predictions from the one full pass as before


@pytest.mark.django_db
def test_the_evaluation_times_fewer_long_items(tiny_registered_model, toy_dataset, settings, monkeypatch):
    # 20 toy items; a character bound of 1 char per item on average gives floor(1 * 20 / total) = 0,
    # raised to the floor of 16 items: 16 of 20 are timed, in 2 passes of 1 s each (16/s).
    settings.DYNABENCH_THROUGHPUT_SAMPLE_CHARS = 1
    monkeypatch.setattr(evaluation, "_clock", ScriptedClock([0.0, 4.0, 5.0, 6.0, 7.0, 8.0]))
    m = evaluate_model_on_dataset(tiny_registered_model, toy_dataset, passes=2).metrics
    assert m["throughput_sample"] == 16 and m["throughput_passes"] == [16.0, 16.0]


@pytest.mark.django_db
def test_explicit_passes_and_sample_override_the_settings(tiny_registered_model, toy_dataset, monkeypatch):
    # Sample 8 of 20 items (floor(i * 20 / 8): 0, 2, 5, 7, 10, 12, 15, 17), 2 passes of 0.5 and 1 s:
    # 16 and 8 /s, median 12, spread 8 / 12. The prediction pass (0 -> 4 s) is 5/s, not a pass.
    monkeypatch.setattr(evaluation, "_clock", ScriptedClock([0.0, 4.0, 5.0, 5.5, 6.0, 7.0]))
    m = evaluate_model_on_dataset(tiny_registered_model, toy_dataset, passes=2, sample_size=8).metrics
    assert m["throughput_full_pass"] == 5.0
    assert m["throughput_passes"] == [16.0, 8.0]
    assert m["throughput"] == 12.0
    assert m["throughput_spread"] == pytest.approx(8 / 12)
    assert m["throughput_sample"] == 8


def test_the_model_page_shows_the_spread_beside_the_throughput():
    assert throughput_text(412.0, {"throughput_spread": 0.03, "throughput_passes": [1, 2, 3, 4, 5]}) == (
        "412.0 examples/s (spread 3.0% over 5 passes)"
    )
    assert throughput_text(412.0, {}) == "412.0 examples/s"  # an older Score: no spread
    figures = metric_figures(
        {
            "throughput": 98765.432,
            "throughput_spread": 0.0134,
            "throughput_passes": [98000.0, 98765.432, 99000.0],
            "throughput_full_pass": 97000.0,
            "throughput_sample": 128,
            "throughput_extra_seconds": 3.21,
        }
    )
    assert figures == [
        ("throughput", "98,765.4 examples/s (spread 1.3% over 3 passes)"),
        ("throughput of the prediction pass", "97,000.0 examples/s"),
        ("items per timed pass", "128"),
        ("time of the extra timed passes", "3.2 s"),
    ]


@pytest.mark.django_db
def test_only_a_scoring_datasets_throughput_is_timed_over_several_passes(
    hate_task, tiny_registered_model, settings
):
    from leaderboards.jobs import run_evaluation_job
    from leaderboards.models import Dataset, DatasetItem, Score
    from leaderboards.scheduling import request_evaluations

    settings.DYNABENCH_THROUGHPUT_PASSES, settings.DYNABENCH_THROUGHPUT_SAMPLE = 3, 2
    for access in (Dataset.Access.SCORING, Dataset.Access.STANDARD):
        dataset = Dataset.objects.create(task=hate_task, slug=f"passes-{access}", name=access, access=access)
        DatasetItem.objects.bulk_create(
            DatasetItem(
                dataset=dataset, external_id=str(i), inputs={"statement": f"text {i}"}, target="hateful"
            )
            for i in range(5)
        )
    Score.objects.all().delete()
    for score_id in request_evaluations(queue=False):
        assert run_evaluation_job(score_id) == Score.Status.DONE
    by_access = {s.dataset.access: s.metrics for s in Score.objects.select_related("dataset")}
    scoring, standard = by_access[Dataset.Access.SCORING], by_access[Dataset.Access.STANDARD]
    assert len(scoring["throughput_passes"]) == 3 and scoring["throughput_sample"] == 2
    assert len(standard["throughput_passes"]) == 1 and standard["throughput_sample"] == 5
    assert standard["throughput_extra_seconds"] == 0.0 and standard["throughput_spread"] is None
