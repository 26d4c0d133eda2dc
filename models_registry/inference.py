"""The one place that runs torch models: one cached classifier per model directory and process.

CONTRACT (other apps rely on exactly this; the implementation may change underneath):

    get_classifier(path) -> Classifier
        Loads a ``save_pretrained`` directory (safetensors) once per process and path; thread-safe.
    Classifier.labels -> list[str]
    Classifier.predict_batch(texts: list[str] | list[tuple[str, str]], batch_size=32) -> list[dict]
        Each dict: {"label": str, "probabilities": {label: float}} (probabilities sum to 1).
        Raises InferenceError when the model cannot produce an output.
    predict(model: RegisteredModel, inputs: list[dict]) -> list[dict]
        Same outputs; builds the model's text(s) from each input dict using the task config's
        ``model_input_fields``. Raises InferenceError on any failure (missing files, crash...).
"""

from __future__ import annotations


class InferenceError(Exception):
    """A model could not produce an output; the message says why (shown to owners, stored on predictions)."""


def get_classifier(path):  # pragma: no cover - replaced by the implementation
    raise NotImplementedError


def predict(model, inputs: list[dict]) -> list[dict]:  # pragma: no cover - replaced by the implementation
    raise NotImplementedError
