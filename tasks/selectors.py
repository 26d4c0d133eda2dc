"""Reads of tasks, rounds and contexts."""

from __future__ import annotations

from django.db.models import QuerySet

from .models import Round, Task


def active_tasks() -> QuerySet[Task]:
    """Active tasks with their current round joined, ordered by name."""
    return Task.objects.filter(is_active=True).select_related("current_round")


def task_by_slug(slug: str) -> Task:
    """The active task with this slug. Raises ``Task.DoesNotExist``."""
    return active_tasks().get(slug=slug)


def rounds_of(task: Task) -> QuerySet[Round]:
    """A task's rounds, lowest number first."""
    return Round.objects.filter(task=task).order_by("number")
