"""Writes for tasks, rounds and contexts."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .config import HATE_SPEECH_CONFIG, validate_config
from .models import Round, Task

BUILTIN_TASKS: dict[str, dict] = {
    "hate-speech": {
        "name": "Hate speech",
        "config": HATE_SPEECH_CONFIG,
        "instructions": (
            "Write a statement that the model labels wrongly but that a person would label correctly, "
            "then choose the label you intend. A statement is hateful when it expresses hatred towards a "
            "group, or a person for being part of that group, including with emoji. Use your own words; "
            "do not copy existing posts."
        ),
    },
}


class TaskError(Exception):
    """A task or round operation that the current state does not allow; the message says why."""


@transaction.atomic
def ensure_builtin_task(slug: str) -> Task:
    """Create the built-in task ``slug`` if missing (idempotent) and return it.

    Raises:
        KeyError: for an unknown slug.
    """
    spec = BUILTIN_TASKS[slug]
    validate_config(spec["config"])
    task, _ = Task.objects.get_or_create(
        slug=slug,
        defaults={"name": spec["name"], "config": spec["config"], "instructions": spec["instructions"]},
    )
    return task


@transaction.atomic
def ensure_round(*, task: Task, number: int, description: str = "", metadata: dict | None = None) -> Round:
    """Return round ``number`` of ``task``, creating it if missing. Never changes an existing round."""
    round_, _ = Round.objects.get_or_create(
        task=task, number=number, defaults={"description": description, "metadata": metadata or {}}
    )
    return round_


@transaction.atomic
def set_current_round(*, task: Task, round_: Round) -> Task:
    """Make ``round_`` the one round of ``task`` that accepts examples.

    Raises:
        TaskError: if the round belongs to another task or is closed.
    """
    if round_.task_id != task.pk:
        raise TaskError(f"{round_} is not a round of {task.slug}.")
    if round_.is_closed:
        raise TaskError(f"{round_} is closed; open a new round instead.")
    Task.objects.filter(pk=task.pk).update(current_round=round_)
    task.current_round = round_
    return task


@transaction.atomic
def close_round(*, round_: Round) -> Round:
    """Close a round: it accepts no more examples. Idempotent."""
    if not round_.is_closed:
        round_.is_closed = True
        round_.closed_at = timezone.now()
        round_.save(update_fields=["is_closed", "closed_at"])
    return round_
