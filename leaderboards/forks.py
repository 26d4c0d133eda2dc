"""Writes of the leaderboard pages: save a weight set under a name (a fork), freeze a snapshot."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from tasks.models import Task

from .models import LeaderboardFork, LeaderboardSnapshot


class LeaderboardPermissionError(Exception):
    """The user is not an owner of the task (only task owners save forks and freeze snapshots)."""


def _check_owner(task: Task, user) -> None:
    if not task.is_owner(user):
        raise LeaderboardPermissionError("Only the task's owners can save weights or freeze snapshots.")


class ForkNameTakenError(Exception):
    """A weight set of that name exists already and the owner did not ask to replace it."""


#: Room left in the 100-character slug for a ``-<n>`` suffix that makes it unique.
_SLUG_BASE_LENGTH = 90


def _unique_fork_slug(task: Task, name: str) -> str:
    """``slugify(name)`` ("fork" when it has no ASCII letter or digit: emoji, Arabic), made unique in
    the task with ``-2``, ``-3``, ... (the first free one)."""
    base = slugify(name)[:_SLUG_BASE_LENGTH].strip("-") or "fork"
    taken = set(
        LeaderboardFork.objects.filter(task=task, slug__startswith=base).values_list("slug", flat=True)
    )
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def save_fork(
    *,
    task: Task,
    name: str,
    metric_weights: dict[str, float],
    dataset_weights: dict[int, float],
    user,
    replace: bool = False,
) -> LeaderboardFork:
    """Save ``metric_weights`` and ``dataset_weights`` (dataset id -> weight) as fork ``name`` of ``task``.

    A new name gets a new fork whose slug is ``slugify(name)``, or ``fork`` when that is empty, with
    ``-2``, ``-3``, ... appended when another fork has it (names that differ only in case, accents or
    emoji never share a fork). A name that exists already (exactly) is refused unless ``replace``: then
    that fork's weights are replaced and its slug (its shared URL) kept.

    Raises:
        LeaderboardPermissionError: ``user`` does not own the task.
        ForkNameTakenError: a fork of that name exists and ``replace`` is false.
    """
    _check_owner(task, user)
    weights = {
        "metric_weights": {str(k): float(v) for k, v in metric_weights.items()},
        "dataset_weights": {str(k): float(v) for k, v in dataset_weights.items()},
    }
    for attempt in range(_SLUG_ATTEMPTS):
        try:
            return _save_fork_once(task, name, weights, user, replace)
        except IntegrityError:
            # Another request took the same slug between our look-up and insert: look again.
            if attempt == _SLUG_ATTEMPTS - 1:
                raise


_SLUG_ATTEMPTS = 5


@transaction.atomic
def _save_fork_once(task: Task, name: str, weights: dict, user, replace: bool) -> LeaderboardFork:
    existing = LeaderboardFork.objects.select_for_update().filter(task=task, name=name).first()
    if existing is None:
        return LeaderboardFork.objects.create(
            task=task, name=name, slug=_unique_fork_slug(task, name), created_by=user, **weights
        )
    if not replace:
        raise ForkNameTakenError(
            f'A weight set named {name!r} exists already. Tick "Replace it" to overwrite its weights, '
            "or choose another name."
        )
    for key, value in weights.items():
        setattr(existing, key, value)
    existing.save(update_fields=list(weights))
    return existing


def freeze_snapshot(*, task: Task, name: str, table: dict, user) -> LeaderboardSnapshot:
    """Store ``table`` (``leaderboards.selectors.build_leaderboard``'s dict) as an immutable snapshot.

    Raises:
        LeaderboardPermissionError: ``user`` does not own the task.
    """
    _check_owner(task, user)
    return LeaderboardSnapshot.objects.create(task=task, name=name, data=table, created_by=user)
