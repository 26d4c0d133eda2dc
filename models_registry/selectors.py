"""Reads for registered models and round targets."""

from __future__ import annotations

from django.db.models import QuerySet

from tasks.models import Round, Task

from .models import RegisteredModel, RoundTarget


def target_models_for_round(round: Round) -> list[RegisteredModel]:
    """The round's ready target models, in position order (an ensemble when more than one)."""
    targets = (
        RoundTarget.objects.filter(round=round, model__status=RegisteredModel.Status.READY)
        .select_related("model", "model__task")
        .order_by("position", "id")
    )
    return [t.model for t in targets]


def ready_models_for_task(task: Task) -> QuerySet[RegisteredModel]:
    """The task's models whose status is ready, by name."""
    return RegisteredModel.objects.filter(task=task, status=RegisteredModel.Status.READY).order_by("name")
