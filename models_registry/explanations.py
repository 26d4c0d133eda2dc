"""Explanations of a registered model's decisions, cached: the registry's side of
``engine.explain.attributions`` (which explains a model folder and knows no Django).

A remote endpoint model and a model without weights here are answered at once with their reason; the
others are explained by ``attributions.explain_folder`` and kept in Django's cache for
``attributions.CACHE_SECONDS`` (only the deterministic ones: not a timeout or a failure).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, replace

from django.core.cache import cache

from engine.explain import attributions
from engine.explain.attributions import Explanation, Position, TokenScore
from engine.runtime import classifier as runtime_classifier
from engine.runtime.model_files import files_identity

from .models import RegisteredModel


def _cache_key(model: RegisteredModel, text, target: str | None) -> str:
    identity = json.dumps(files_identity(model.path), default=str) if model.path else ""
    payload = json.dumps([identity, target, text], ensure_ascii=False, default=list)
    digest = hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()
    return f"dynabench:attributions:v{attributions.CACHE_VERSION}:{model.pk}:{digest}"


def _from_cache(value: dict) -> Explanation:
    data = dict(value)
    data["tokens"] = tuple(TokenScore(**{**t, "pieces": tuple(t["pieces"])}) for t in data["tokens"])
    data["positions"] = tuple(Position(**p) for p in data["positions"])
    data["fields"] = tuple(data["fields"])
    data["texts"] = tuple(data["texts"])
    for name in ("labels", "input_logits", "baseline_logits"):
        data[name] = tuple(data.get(name) or ())
    return Explanation(**data)


def explain(
    model: RegisteredModel, inputs: Sequence[dict], *, targets: Sequence[str | None] | None = None
) -> list[Explanation]:
    """Explanations of a registered model's decisions on input dicts (task field name -> text), cached.

    Args:
        model: a ready model of its task.
        inputs: input dicts as ``inference.predict`` takes them.
        targets: one label (or None: the predicted one) per input; default all None.

    Returns:
        One ``Explanation`` per input, in order. Never raises for the model's sake: a remote endpoint,
        a span model, a model that fails to load or answer, or one slower than
        ``DYNABENCH_INFERENCE_TIMEOUT_SECONDS`` give an ``Explanation`` with ``unavailable`` set (only
        the deterministic ones are cached).

    Raises:
        InferenceError: an input lacks a model input field (as ``inference.predict``).
        UnknownLabel: a target that is not one of the model's labels (a ``ValueError``).
    """
    fields = tuple(model.task.cfg.model_input_fields)
    if model.source == model.Source.ENDPOINT:
        return [Explanation(unavailable=attributions.REMOTE, fields=fields) for _ in inputs]
    texts = runtime_classifier.texts_for_inputs(list(fields), list(inputs))
    if not model.path:
        return [Explanation(unavailable=attributions.NO_WEIGHTS, fields=fields) for _ in texts]
    targets = list(targets) if targets is not None else [None] * len(texts)
    results: list[Explanation] = []
    for text, target in zip(texts, targets, strict=True):
        key = _cache_key(model, text, target)
        cached = cache.get(key)
        if cached is not None:
            results.append(_from_cache(cached))
            continue
        explanation, keep = attributions.explain_folder(
            model.path, model.allow_pickle, text, target, label=str(model.pk)
        )
        explanation = replace(explanation, fields=fields)
        if keep:
            cache.set(key, asdict(explanation), attributions.CACHE_SECONDS)
        results.append(explanation)
    return results
