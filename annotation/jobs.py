"""django-q2 jobs of the annotation app."""

from __future__ import annotations

from django_q.models import Schedule

from . import predictions

RETRY_SCHEDULE = "retry failed predictions"


def retry_failed_predictions_job() -> dict:
    """Score examples whose target model failed when they were written (on the ``RETRY_SCHEDULE``).

    Returns the counts of ``predictions.retry_failed_predictions``: examples, completed, still_failed.
    """
    return predictions.retry_failed_predictions()


def ensure_retry_schedule() -> None:
    """Every 2 minutes the job cluster scores examples whose model failed (``retry_failed_predictions_job``).

    Idempotent (``update_or_create`` by name); run by ``setup_demo`` and ``manage.py ensure_schedules``.
    """
    Schedule.objects.update_or_create(
        name=RETRY_SCHEDULE,
        defaults={
            "func": "annotation.jobs.retry_failed_predictions_job",
            "schedule_type": Schedule.MINUTES,
            "minutes": 2,
            "repeats": -1,
        },
    )
