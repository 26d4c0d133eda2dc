"""Uncertainty mode: the annotator's goal is an example on which the target model is unsure while the
label stays clear to people (docs/domain.md, "Uncertainty mode"; the Dynabench paper, Kiela et al. 2021,
section 3: "examples eliciting model uncertainty").

A task in this mode has an ``uncertainty`` section in its config: ``measure`` and ``threshold``.

* ``top_probability`` (label and span targets): the model's highest label probability, or for a span
  (QA) model the probability of its best span (``engine.runtime.qa_inference``: softmax of the start
  logits times softmax of the end logits, in the winning window). Unsure when it is **under** the
  threshold. For K labels the top probability is at least 1/K, so the threshold must lie in (1/K, 1).
* ``entropy`` (label targets): the normalised Shannon entropy of the label probabilities,
  ``H(p) / ln K = -sum p_k ln p_k / ln K``, in [0, 1] (1: every label equally likely; Shannon 1948).
  Unsure when it is **over** the threshold, in (0, 1).

Pure functions of a model's stored output; the decision is the server's, made when the example is stored
(``annotation.predictions``), as the model-wrong rules are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MEASURES = ("top_probability", "entropy")


def threshold_problem(measure: str, threshold: float, *, span: bool, n_labels: int) -> str | None:
    """Why ``threshold`` cannot serve ``measure`` for a target of ``n_labels`` labels (``span``: a span
    target), or None when it can. Used by ``tasks.config.validate_config``.

    >>> threshold_problem("top_probability", 0.5, span=False, n_labels=2)
    'a top_probability threshold for 2 labels must lie between 1/2 = 0.5 (the least a top probability can be) and 1, both excluded; got 0.5.'
    """
    if measure == "entropy" and span:
        return (
            "entropy applies to label targets; a span target's measure is top_probability "
            "(the probability of its best span)."
        )
    if measure == "top_probability" and not span and n_labels >= 2:
        low = 1 / n_labels
        if not low < threshold < 1:
            return (
                f"a top_probability threshold for {n_labels} labels must lie between 1/{n_labels} = "
                f"{low:.3g} (the least a top probability can be) and 1, both excluded; got {threshold:g}."
            )
        return None
    if not 0 < threshold < 1:
        what = "normalised entropy" if measure == "entropy" else "span probability"
        return f"a {what} threshold must lie between 0 and 1, both excluded; got {threshold:g}."
    return None


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def top_probability(output: dict) -> float | None:
    """The highest probability in ``output``: of its labels (``{"probabilities": {label: p}}``) or its
    best span (``{"score": p}``); None when it has neither."""
    if not isinstance(output, dict):
        return None
    probabilities = output.get("probabilities")
    if isinstance(probabilities, dict):
        values = [v for v in map(_number, probabilities.values()) if v is not None]
        return max(values) if values else None
    return _number(output.get("score"))


def normalised_entropy(output: dict) -> float | None:
    """``H(p) / ln K`` of ``output``'s label probabilities, in [0, 1] (0 * ln 0 taken as 0; the
    probabilities renormalised to sum to 1); None with fewer than two labels or no probability mass.

    >>> round(normalised_entropy({"probabilities": {"a": 0.5, "b": 0.5}}), 6)
    1.0
    """
    probabilities = output.get("probabilities") if isinstance(output, dict) else None
    if not isinstance(probabilities, dict):
        return None
    values = [max(v, 0.0) for v in map(_number, probabilities.values()) if v is not None]
    total = sum(values)
    if len(values) < 2 or total <= 0:
        return None
    entropy = -sum((v / total) * math.log(v / total) for v in values if v > 0)
    return min(1.0, entropy / math.log(len(values)))


@dataclass(frozen=True)
class UncertaintyGoal:
    """A task's uncertainty goal: ``measure`` (one of ``MEASURES``) against ``threshold``."""

    measure: str
    threshold: float

    def value(self, output: dict) -> float | None:
        """The measure of one model output (a probability or a normalised entropy, in [0, 1]); None when
        the output has no probabilities (a failed model)."""
        if self.measure == "entropy":
            return normalised_entropy(output)
        return top_probability(output)

    def unsure(self, output: dict) -> bool | None:
        """True when the model was unsure of ``output``: its top probability under the threshold, or its
        entropy over it; None when the output has no measure."""
        value = self.value(output)
        if value is None:
            return None
        return value > self.threshold if self.measure == "entropy" else value < self.threshold

    @property
    def measure_name(self) -> str:
        """The measure in words: "top probability" or "entropy"."""
        return "entropy" if self.measure == "entropy" else "top probability"

    @property
    def rule(self) -> str:
        """The goal in words, e.g. "top probability under 0.6" or "entropy over 0.9"."""
        side = "over" if self.measure == "entropy" else "under"
        return f"{self.measure_name} {side} {self.threshold:g}"

    def as_dict(self) -> dict:
        """``{"measure", "measure_name", "threshold", "rule"}`` for the API, exports and release cards."""
        return {
            "measure": self.measure,
            "measure_name": self.measure_name,
            "threshold": self.threshold,
            "rule": self.rule,
        }
