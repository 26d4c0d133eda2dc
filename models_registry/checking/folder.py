"""Checks of a model folder before it is registered ready: it loads, its labels are the task's, and a
probe input gets an answer of the right shape (a label with probabilities, or a span at its offset).

Read-only: the registration services (``services``) store what these return.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.runtime.classifier import InferenceError, clear_cache, get_classifier, texts_for_inputs
from engine.runtime.model_files import without_server_paths
from engine.runtime.weights import count_parameters
from models_registry.kinds import span_models
from tasks.models import Task

logger = logging.getLogger(__name__)

PROBE_TEXT = "This is a probe input to check that the model answers."


def check_model_folder(task: Task, path: str, allow_pickle: bool) -> tuple[dict, int | None, str]:
    """Load and probe a model directory; return (config facts, parameter count, error message or "").

    The message is fit to show: no server path, no folder uuid (``public_error``).
    """
    facts, parameters, error = _load_and_probe(task, path, allow_pickle)
    return facts, parameters, public_error(error, path)


def public_error(message: str, path: str | Path | None) -> str:
    """``message`` without server paths (``model_files.without_server_paths``); logged in full if changed."""

    if not message:
        return message
    public = without_server_paths(message, path or None)
    if public != message:
        logger.info("model check failure in %s: %s", path, message)
    return public


def _load_and_probe(task: Task, path: str, allow_pickle: bool) -> tuple[dict, int | None, str]:
    facts: dict = {}
    try:
        clear_cache(path)  # a model retrained into the same directory must be read again
        classifier = get_classifier(path, allow_pickle=allow_pickle)
    except InferenceError as exc:
        return facts, None, str(exc)
    config = classifier.model.config
    facts = {
        "backbone": str(getattr(config, "backbone", "") or getattr(config, "_name_or_path", "") or ""),
        "preprocessing": dict(getattr(config, "preprocessing", None) or {}),
        "labels": list(classifier.labels),
        "model_type": getattr(config, "model_type", ""),
    }
    try:
        parameters = count_parameters(path)
    except (OSError, ValueError):
        parameters = sum(p.numel() for p in classifier.model.parameters())
    task_labels = task.cfg.labels
    if sorted(classifier.labels) != sorted(task_labels):
        return (
            facts,
            parameters,
            f"model labels {classifier.labels} do not match task labels {task_labels}",
        )
    fields = task.cfg.model_input_fields
    try:
        texts = texts_for_inputs(fields, [dict.fromkeys(fields, PROBE_TEXT)])
        [output] = classifier.predict_batch(texts)
    except InferenceError as exc:
        return facts, parameters, f"probe input failed: {exc}"
    if span_models(task.cfg):
        # A span task needs a span (QA) model: its answer must lie in the probe passage at its offset.
        passage = texts[0][0] if isinstance(texts[0], tuple) else texts[0]
        answer, start = output.get("answer"), output.get("answer_start")
        if not isinstance(answer, str) or not isinstance(start, int):
            return facts, parameters, f"this task needs a question-answering (span) model; got {output}"
        if passage[start : start + len(answer)] != answer:
            return facts, parameters, f"probe input gave an answer that is not at its offset: {output}"
        return facts, parameters, ""
    if "label" not in output:
        return facts, parameters, "this task needs a classifier; the model answers with spans"
    total = sum(output["probabilities"].values())
    if output["label"] not in task_labels or abs(total - 1.0) > 1e-3:
        return facts, parameters, f"probe input gave an invalid output: {output}"
    return facts, parameters, ""
