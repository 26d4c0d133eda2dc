"""Model-wrong rules, decided on the server, never trusted from the client (docs/domain.md,
"Model-wrong rules")."""

from __future__ import annotations

from collections.abc import Sequence

from core.metrics import squad_answer_texts, squad_f1_score

from .config import TaskConfig
from .kinds import span_answers


def label_model_wrong(*, intended_label: str, model_label: str) -> bool:
    """``exact_match``: the model is wrong when its label differs from the annotator's intended label."""
    return model_label != intended_label


def span_model_wrong(*, target, output: dict, threshold: float) -> bool:
    """``string_f1``: the model is wrong when the SQuAD F1 (v1.1 normalisation, word overlap) of its
    answer against the annotator's answer is below ``threshold`` (default 0.4).

    With several reference answers (an imported item's ``answers``) the best F1 counts, as in SQuAD.

    Raises:
        ValueError: if ``output`` has no answer string or ``target`` no answer.
    """

    answer = output.get("answer") if isinstance(output, dict) else None
    if not isinstance(answer, str):
        raise ValueError("a span model's output needs an 'answer' string")
    best = max(squad_f1_score(answer, gold) for gold in squad_answer_texts(target))
    return best < threshold


def model_wrong(cfg: TaskConfig, *, target, output: dict) -> bool | None:
    """Whether one model's ``output`` is wrong for the annotator's ``target`` under the task's rule.

    Args:
        cfg: the task config.
        target: the target field's value (a label string for multiclass targets, the span target
            ``{"answer": str, "answer_start": int}`` for ``string_f1``).
        output: the model's output, ``{"label": str, "probabilities": {label: float}}``, or for spans
            ``{"answer": str, "answer_start": int, "score": float}``.

    Returns:
        True or False; None for ``ask_user`` (the annotator decides) .

    Raises:
        ValueError: for a rule this function cannot decide, or a span output without an answer.
    """
    rule = cfg.model_wrong_rule
    if rule == "exact_match":
        return label_model_wrong(intended_label=target, model_label=output["label"])
    if rule == "string_f1":
        return span_model_wrong(target=target, output=output, threshold=cfg.string_f1_threshold)
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


def fooled_items(cfg: TaskConfig, gold: Sequence, predicted: Sequence[str]) -> tuple[list[bool], str]:
    """Which of the items the model gets wrong under the task's model-wrong rule, and that rule in words.

    A label task: the predicted label differs from the gold one (``exact_match``, and for ``ask_user``
    the same test, the only one a machine can make). A span (QA) task: the best SQuAD F1 of the answer
    against the item's reference answers is below the task's ``string_f1`` threshold (default 0.4), the
    rule that decides whether a QA example fooled the model (``span_model_wrong``).

    Args:
        cfg: the task's config.
        gold: the items' targets (labels, or span targets for QA), in item order.
        predicted: the model's labels (or answer texts for QA), one per item.

    Returns:
        ``(wrong, rule)``: one bool per item, in order, and e.g. ``"label differs"`` or ``"F1 < 0.4"``.

    Raises:
        ValueError: the sequences differ in length, or a span target has no answer.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} targets but {len(predicted)} predictions")
    if span_answers(cfg):
        threshold = cfg.string_f1_threshold
        wrong = [
            bool(span_model_wrong(target=g, output={"answer": p}, threshold=threshold))
            for g, p in zip(gold, predicted, strict=True)
        ]
        return wrong, f"F1 < {threshold:g}"
    return [g != p for g, p in zip(gold, predicted, strict=True)], "label differs"


def count_fooled(cfg: TaskConfig, gold: Sequence, predicted: Sequence[str]) -> tuple[int, str]:
    """How many of the items the model gets wrong under the task's model-wrong rule, and that rule in
    words (``fooled_items``, counted).

    Raises:
        ValueError: as ``fooled_items``.
    """
    wrong, rule = fooled_items(cfg, gold, predicted)
    return sum(wrong), rule
