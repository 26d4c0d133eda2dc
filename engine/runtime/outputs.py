"""The one shape of a model's output, as every app stores and shows it (docs/architecture.md, "Where
does this rule live", model outputs).

* A classifier: ``{"label": str, "probabilities": {label: float}}``.
* A span (extractive QA) model: ``{"answer": str, "answer_start": int, "score": float}``, where
  ``answer_start`` is the answer's code-point offset into the passage; it is absent when the model
  gave none (an endpoint may answer with the text only).
"""

from __future__ import annotations

import math

from engine.runtime.model_files import InferenceError


def _finite(value, what: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise InferenceError(f"the model gave a non-finite {what}")
    return number


def clean_output(raw: object) -> dict:
    """``raw`` (one output of ``inference.predict``) in the shape above, with finite floats.

    A ``label`` key makes it a classifier's output, else an ``answer`` key a span model's.

    Raises:
        InferenceError: not a dict, neither shape, or a probability or score that is not a finite number.
    """
    if not isinstance(raw, dict):
        raise InferenceError(f"expected an output object, got {type(raw).__name__}")
    if "label" in raw:
        probabilities = {
            str(label): _finite(p, f"probability for {label!r}")
            for label, p in (raw.get("probabilities") or {}).items()
        }
        return {"label": str(raw["label"]), "probabilities": probabilities}
    if "answer" in raw:
        span = {"answer": str(raw["answer"]), "score": _finite(raw.get("score", 0.0), "score")}
        start = raw.get("answer_start")
        if isinstance(start, int) and not isinstance(start, bool):
            span["answer_start"] = start
        return span
    raise InferenceError(f"the model gave an output of an unknown shape: {sorted(raw)[:5]}")
