"""Reads of studies, participations and the ledger (docs/crowd.md, "Crowd studies")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, Q, QuerySet, Sum

from tasks.models import Task

from .models import LedgerEntry, Participation, Study

#: Participations that hold a slot of their study.
SLOT_STATUSES = (Participation.Status.ACTIVE, Participation.Status.COMPLETED)


def studies_owned_by(user) -> QuerySet[Study]:
    """Studies on rounds of tasks ``user`` owns (every study for a superuser); none for anyone else."""
    qs = Study.objects.select_related("round__task")
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    return qs.filter(round__task__in=Task.objects.filter(owners=user))


@dataclass(frozen=True)
class Progress:
    """A participation's work so far, from its ledger rows: ``examples`` (paid examples not reversed by
    a retraction) and ``validations``, against what one submission needs."""

    examples: int
    validations: int
    examples_required: int
    validations_required: int

    @property
    def done(self) -> bool:
        return self.examples >= self.examples_required and self.validations >= self.validations_required

    @property
    def validations_due(self) -> int:
        """Verdicts still to cast (0 when none are required or all are cast)."""
        return max(0, self.validations_required - self.validations)

    @property
    def summary(self) -> str:
        """``"1 of 2 examples, 0 of 4 validations"``, naming only the amounts the study asks for."""
        parts = []
        if self.examples_required:
            parts.append(f"{self.examples} of {self.examples_required} examples")
        if self.validations_required:
            parts.append(f"{self.validations} of {self.validations_required} validations")
        return ", ".join(parts)


def progress_of(participation: Participation) -> Progress:
    """The participation's progress: its ledger rows counted by kind, retracted examples and undone
    verdicts netted out (four counts)."""
    rows = LedgerEntry.objects.filter(participation=participation)
    examples = (
        rows.filter(kind=LedgerEntry.Kind.EXAMPLE).count()
        - rows.filter(kind=LedgerEntry.Kind.REVERSAL, event_key__startswith="reversal:example:").count()
    )
    undone = Q(event_key__startswith="reversal:validation:") | Q(event_key__startswith="reversal:gold:")
    validations = (
        rows.filter(kind=LedgerEntry.Kind.VALIDATION).count()
        - rows.filter(undone, kind=LedgerEntry.Kind.REVERSAL).count()
    )
    study = participation.study
    return Progress(examples, validations, study.examples_required, study.validations_required)


def open_for_events(participation: Participation, at: datetime) -> bool:
    """Whether an event at ``at`` (an example's or a verdict's time) is paid under ``participation``:
    it started by then, and was still running: active and within its time limit, or ended (completed,
    returned, abandoned) no earlier than ``at``. The one rule, for the live handlers and the recount."""
    if participation.started_at > at:
        return False
    if participation.status == Participation.Status.ACTIVE:
        return at <= participation.deadline
    return participation.ended_at is not None and at <= participation.ended_at


def participation_for_event(user, round_id: int, at: datetime, *, lock: bool = False) -> Participation | None:
    """The participation of ``user`` in a study of round ``round_id`` that an event at ``at`` is paid
    under (``open_for_events``), or None (work outside any study is not paid). ``lock`` takes its row
    lock (``select_for_update``), so concurrent events count against the required amounts one by one."""
    if user is None or not user.is_authenticated:
        return None
    qs = Participation.objects.filter(user=user, round_id=round_id, started_at__lte=at).select_related(
        "study"
    )
    if lock:
        qs = qs.select_for_update(of=("self",))
    for participation in qs.order_by("-started_at"):
        if open_for_events(participation, at):
            return participation
    return None


def live_studies(task_id: int) -> QuerySet[Study]:
    """The task's studies that are open or have active participations, oldest first, with round and task:
    the studies a round's end ends (``services.end_stranded_studies``) and the start-round pages list."""
    live = Q(is_open=True) | Q(participations__status=Participation.Status.ACTIVE)
    ids = Study.objects.filter(live, round__task_id=task_id).values("pk")
    return Study.objects.filter(pk__in=ids).select_related("round__task").order_by("created_at", "pk")


def active_participations_of(user) -> QuerySet[Participation]:
    """``user``'s active participations (at most one per round), newest first, with study and task."""
    if not user.is_authenticated:
        return Participation.objects.none()
    return Participation.objects.filter(user=user, status=Participation.Status.ACTIVE).select_related(
        "study__round__task"
    )


