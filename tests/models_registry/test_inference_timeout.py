"""A local model that does not answer within the inference timeout fails the call with a clear error,
and the example is stored with a failed prediction (engine/runtime/classifier.py, "Timeout")."""

from __future__ import annotations

import threading

import pytest

from annotation.models import Example, Prediction
from annotation.services import create_example
from engine.runtime import classifier as runtime_classifier
from engine.runtime.classifier import InferenceError
from models_registry import inference


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
