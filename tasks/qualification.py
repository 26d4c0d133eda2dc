"""Who may write and validate on a task: block and allow lists, holds for review, onboarding (tutorial
and quiz) and daily caps (docs/crowd.md, "Qualification"). The services of annotation and validation
call ``check_can_contribute`` before every write, so pages and API obey the same rules.
"""

from __future__ import annotations

from django.utils import timezone

from .models import Task, TaskWorker


def standing_of(task: Task, user) -> TaskWorker:
    """The user's ``TaskWorker`` row on ``task``, created (unsaved fields at their defaults) if missing."""
    worker, _ = TaskWorker.objects.get_or_create(task=task, user=user)
    return worker


def hold_for_review(*, task: Task, user, reason: str, now=None) -> bool:
    """Hold ``user`` for review on ``task``: they may not write or validate there until an owner releases
    them. Returns True if this call placed the hold, False if they were already held (the first reason
    stays)."""
    standing_of(task, user)
    placed = TaskWorker.objects.filter(task=task, user=user, held_at__isnull=True).update(
        held_at=now or timezone.now(), held_reason=reason
    )
    return bool(placed)
