"""Reads of a task owner's dashboard (``/tasks/<slug>/dashboard/``): each round's figures and the task's
training and evaluation jobs, in a fixed number of queries whatever the number of rounds, jobs or models.

Per round: collected, model-fooling, MER, verified model-fooling, vMER and the crowd cost
(``tasks.round_stats.round_counts_for_task``, docs/domain.md "MER and vMER", docs/crowd.md "Cost per
round"); waiting for validation (``validation.selectors.open_examples_of_task``: the rule of the queue);
settled (collected examples with a final status: validated correct or incorrect, or flagged); the
round's targets. Training jobs: the latest ``JOBS_SHOWN`` with their status and last progress line.
Evaluations: per model, its scores done, pending, running and failed out of all its scores, and the
unfinished or failed scores themselves (the latest ``EVALUATIONS_SHOWN``).

This app sits above every app it reads (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q

from annotation.models import Example
from annotation.selectors import collected_examples
from leaderboards.models import Score
from models_registry.models import RoundTarget
from tasks.models import Task
from tasks.round_stats import RoundCounts, round_counts_for_task
from validation.selectors import open_examples_of_task

from ..models import TrainingJob

#: Training jobs listed on the dashboard, latest first (the Training jobs admin lists them all).
JOBS_SHOWN = 20

#: Unfinished or failed evaluations listed on the dashboard, latest first (the Scores admin has them all).
EVALUATIONS_SHOWN = 20


def percent(value: float | None) -> str:
    """A rate in [0, 1] as a percentage with one decimal (0.4 -> ``"40.0%"``); ``"not measured"`` for None."""
    return "not measured" if value is None else f"{value:.1%}"


@dataclass(frozen=True)
class RoundRow:
    """One round on the dashboard: ``counts`` (collected, MER, vMER, cost: ``RoundCounts``), ``waiting``
    (open for validation), ``settled`` (collected and settled), whether it is the task's current round,
    and its target models' names in ensemble order."""

    counts: RoundCounts
    waiting: int
    settled: int
    is_current: bool
    targets: list[str] = field(default_factory=list)

    @property
    def round(self):
        return self.counts.round

    @property
    def mer_text(self) -> str:
        return percent(self.counts.mer)

    @property
    def vmer_text(self) -> str:
        # vMER counts verified examples over all scored ones; before any is settled it says nothing yet.
        return "none settled yet" if not self.settled else percent(self.counts.vmer)


@dataclass(frozen=True)
class ModelEvaluations:
    """One model's evaluations: counts of its ``Score`` rows by status, and ``total``."""

    model_id: int
    name: str
    done: int
    pending: int
    running: int
    failed: int

    @property
    def total(self) -> int:
        return self.done + self.pending + self.running + self.failed

    @property
    def percent_done(self) -> int:
        """Done out of all, a whole percentage in [0, 100] (0 with no score at all)."""
        return round(100 * self.done / self.total) if self.total else 0


@dataclass(frozen=True)
class Dashboard:
    """Everything the dashboard shows for ``task``: ``rounds`` lowest first, ``jobs`` latest first,
    ``evaluations`` per model by name, ``unfinished`` the unfinished or failed scores, latest first."""

    task: Task
    rounds: list[RoundRow]
    jobs: list[TrainingJob]
    evaluations: list[ModelEvaluations]
    unfinished: list[Score]

    @property
    def waiting(self) -> int:
        """Examples waiting for validation over all rounds."""
        return sum(r.waiting for r in self.rounds)


def _per_round(queryset) -> dict[int, int]:
    return dict(queryset.values_list("round_id").annotate(n=Count("pk")).order_by())


def task_dashboard(task: Task) -> Dashboard:
    """The dashboard of ``task``: ten or eleven queries whatever its rounds, jobs and models.

    Raises nothing; a task with no rounds, jobs or scores gets empty lists.
    """
    counts = round_counts_for_task(task)  # four or five queries
    waiting = _per_round(open_examples_of_task(task))
    settled = _per_round(collected_examples().filter(round__task=task).exclude(status=Example.Status.PENDING))
    targets: dict[int, list[str]] = defaultdict(list)
    for round_id, name in (
        RoundTarget.objects.filter(round__task=task)
        .order_by("round_id", "position", "pk")
        .values_list("round_id", "model__name")
    ):
        targets[round_id].append(name)
    rounds = [
        RoundRow(
            counts=c,
            waiting=waiting.get(c.round.pk, 0),
            settled=settled.get(c.round.pk, 0),
            is_current=c.round.pk == task.current_round_id,
            targets=targets[c.round.pk],
        )
        for c in counts
    ]
    jobs = list(TrainingJob.objects.filter(task=task).select_related("model", "requested_by")[:JOBS_SHOWN])
    S = Score.Status
    evaluations = [
        ModelEvaluations(
            model_id=row["model_id"],
            name=row["model__name"],
            **{status: row[status] for status in ("done", "pending", "running", "failed")},
        )
        for row in Score.objects.filter(dataset__task=task)
        .values("model_id", "model__name")
        .annotate(
            done=Count("pk", filter=Q(status=S.DONE)),
            pending=Count("pk", filter=Q(status=S.PENDING)),
            running=Count("pk", filter=Q(status=S.RUNNING)),
            failed=Count("pk", filter=Q(status=S.FAILED)),
        )
        .order_by("model__name")
    ]
    unfinished = list(
        Score.objects.filter(dataset__task=task)
        .exclude(status=S.DONE)
        .select_related("model", "dataset")
        .order_by("-updated_at", "-pk")[:EVALUATIONS_SHOWN]
    )
    return Dashboard(task=task, rounds=rounds, jobs=jobs, evaluations=evaluations, unfinished=unfinished)