def slots_taken(study: Study) -> int:
    """Participations holding a slot: active or completed (call ``lifecycle.abandon_expired`` first)."""
    return study.participations.filter(status__in=SLOT_STATUSES).count()


def unpaid_entries(study: Study) -> QuerySet[LedgerEntry]:
    """The study's ledger rows not yet exported, oldest first."""
    return LedgerEntry.objects.filter(study=study, paid_at__isnull=True).order_by("created_at", "id")


def banner_participations(user, now: datetime) -> list[tuple[Participation, str]]:
    """What the study banner shows ``user`` at ``now``, as ``(participation, state)`` pairs (one query, with
    study, round and task): every running participation (active and within its time limit), state
    ``"running"``; with none running, the newest participation when it ended without the participant's
    finishing it: ``"abandoned"`` (its time limit passed, recorded or not yet), ``"ended_early"`` (its
    study ended with the round before the work was done) or ``"ended"`` (the study ended with the round
    after the work was done, before they asked for their code). Empty for anyone else."""
    if not user.is_authenticated:
        return []
    mine = list(
        Participation.objects.filter(user=user)
        .select_related("study__round__task")
        .order_by("-started_at", "-pk")
    )
    running = [(p, "running") for p in mine if p.status == Participation.Status.ACTIVE and now <= p.deadline]
    if running or not mine:
        return running
    newest = mine[0]
    if newest.status in (Participation.Status.ACTIVE, Participation.Status.ABANDONED):
        return [(newest, "abandoned")]
    ended_with_round = newest.study.ended_at is not None and newest.ended_at == newest.study.ended_at
    if newest.status == Participation.Status.COMPLETED and ended_with_round:
        return [(newest, "ended_early" if newest.ended_early else "ended")]
    return []


@dataclass(frozen=True)
class Owed:
    """Money owed in one currency: ledger rows not yet paid (``amount``, ``rows``), and the part of it
    that is rewards (``rewards``: Prolific and MTurk pay those themselves when a submission is approved)."""

    currency: str
    amount: Decimal
    rows: int
    rewards: Decimal


@dataclass(frozen=True)
class StudyOverview:
    """The owner's figures of a study at one moment: places (``taken`` of ``max_participants``: active and
    completed), participations by status (an active one past its time limit counts as abandoned, recorded
    or not; ``ended_early``: completed ones cut short when the round ended), the running participations
    with their deadlines (``running``: ``(participation, deadline)``, soonest first) and the money owed
    per currency (``owed``)."""

    max_participants: int
    active: int
    completed: int
    returned: int
    abandoned: int
    ended_early: int
    running: list
    owed: list[Owed]

    @property
    def taken(self) -> int:
        return self.active + self.completed


def study_overview(study: Study, now: datetime) -> StudyOverview:
    """``StudyOverview`` of ``study`` at ``now`` (three queries; writes nothing)."""
    counts = {status: 0 for status in Participation.Status.values}
    running = []
    ended_early = 0
    for participation in study.participations.select_related("user__crowd_identity").order_by("started_at"):
        status = participation.status
        ended_early += participation.ended_early
        if status == Participation.Status.ACTIVE and now > participation.deadline:
            status = Participation.Status.ABANDONED
        counts[status] += 1
        if status == Participation.Status.ACTIVE:
            running.append((participation, participation.deadline))
    running.sort(key=lambda pair: pair[1])
    owed = [
        Owed(row["currency"], row["owed"], row["rows"], row["rewards"] or Decimal("0"))
        for row in unpaid_entries(study)
        .order_by()
        .values("currency")
        .annotate(
            owed=Sum("amount"),
            rows=Count("id"),
            rewards=Sum("amount", filter=Q(kind=LedgerEntry.Kind.REWARD)),
        )
        .order_by("currency")
    ]
    return StudyOverview(
        max_participants=study.max_participants,
        active=counts[Participation.Status.ACTIVE],
        completed=counts[Participation.Status.COMPLETED],
        returned=counts[Participation.Status.RETURNED],
        abandoned=counts[Participation.Status.ABANDONED],
        ended_early=ended_early,
        running=running,
        owed=owed,
    )
