"""Reads of studies, participations and the ledger (docs/crowd.md, "Crowd studies")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

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
