"""The per-process model cache is bounded by bytes (least recently used dropped first), and a local model
that does not answer within the inference timeout fails the call, so the example is stored with a
failed prediction (engine/runtime/classifier.py, "Cache" and "Timeout")."""

from __future__ import annotations

import threading

import pytest

from annotation.models import Example, Prediction
from annotation.services import create_example
from engine.runtime import classifier as runtime_classifier
from engine.runtime.classifier import InferenceError, cached_paths, get_classifier
from engine.runtime.model_files import weights_bytes
from models_registry import inference
from tests.helpers.tiny_models import build_tiny_classifier


@pytest.fixture
def three_dirs(tmp_path):
    return [str(build_tiny_classifier(tmp_path / name, seed=n)) for n, name in enumerate("abc")]


def test_weights_bytes_is_the_size_of_the_weight_files(three_dirs):
    from pathlib import Path

    expected = (Path(three_dirs[0]) / "model.safetensors").stat().st_size
    assert expected > 0
    assert weights_bytes(three_dirs[0]) == expected
    assert weights_bytes("/nonexistent/model") == 0


def test_under_the_bound_every_model_stays_in_use_order(settings, three_dirs):
    settings.DYNABENCH_MODEL_CACHE_BYTES = 10 * weights_bytes(three_dirs[0])
    a, b, c = three_dirs
    for path in (a, b, c):
        get_classifier(path)
    get_classifier(a)  # a is the most recently used now
    assert cached_paths() == [b, c, a]


def test_over_the_bound_the_least_recently_used_are_dropped(settings, three_dirs):
    a, b, c = three_dirs
    size = weights_bytes(a)
    assert weights_bytes(b) == weights_bytes(c) == size  # same architecture, same bytes
    settings.DYNABENCH_MODEL_CACHE_BYTES = 2 * size  # room for two
    first_a = get_classifier(a)
    get_classifier(b)
    get_classifier(a)  # a used again: b is now the least recently used
    get_classifier(c)
    assert cached_paths() == [a, c]
    assert get_classifier(a) is first_a  # kept, not reloaded


def test_a_model_larger_than_the_bound_is_still_served_alone(settings, three_dirs):
    a, b, _ = three_dirs
    settings.DYNABENCH_MODEL_CACHE_BYTES = 1
    get_classifier(a)
    classifier_b = get_classifier(b)
    assert cached_paths() == [b]
    assert get_classifier(b) is classifier_b


@pytest.fixture
def hanging_model(monkeypatch, tiny_registered_model):
    """The tiny target's forward blocks until the test ends (a model that hangs)."""
    release = threading.Event()

    def hang(self, texts, batch_size=32):
        release.wait(30)
        return []

    monkeypatch.setattr(runtime_classifier.Classifier, "predict_batch", hang)
    yield tiny_registered_model
    release.set()


def test_predict_gives_up_after_the_timeout_with_a_clear_error(settings, hanging_model):
    settings.DYNABENCH_INFERENCE_TIMEOUT_SECONDS = 0.2
    with pytest.raises(InferenceError) as info:
        inference.predict(hanging_model, [{"statement": "they are not our friends"}])
    assert str(info.value) == "model tiny-target: no answer within 0.2 s (the inference timeout)"


def test_an_example_whose_model_hangs_is_stored_with_a_failed_prediction(
    settings, hanging_model, hate_task, annotator
):
    settings.DYNABENCH_INFERENCE_TIMEOUT_SECONDS = 0.2
    example, created = create_example(
        task=hate_task,
        annotator=annotator,
        inputs={"statement": "they are not our friends"},
        target="hateful",
    )
    assert created
    example.refresh_from_db()
    assert example.prediction_status == Example.PredictionStatus.FAILED
    assert example.model_wrong is None
    [failed] = example.predictions.all()
    assert failed.status == Prediction.Status.FAILED
    assert failed.error == "InferenceError: model tiny-target: no answer within 0.2 s (the inference timeout)"
