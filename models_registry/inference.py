"""Predictions of a registered model: the registry's side of serving, for the apps above.

``predict(model, inputs)`` reads the ``RegisteredModel`` row (source, folder, runtime, endpoint, the task's
input fields) and sends the inputs where that model runs: a local folder to the runtime
(``runtime.classifier.predict_local``: cache, batching, timeout, torch or ONNX Runtime), an endpoint to
``endpoints.calls.call_endpoint``. The runtime itself knows no database row (docs/architecture.md).

    predict(model: RegisteredModel, inputs: list[dict]) -> list[dict]
        One ``{"label": str, "probabilities": {label: float}}`` per input (a span task:
        ``{"answer": str, "answer_start": int, "score": float}``), in order. Raises ``InferenceError`` on
        any failure (missing files, a crash, a timeout, an endpoint that fails); the message starts with
        the model's name.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings

from engine.endpoints.calls import call_endpoint
from engine.runtime.classifier import (
    predict_local,
    texts_for_inputs,
    token_counts,
    unread_token_count,
)
from engine.runtime.model_files import InferenceError, without_server_paths

if TYPE_CHECKING:  # pragma: no cover
    from models_registry.models import RegisteredModel

logger = logging.getLogger(__name__)

__all__ = ["ENDPOINT_BATCH_SIZE", "InferenceError", "input_token_counts", "predict", "unread_tokens"]


def unread_tokens(
    model: RegisteredModel, model_input: dict, model_input_fields: list[str]
) -> tuple[int, int] | None:
    """``(tokens, limit)`` when the local classifier ``model`` would read only the first ``limit`` of the
    ``tokens`` that ``model_input`` (task field name -> text) makes, its end unseen; None when it reads
    it all, or cannot tell: a remote endpoint, a span (QA) model (it reads a long passage in windows),
    or a model that does not load (its prediction then fails and says why). Never raises."""
    if model.source == model.Source.ENDPOINT or not model.path:
        return None
    try:
        (text,) = texts_for_inputs(model_input_fields, [model_input])
        return unread_token_count(model.path, model.allow_pickle, model.runtime, text)
    except Exception:  # noqa: BLE001 - the prediction that follows reports a broken model
        logger.warning("could not count the tokens of an input for model %s", model.pk, exc_info=True)
        return None


def input_token_counts(
    model: RegisteredModel, model_inputs: list[dict], model_input_fields: list[str]
) -> tuple[list[int], int] | None:
    """``(tokens, limit)``: the word pieces each of ``model_inputs`` (task field name -> text) makes for
    the local classifier ``model``, special tokens included, in order, and the ``limit`` it reads of one
    input; None for a remote endpoint or a span (QA) model (it reads a long passage in windows).

    Raises:
        InferenceError: the model does not load, or an input lacks a field.
    """
    if model.source == model.Source.ENDPOINT or not model.path:
        return None
    texts = texts_for_inputs(model_input_fields, model_inputs)
    return token_counts(model.path, model.allow_pickle, model.runtime, texts)


ENDPOINT_BATCH_SIZE = 32


def _predict_remote(model: RegisteredModel, inputs: list[dict]) -> list[dict]:
    """Send the model input fields of each input to the model's endpoint, in batches."""

    cfg = model.task.cfg
    fields = cfg.model_input_fields
    texts_for_inputs(fields, inputs)  # same input errors as a local model
    payload = [{field: item[field] for field in fields} for item in inputs]
    timeout = float(settings.DYNABENCH_ENDPOINT_TIMEOUT_SECONDS)
    outputs: list[dict] = []
    for start in range(0, len(payload), ENDPOINT_BATCH_SIZE):
        batch = payload[start : start + ENDPOINT_BATCH_SIZE]
        outputs.extend(
            call_endpoint(
                model.endpoint_url, model.endpoint_secret, batch, labels=cfg.labels, timeout=timeout
            )
        )
    return outputs


def predict(model: RegisteredModel, inputs: list[dict]) -> list[dict]:
    """Predict with a registered model on input dicts (task field name -> text).

    Models with weights on disk (local directory, upload, hub download) run in this process
    (``runtime.classifier.predict_local``); an endpoint model is called over HTTP instead
    (``endpoints.calls.call_endpoint``, in batches of ``ENDPOINT_BATCH_SIZE``), with its answers checked
    against the task's labels.

    Returns:
        One ``{"label": str, "probabilities": {label: float}}`` per input, in order.

    Raises:
        InferenceError: on any failure (missing directory or files, bad input, crash in the model, no
            answer within ``DYNABENCH_INFERENCE_TIMEOUT_SECONDS``, an unreachable, slow or malformed
            endpoint); the message says which.
    """
    try:
        if model.source == model.Source.ENDPOINT:
            return _predict_remote(model, inputs)
        texts = texts_for_inputs(model.task.cfg.model_input_fields, inputs)
        return predict_local(model.path, model.allow_pickle, model.runtime, texts)
    except InferenceError as exc:
        if str(exc).startswith(f"model {model.name}"):
            raise
        raise InferenceError(f"model {model.name}: {exc}") from exc
    except Exception as exc:
        logger.warning("model %s (%s) failed", model.pk, model.path, exc_info=True)
        detail = without_server_paths(f"{type(exc).__name__}: {exc}", model.path or None)
        raise InferenceError(f"model {model.name} failed: {detail}") from exc
