"""Model-wrong rules (DOMAIN.md): decided on the server, never trusted from the client."""

from __future__ import annotations

from collections.abc import Sequence

from .config import TaskConfig


def label_model_wrong(*, intended_label: str, model_label: str) -> bool:
    """``exact_match``: the model is wrong when its label differs from the annotator's intended label."""
    return model_label != intended_label


def model_wrong(cfg: TaskConfig, *, target, output: dict) -> bool | None:
    """Whether one model's ``output`` is wrong for the annotator's ``target`` under the task's rule.

    Args:
        cfg: the task config.
        target: the target field's value (a label string for multiclass targets).
        output: the model's output, ``{"label": str, "probabilities": {label: float}}``.

    Returns:
        True or False; None for ``ask_user`` (the annotator decides) .

    Raises:
        ValueError: for a rule this function cannot decide (span rules arrive with the QA task).
    """
    rule = cfg.model_wrong_rule
    if rule == "exact_match":
        return label_model_wrong(intended_label=target, model_label=output["label"])
    if rule == "ask_user":
        return None
    raise ValueError(f"model-wrong rule {rule!r} is not supported for this target")


def ensemble_model_wrong(rule: str, verdicts: Sequence[bool]) -> bool | None:
    """Combine per-model verdicts: fooled if ``any``, ``all`` or a strict ``majority`` are wrong.

    Returns None when there are no verdicts (no model answered).
    """
    if not verdicts:
        return None
    wrong = sum(1 for v in verdicts if v)
    if rule == "any":
        return wrong > 0
    if rule == "all":
        return wrong == len(verdicts)
    if rule == "majority":
        return wrong * 2 > len(verdicts)
    raise ValueError(f"unknown ensemble rule {rule!r}")
