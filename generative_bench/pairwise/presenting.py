"""Pairwise judges' figures as plain data, for the arena ranking page and the API alike."""

from __future__ import annotations

from models_registry.selectors import ModelLabels
from tasks.models import Task

from .selectors import pairwise_panels


def pairwise_figures(task: Task, user) -> list[dict]:
    """``[{id, name, model, status, progress, judged_both_orders, flips, flip_rate, flip_interval,
    compared_with_people, agreeing, agreement, agreement_interval, models_ranked, rank_correlation,
    replay_pairs}]`` for ``task``'s active pairwise judges by name
    (``core.pairwise_judge.PairwiseJudgeFigures.as_dict``, on arena battles; ``replay_pairs`` the same
    figures on replay pairs, against people's ratings); the judge's model named as the viewer may see it."""
    label = ModelLabels(user, task)

    return [
        {
            "id": panel.judge.pk,
            "name": panel.judge.name,
            "model": label(panel.judge.model),
            "status": panel.judge.status,
            "progress": panel.judge.progress,
            **panel.figures.as_dict(),
            "replay_pairs": panel.replay_figures.as_dict(),
        }
        for panel in pairwise_panels(task)
    ]
