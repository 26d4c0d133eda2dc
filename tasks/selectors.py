"""Reads of tasks, rounds and contexts."""

from __future__ import annotations

import random

from django.db.models import Count, Q, QuerySet
from django.http import Http404

from .models import Context, Round, Task

STRATEGIES = ("least_used", "uniform", "least_fooled")


def active_tasks() -> QuerySet[Task]:
    """Active tasks with their current round joined, ordered by name."""
    return Task.objects.filter(is_active=True).select_related("current_round")


def task_by_slug(slug: str) -> Task:
    """The active task with this slug, its current round's ``task`` set to it (not read again when a
    caller goes from the round to its task, as the validation queue does). Raises ``Task.DoesNotExist``."""
    task = active_tasks().get(slug=slug)
    task.linked_current_round()
    return task


def task_or_404(slug: str) -> Task:
    """The active task ``slug``; ``Http404("No such task.")`` for an unknown or inactive one.

    The one lookup of a task by slug for pages and the API alike: DRF turns ``Http404`` into its JSON
    404 with the same message.
    """
    try:
        return task_by_slug(slug)
    except Task.DoesNotExist:
        raise Http404("No such task.") from None


def rounds_of(task: Task) -> QuerySet[Round]:
    """A task's rounds, lowest number first."""
    return Round.objects.filter(task=task).order_by("number")


def context_of_round(round_: Round, pk) -> Context | None:
    """The context ``pk`` if it belongs to ``round_``, else None (also for a malformed id)."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        return None
    return Context.objects.filter(round=round_, pk=pk).first()


#: The key of a context's ``metadata`` that marks it as leaving the round's target no room for the input
#: (``models_registry.context_room``): such a context is not served.
NO_ROOM = "no_room_for_input"


def contexts_without_room(round_: Round) -> int:
    """How many contexts of ``round_`` are not served because they leave its target no room for the
    input (marked ``NO_ROOM``)."""
    return Context.objects.filter(round=round_, metadata__has_key=NO_ROOM).count()


def next_context(
    *,
    round_: Round,
    strategy: str = "least_used",
    tag: str | None = None,
    rng: random.Random | None = None,
    tags: list[str] | None = None,
    exclude=None,
) -> Context | None:
    """The context to show the next annotator of ``round_`` (docs/domain.md, "Context serving").

    Strategies:
        ``least_used``: a context with the fewest examples written on it, random among equals. A context
            counts as used when an example is submitted on it (retracted examples do not count), so
            every context is served before any is served twice: none starves.
        ``uniform``: any context, uniformly at random.
        ``least_fooled``: a context with the fewest model-fooling examples (retracted ones left out),
            then the fewest examples, random among equals.

    One annotated query ordered by the counts; the database breaks ties at random. With ``rng`` (for
    reproducible tests) the tie is broken by ``rng`` instead: the tied contexts are counted and one is
    fetched by offset, so no request loads every context into Python.

    Args:
        round_: the round whose contexts to serve.
        strategy: one of ``STRATEGIES``.
        tag: serve only contexts with this tag (None or "" for any).
        tags: serve only contexts with one of these tags (None or empty for any); combines with ``tag``.
        rng: an optional ``random.Random`` for the random choices.
        exclude: a context id not to serve ("Skip this context"); ignored when it is the only match.

    A context marked ``NO_ROOM`` (too long to leave the target room for the input) is never served.

    Returns:
        A ``Context``, or None when the round has no (matching) context.

    Raises:
        ValueError: an unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown context strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    qs = Context.objects.filter(round=round_).exclude(metadata__has_key=NO_ROOM)
    if tag:
        qs = qs.filter(tag=tag)
    if tags:
        qs = qs.filter(tag__in=list(tags))
    if exclude is not None and qs.exclude(pk=exclude).exists():
        qs = qs.exclude(pk=exclude)
    if strategy == "uniform":
        return _pick(qs, rng)
    # Counting through the reverse relation of annotation's Example (a read of its table by the
    # context's own foreign key; the base app imports nothing from annotation).
    live = Q(examples__is_retracted=False)
    qs = qs.annotate(n_used=Count("examples", filter=live))
    keys = ["n_used"]
    if strategy == "least_fooled":
        qs = qs.annotate(n_fooled=Count("examples", filter=live & Q(examples__model_wrong=True)))
        keys = ["n_fooled", "n_used"]
    if rng is None:
        return qs.order_by(*keys, "?").first()
    best = qs.order_by(*keys, "pk").values(*keys).first()
    if best is None:
        return None
    return _pick(qs.filter(**best), rng)


def _pick(qs: QuerySet[Context], rng: random.Random | None) -> Context | None:
    """One context of ``qs`` at random: by the database, or by ``rng`` with a count and an offset."""
    if rng is None:
        return qs.order_by("?").first()
    count = qs.count()
    if not count:
        return None
    return qs.order_by("pk")[rng.randrange(count)]


def next_round_number(task: Task) -> int:
    """The number the task's next round gets: the highest existing number + 1 (1 for a new task)."""
    last = Round.objects.filter(task=task).order_by("-number").values_list("number", flat=True).first()
    return (last or 0) + 1
