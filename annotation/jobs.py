"""django-q2 jobs of the annotation app."""

from __future__ import annotations

from core.job_queue import ensure_schedule

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
    ensure_schedule(RETRY_SCHEDULE, "annotation.jobs.retry_failed_predictions_job", minutes=2)
