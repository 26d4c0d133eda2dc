"""A participation's end: completed (also when its study's round stops collecting), returned or
abandoned, each decided once.

Every transition is a conditional ``UPDATE ... WHERE status = 'active'``: of two requests (a double click,
the scheduled job and a page counting slots), exactly one changes the row, so a slot is freed once and a
reward recorded once. Abandonment is decided lazily (when slots are counted, when an event arrives, when
the participant comes back) and by the job ``crowd.jobs.abandon_expired_job``.
"""

from __future__ import annotations

from django.db.models import DateTimeField, ExpressionWrapper, F, QuerySet
from django.utils import timezone

from .models import Participation, Study


def abandon_expired(*, study: Study | None = None, now=None) -> int:
    """Mark abandoned every active participation (of ``study``, or of every study) older than its study's
    time limit; ``ended_at`` is its deadline (started_at + time limit). Returns how many changed."""
    now = now or timezone.now()
    studies = (
        [study] if study is not None else Study.objects.filter(participations__status="active").distinct()
    )
    changed = 0
    for s in studies:
        changed += Participation.objects.filter(
            study=s, status=Participation.Status.ACTIVE, started_at__lt=now - s.time_limit
        ).update(
            status=Participation.Status.ABANDONED,
            ended_at=ExpressionWrapper(F("started_at") + s.time_limit, output_field=DateTimeField()),
        )
    return changed


def _end(qs: QuerySet[Participation], status: str, now, **extra) -> bool:
    return qs.filter(status=Participation.Status.ACTIVE).update(status=status, ended_at=now, **extra) == 1


def mark_completed(participation: Participation, *, now=None, ended_early: bool = False) -> bool:
    """active → completed at ``now``; True if this call made the change. ``ended_early``: completed because
    the study's round stopped collecting before the submission's work was done (``services.end_study``,
    ``Participation.ended_early``)."""
    now = now or timezone.now()
    return _end(
        Participation.objects.filter(pk=participation.pk),
        Participation.Status.COMPLETED,
        now,
        completed_at=now,
        ended_early=ended_early,
    )


def mark_returned(participation: Participation, *, now=None) -> bool:
    """active → returned at ``now`` (the participant gave the study back, or an owner marked it); True if
    this call made the change."""
    now = now or timezone.now()
    return _end(Participation.objects.filter(pk=participation.pk), Participation.Status.RETURNED, now)


def expire_if_late(participation: Participation, *, now=None) -> bool:
    """Abandon this one participation if its time limit has passed; True if this call made the change."""
    now = now or timezone.now()
    if participation.status != Participation.Status.ACTIVE or now <= participation.deadline:
        return False
    changed = (
        Participation.objects.filter(pk=participation.pk, status=Participation.Status.ACTIVE).update(
            status=Participation.Status.ABANDONED, ended_at=participation.deadline
        )
        == 1
    )
    participation.refresh_from_db()
    return changed
