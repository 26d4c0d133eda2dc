"""``manage.py ensure_schedules`` (run by ``make serve``) creates the cluster's recurring jobs, once: the
schedules every app registered (``core.job_queue.register_schedule``)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.utils.module_loading import import_string
from django_q.models import Schedule


@pytest.mark.django_db
def test_ensure_schedules_creates_each_once():
    call_command("ensure_schedules", stdout=io.StringIO())
    call_command("ensure_schedules", stdout=io.StringIO())
    rows = {s.name: (s.func, s.schedule_type, s.minutes, s.repeats) for s in Schedule.objects.all()}
    assert rows == {
        "retry failed predictions": ("annotation.jobs.retry_failed_predictions_job", Schedule.MINUTES, 2, -1),
        "sweep evaluations": ("leaderboards.jobs.sweep_evaluations_job", Schedule.MINUTES, 1, -1),
        "abandon expired participations": ("crowd.jobs.abandon_expired_job", Schedule.MINUTES, 5, -1),
        "mend model checks": ("models_registry.jobs.sweep_model_checks_job", Schedule.MINUTES, 5, -1),
        "sweep training jobs": ("cycle.jobs.sweep_training_jobs_job", Schedule.MINUTES, 1, -1),
    }


@pytest.mark.django_db
def test_ensure_schedules_creates_exactly_the_registered_schedules_of_importable_jobs():
    from core.job_queue import registered_schedules

    out = io.StringIO()
    call_command("ensure_schedules", stdout=out)
    registered = registered_schedules()
    rows = {s.name: (s.func, s.minutes) for s in Schedule.objects.all()}
    assert rows == {job.name: (job.func, job.minutes) for job in registered}
    assert (
        len(registered) == 5
    )  # one a job-running app: annotation, crowd, leaderboards, cycle, models_registry
    for job in registered:
        assert callable(import_string(job.func)), job.func  # the worker imports the func by this path
        assert job.name in out.getvalue()


def test_a_schedule_registered_twice_must_be_the_same(monkeypatch):
    from core import job_queue

    monkeypatch.setattr(job_queue, "_registered", {})
    job_queue.register_schedule("tidy", "crowd.jobs.abandon_expired_job", minutes=5)
    job_queue.register_schedule("tidy", "crowd.jobs.abandon_expired_job", minutes=5)  # ready() run again
    assert [job.name for job in job_queue.registered_schedules()] == ["tidy"]
    with pytest.raises(ValueError, match="already registered"):
        job_queue.register_schedule("tidy", "crowd.jobs.abandon_expired_job", minutes=10)
    with pytest.raises(ValueError, match="already registered"):
        job_queue.register_schedule("tidy", "annotation.jobs.retry_failed_predictions_job", minutes=5)


@pytest.mark.parametrize(
    "name, func, minutes",
    [
        ("", "crowd.jobs.abandon_expired_job", 5),
        ("x", "abandon_expired_job", 5),
        ("x", "crowd.jobs.abandon-expired", 5),
        ("x", "crowd.jobs.abandon_expired_job", 0),
        ("x", "crowd.jobs.abandon_expired_job", 1.5),
        ("x", "crowd.jobs.abandon_expired_job", True),
    ],
)
def test_a_malformed_schedule_is_refused(monkeypatch, name, func, minutes):
    from core import job_queue

    monkeypatch.setattr(job_queue, "_registered", {})
    with pytest.raises(ValueError):
        job_queue.register_schedule(name, func, minutes=minutes)
    assert job_queue.registered_schedules() == ()


@pytest.mark.django_db
def test_a_schedule_of_the_projects_jobs_that_no_app_registers_is_removed_another_kept():
    """A job renamed or dropped left its schedule running (and failing) for ever; a schedule an operator
    added for code outside the project's apps stays."""
    Schedule.objects.create(name="old sweep", func="leaderboards.jobs.sweep_old_job", minutes=3, repeats=-1)
    Schedule.objects.create(
        name="operator's backup", func="django.core.management.call_command", args="'dumpdata'", repeats=-1
    )
    out = io.StringIO()
    call_command("ensure_schedules", stdout=out)
    names = set(Schedule.objects.values_list("name", flat=True))
    assert "old sweep" not in names
    assert "operator's backup" in names
    assert len(names) == 6  # the five registered and the operator's
    assert "removed (no app registers them): old sweep" in out.getvalue()
    assert "kept (not the project's jobs): operator's backup" in out.getvalue()
    out = io.StringIO()
    call_command("ensure_schedules", stdout=out)  # idempotent: nothing more to remove
    assert "removed" not in out.getvalue()
    assert set(Schedule.objects.values_list("name", flat=True)) == names
