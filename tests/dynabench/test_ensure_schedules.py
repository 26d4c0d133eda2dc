"""``manage.py ensure_schedules`` (run by ``make serve``) creates the cluster's recurring jobs, once."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django_q.models import Schedule


@pytest.mark.django_db
def test_ensure_schedules_creates_both_once():
    call_command("ensure_schedules")
    call_command("ensure_schedules")
    rows = {s.name: (s.func, s.schedule_type, s.minutes, s.repeats) for s in Schedule.objects.all()}
    assert rows == {
        "retry failed predictions": ("annotation.jobs.retry_failed_predictions_job", Schedule.MINUTES, 2, -1),
        "sweep evaluations": ("leaderboards.jobs.sweep_evaluations_job", Schedule.MINUTES, 1, -1),
        "abandon expired participations": ("crowd.jobs.abandon_expired_job", Schedule.MINUTES, 5, -1),
        "mend model checks": ("models_registry.jobs.sweep_model_checks_job", Schedule.MINUTES, 5, -1),
    }
