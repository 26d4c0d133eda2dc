"""Pairwise judges' figures as plain data, for the arena ranking page and the API alike."""

from __future__ import annotations

from models_registry.selectors import anonymous_numbers, models_visible_to, sees_real_identity
from tasks.models import Task

from .selectors import pairwise_panels

#: Shown instead of a judge's model the viewer may not see.
HIDDEN_MODEL = "a model not published"


def pairwise_figures(task: Task, user) -> list[dict]:
    """``[{id, name, model, status, progress, judged_both_orders, flips, flip_rate, flip_interval,
    compared_with_people, agreeing, agreement, agreement_interval, models_ranked, rank_correlation}]``
    for ``task``'s active pairwise judges by name (``core.pairwise_judge.PairwiseJudgeFigures.as_dict``);
    the judge's model named as the viewer may see it."""
    visible = set(models_visible_to(user, task).values_list("pk", flat=True))
    numbers, owns = anonymous_numbers(task), task.is_owner(user)

    def label(model) -> str:
        if model.pk not in visible:
            return HIDDEN_MODEL
        return (
            model.name
            if sees_real_identity(user, model, owns)
            else f"Anonymous model {numbers.get(model.pk, '?')}"
        )

    return [
        {
            "id": panel.judge.pk,
            "name": panel.judge.name,
            "model": label(panel.judge.model),
            "status": panel.judge.status,
            "progress": panel.judge.progress,
            **panel.figures.as_dict(),
        }
        for panel in pairwise_panels(task)
    ]
