"""Tasks, rounds and contexts.

``builtin_task`` and ``open_round`` go through ``tasks.services`` (a built-in task's config, the one
current round of a task); ``TaskFactory`` and ``ContextFactory`` write plain rows.
"""

from __future__ import annotations

import copy

import factory
from factory.django import DjangoModelFactory


def _hate_speech_config() -> dict:
    from tasks.builtin_configs import HATE_SPEECH_CONFIG

    return copy.deepcopy(HATE_SPEECH_CONFIG)


def prompt_config() -> dict:
    """The hate-speech config with a "prompt" context field annotators write against."""
    return {
        **_hate_speech_config(),
        "context_fields": [{"name": "prompt", "type": "string", "label": "Prompt"}],
    }


def builtin_task(slug: str):
    """The built-in task ``slug`` (``hate-speech``, ``sentiment``, ``nli``, ``qa``), made by the service."""
    from tasks.services import ensure_builtin_task

    return ensure_builtin_task(slug)


def open_round(task, number: int = 1):
    """Round ``number`` of ``task`` (made if missing), set current through the service."""
    from tasks.services import ensure_round, set_current_round

    round_ = ensure_round(task=task, number=number)
    set_current_round(task=task, round_=round_)
    return round_


class TaskFactory(DjangoModelFactory):
    """A task row ``task-<n>`` with a copy of the hate-speech config unless ``config`` is given."""

    class Meta:
        model = "tasks.Task"

    slug = factory.Sequence(lambda n: f"task-{n}")
    name = factory.LazyAttribute(lambda task: task.slug.replace("-", " ").title())
    config = factory.LazyFunction(_hate_speech_config)


def prompt_task():
    """A two-label task "prompted" whose annotators write against a "prompt" context; round 1 current."""
    task = TaskFactory(slug="prompted", name="Prompted", config=prompt_config())
    open_round(task)
    return task


class ContextFactory(DjangoModelFactory):
    """A context of ``round`` (required), of that round's task."""

    class Meta:
        model = "tasks.Context"

    round = None
    task = factory.LazyAttribute(lambda context: context.round.task)
    data = factory.Sequence(lambda n: {"prompt": f"prompt number {n}"})
