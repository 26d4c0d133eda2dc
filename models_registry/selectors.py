"""Reads for registered models and round targets."""

from __future__ import annotations

from django.db.models import Q, QuerySet

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


def models_visible_to(user, task: Task | None = None) -> QuerySet[RegisteredModel]:
    """Models ``user`` may see (optionally of one ``task``), any status, by task and name.

    Published models are visible to everyone, anonymous visitors included. An unpublished model is
    visible only to its owner, the owners of its task and superusers; to anyone else it is not listed,
    and views answer 404 for its id (``get_object_or_404(models_visible_to(user), pk=...)``).
    Whether the owner's name is shown is a separate matter (``is_anonymous``).
    """
    qs = RegisteredModel.objects.select_related("task", "owner")
    if task is not None:
        qs = qs.filter(task=task)
    if user is not None and user.is_authenticated and user.is_active and user.is_superuser:
        return qs
    visible = Q(is_published=True)
    if user is not None and user.is_authenticated and user.is_active:
        visible |= Q(owner=user) | Q(task__owners=user)
    # task__owners joins a many-to-many table: filter ids in a subquery so no row appears twice.
    return qs.filter(pk__in=RegisteredModel.objects.filter(visible).values("pk"))
