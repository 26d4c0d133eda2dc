"""Writes of the leaderboard pages: save a weight set under a name (a fork), freeze a snapshot."""

from __future__ import annotations

from django.db import transaction
from django.utils.text import slugify

from tasks.models import Task

from .models import LeaderboardFork, LeaderboardSnapshot


class LeaderboardPermissionError(Exception):
    """The user is not an owner of the task (only task owners save forks and freeze snapshots)."""


def _check_owner(task: Task, user) -> None:
    if not task.is_owner(user):
        raise LeaderboardPermissionError("Only the task's owners can save weights or freeze snapshots.")


@transaction.atomic
def save_fork(
    *,
    task: Task,
    name: str,
    metric_weights: dict[str, float],
    dataset_weights: dict[int, float],
    user,
) -> LeaderboardFork:
    """Save ``metric_weights`` and ``dataset_weights`` (dataset id -> weight) as fork ``name`` of ``task``.

    The fork's slug is ``slugify(name)`` ("fork" when that is empty); saving a name whose slug exists
    replaces that fork's weights and name (one fork per slug).

    Raises:
        LeaderboardPermissionError: ``user`` does not own the task.
    """
    _check_owner(task, user)
    slug = slugify(name)[:100] or "fork"
    fork, _ = LeaderboardFork.objects.select_for_update().update_or_create(
        task=task,
        slug=slug,
        defaults={
            "name": name,
            "metric_weights": {str(k): float(v) for k, v in metric_weights.items()},
            "dataset_weights": {str(k): float(v) for k, v in dataset_weights.items()},
        },
        create_defaults={
            "name": name,
            "metric_weights": {str(k): float(v) for k, v in metric_weights.items()},
            "dataset_weights": {str(k): float(v) for k, v in dataset_weights.items()},
            "created_by": user,
        },
    )
    return fork


def freeze_snapshot(*, task: Task, name: str, table: dict, user) -> LeaderboardSnapshot:
    """Store ``table`` (``leaderboards.selectors.build_leaderboard``'s dict) as an immutable snapshot.

    Raises:
        LeaderboardPermissionError: ``user`` does not own the task.
    """
    _check_owner(task, user)
    return LeaderboardSnapshot.objects.create(task=task, name=name, data=table, created_by=user)
