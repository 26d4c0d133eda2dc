"""The task list's cards: each active task's status, its current round's MER and the viewer's own count.

A read of this app's tables plus annotation's examples and the registry's round targets, both above
this app: reached through the round's reverse relations (``Round.examples``, ``Round.targets``) and
their model classes, never by an import (docs/architecture.md, "Reaching up without an import").
MER is ``tasks.round_stats``' (docs/domain.md, "MER and vMER"), over the same count filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.db.models import Count, Q

from .models import Round, Task
from .round_stats import examples_model, rate, with_round_counts
from .selectors import active_tasks

OPEN, SETTING_UP, CLOSED = "open", "setting-up", "closed"
STATUS_LABELS = {OPEN: "Open", SETTING_UP: "Setting up", CLOSED: "Closed"}


@cache
def _ready_status() -> str:
    """The registry's "ready" model status, read off ``Round.targets`` -> ``RoundTarget.model``."""
    target_model = Round._meta.get_field("targets").related_model
    return target_model._meta.get_field("model").related_model.Status.READY


@dataclass(frozen=True)
class TaskCard:
    """One card of the task list.

    Attributes:
        task: the task, its ``current_round`` joined.
        status: ``open`` (the current round accepts examples and every target is ready), ``setting-up``
            (no current round while some round is still unclosed or the task has none yet, as while the
            demo trains its targets; or the current round's targets are not all ready) or ``closed``
            (the current round is closed, or every round is and none is current).
        collected: examples collected in the current round (0 without one).
        scored: those whose model verdict is known (the MER's denominator).
        fooling: those that fooled the model (the MER's numerator).
        mine: the viewer's own examples on the task, all rounds, written here and not retracted (None
            for an anonymous viewer).
    """

    task: Task
    status: str
    collected: int = 0
    scored: int = 0
    fooling: int = 0
    mine: int | None = None

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]

    @property
    def is_open(self) -> bool:
        return self.status == OPEN

    @property
    def mer(self) -> float | None:
        """The current round's MER in [0, 1] (``round_stats.rate``); None when nothing is scored."""
        return rate(self.fooling, self.scored)

    @property
    def mer_text(self) -> str:
        """The MER as a whole percentage ("40%"), or "" when not measured."""
        mer = self.mer
        return "" if mer is None else f"{mer:.0%}"


def task_cards(user) -> list[TaskCard]:
    """A card per active task, by name, as ``user`` (possibly anonymous) sees the list.

    Five queries whatever the number of tasks: the tasks, the current rounds' counts, their targets'
    readiness, the rounds of tasks without a current round, and the viewer's examples per task (not
    run for an anonymous viewer).
    """
    tasks = list(active_tasks().order_by("name", "pk"))
    current_ids = [t.current_round_id for t in tasks if t.current_round_id]
    counts = {
        r.pk: r
        for r in with_round_counts(Round.objects.filter(pk__in=current_ids)).only("pk", "task_id", "number")
    }
    targets = {
        pk: (n, n_ready)
        for pk, n, n_ready in Round.objects.filter(pk__in=current_ids)
        .annotate(
            n=Count("targets"), n_ready=Count("targets", filter=Q(targets__model__status=_ready_status()))
        )
        .values_list("pk", "n", "n_ready")
    }
    without_current = [t.pk for t in tasks if not t.current_round_id]
    unclosed = dict(
        Round.objects.filter(task_id__in=without_current)
        .values_list("task_id")
        .annotate(n=Count("pk", filter=Q(is_closed=False)))
        .order_by()
    )
    mine: dict[int, int] = {}
    if user.is_authenticated and tasks:
        Example = examples_model()
        mine = dict(
            Example.objects.filter(annotator=user, is_retracted=False, round__task__in=[t.pk for t in tasks])
            .exclude(source=Example.Source.IMPORTED)
            .values_list("round__task_id")
            .annotate(n=Count("pk"))
            .order_by()
        )
    cards = []
    for task in tasks:
        own = mine.get(task.pk, 0) if user.is_authenticated else None
        current = task.current_round
        if current is None:
            # No round at all, or one still unclosed but not yet current: being set up.
            has_rounds = task.pk in unclosed
            status = SETTING_UP if not has_rounds or unclosed[task.pk] else CLOSED
            cards.append(TaskCard(task=task, status=status, mine=own))
            continue
        n_targets, n_ready = targets.get(current.pk, (0, 0))
        if current.is_closed:
            status = CLOSED
        elif n_ready < n_targets:
            status = SETTING_UP
        else:
            status = OPEN
        r = counts[current.pk]
        cards.append(
            TaskCard(
                task=task,
                status=status,
                collected=r.n_collected,
                scored=r.n_scored,
                fooling=r.n_fooling,
                mine=own,
            )
        )
    return cards
