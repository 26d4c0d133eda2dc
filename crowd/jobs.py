"""django-q2 jobs of the crowd app."""

from __future__ import annotations

from core.job_queue import ensure_schedule

from . import lifecycle

ABANDON_SCHEDULE = "abandon expired participations"


def abandon_expired_job() -> int:
    """Mark abandoned the active participations past their study's time limit (``ABANDON_SCHEDULE``);
    returns how many. The same conditional UPDATE as the lazy check, so each is abandoned once."""
    return lifecycle.abandon_expired()


def ensure_abandon_schedule() -> None:
    """Every 5 minutes the job cluster frees the places of expired participations. Idempotent; run by
    ``manage.py ensure_schedules``."""
    ensure_schedule(ABANDON_SCHEDULE, "crowd.jobs.abandon_expired_job", minutes=5)
