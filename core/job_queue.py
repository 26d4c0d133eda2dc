"""Queueing background jobs on django-q2, the same way for every app (docs/architecture.md, "Jobs").

A job takes primary keys only and is queued with ``transaction.on_commit`` by the service that records
the request, so a rolled-back request queues nothing and the worker always finds the committed row.
It runs inline when ``Q_CLUSTER["sync"]`` is on (tests, ``DYNABENCH_JOBS_SYNC=1``) and in
``manage.py qcluster`` otherwise. Every job claims its row with a conditional ``UPDATE``, so a job
delivered twice runs once.

Recurring jobs: each app registers its own from its ``AppConfig.ready()`` (``register_schedule``);
``ensure_registered_schedules`` creates them all, for ``manage.py ensure_schedules`` and the demo alike.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import redis
from django.apps import apps
from django.conf import settings
from django.core.exceptions import AppRegistryNotReady
from django.db import DatabaseError, transaction
from django.utils import timezone
from django_q import tasks as django_q_tasks
from django_q.models import OrmQ, Schedule

logger = logging.getLogger(__name__)


def enqueue(func: str, *args, task_name: str) -> bool:
    """Queue the job ``func`` (a dotted path, e.g. ``"leaderboards.jobs.run_evaluation_job"``) now.

    ``sync`` is read from the settings at call time: ``django_q.conf.Conf`` reads them once, at import,
    and tests switch it per test.

    Returns:
        True when queued; False when the broker could not be reached (Redis down, or the database for the
        ORM broker). That is logged, not raised: the caller runs after its transaction committed, so the
        request that asked for the job has stored its rows and must still answer; the job's row stays
        pending and the scheduled sweeps queue it again (docs/deployment.md, "When Redis is down").
    """
    try:
        # Looked up on the module at call time, so a test can patch ``django_q.tasks.async_task``.
        django_q_tasks.async_task(
            func, *args, task_name=task_name, sync=bool(settings.Q_CLUSTER.get("sync", False))
        )
    except (redis.RedisError, DatabaseError) as exc:
        logger.error("could not queue %s (%s): the broker is unreachable: %s", task_name, func, exc)
        return False
    return True


def worker_timeout_seconds() -> int | None:
    """``Q_CLUSTER["timeout"]`` in seconds: a job running longer than this has been killed by its worker
    (None when no timeout is set)."""
    timeout = settings.Q_CLUSTER.get("timeout")
    return int(timeout) if timeout else None


def ensure_schedule(name: str, func: str, *, minutes: int) -> None:
    """Have the job cluster run ``func`` (a dotted path) every ``minutes`` minutes, for ever.

    Idempotent: the schedule is created or updated by ``name`` (django-q2's ``Schedule``). The apps'
    recurring jobs go through ``register_schedule`` and ``ensure_registered_schedules`` instead.
    """
    Schedule.objects.update_or_create(
        name=name,
        defaults={"func": func, "schedule_type": Schedule.MINUTES, "minutes": minutes, "repeats": -1},
    )


@dataclass(frozen=True)
class RecurringJob:
    """A recurring job an app registered: the job cluster runs ``func`` (a dotted path to a callable taking
    no argument) every ``minutes`` minutes, under the django-q2 schedule called ``name``."""

    name: str
    func: str
    minutes: int


#: The registered recurring jobs by schedule name, in the order they were registered (``INSTALLED_APPS``).
_registered: dict[str, RecurringJob] = {}


def _is_dotted_path(func: object) -> bool:
    parts = func.split(".") if isinstance(func, str) else []
    return len(parts) >= 2 and all(part.isidentifier() for part in parts)


def register_schedule(name: str, func: str, *, minutes: int) -> None:
    """Declare the recurring job ``name``: the job cluster runs ``func`` (a dotted path, e.g.
    ``"crowd.jobs.abandon_expired_job"``) every ``minutes`` minutes.

    Each app calls it for its own recurring jobs from its ``AppConfig.ready()``, so every installed app's
    jobs are registered once ``django.setup()`` has run, whoever then calls ``ensure_registered_schedules``
    and whatever it imported. It only records the job (no database access, nothing imported): the rows are
    created by ``ensure_registered_schedules``. Registering the same job again is a no-op (``ready()`` may
    run more than once, e.g. when a test swaps ``INSTALLED_APPS``).

    Raises:
        ValueError: ``name`` is blank; ``func`` is not a dotted path (``module.function``); ``minutes`` is
            not a positive ``int``; or ``name`` is already registered with another ``func`` or ``minutes``
            (two apps would overwrite each other's schedule).
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a recurring job needs a name, not {name!r}")
    if not _is_dotted_path(func):
        raise ValueError(
            f"recurring job {name!r}: func must be a dotted path (module.function), not {func!r}"
        )
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 1:
        raise ValueError(f"recurring job {name!r}: minutes must be a positive int, not {minutes!r}")
    job = RecurringJob(name=name, func=func, minutes=minutes)
    known = _registered.get(name)
    if known is not None and known != job:
        raise ValueError(f"recurring job {name!r} is already registered as {known}; refusing {job}")
    _registered[name] = job


def registered_schedules() -> tuple[RecurringJob, ...]:
    """Every recurring job registered so far (``register_schedule``), in the order registered."""
    return tuple(_registered.values())


@dataclass(frozen=True)
class ScheduleReport:
    """What ``ensure_registered_schedules`` did, by schedule name.

    Attributes:
        ensured: the registered schedules, created or updated, in the order registered.
        removed: schedules of the project's own jobs that no app registers any more (a job renamed or
            dropped), deleted.
        kept: schedules of other code (added in the admin, say), left as they are.
    """

    ensured: list[str]
    removed: list[str]
    kept: list[str]


def _project_apps() -> tuple[str, ...]:
    """The modules of the project's own apps: those whose folder is in the checkout, not an installed
    package (the venv may sit inside the checkout)."""
    base = Path(settings.BASE_DIR).resolve()
    return tuple(
        config.name
        for config in apps.get_app_configs()
        if Path(config.path).resolve().is_relative_to(base) and "site-packages" not in Path(config.path).parts
    )


def ensure_registered_schedules() -> ScheduleReport:
    """Make the cluster's schedules what the apps register: create or update the schedule of every
    registered recurring job (``ensure_schedule``), and delete the schedules whose job is in one of the
    project's apps but that no app registers any more (a renamed or dropped job, which would otherwise
    run, or fail, for ever), in one transaction; run by ``manage.py ensure_schedules`` and ``setup_demo``.

    Idempotent. A schedule of other code (a function outside the project's apps, added in the admin,
    say) is left as it is.

    Returns:
        A ``ScheduleReport``.

    Raises:
        django.core.exceptions.AppRegistryNotReady: before ``django.setup()`` has run every app's
            ``ready()``, when some apps' jobs would not be registered yet.
        django.db.DatabaseError: when the database cannot be written (nothing is changed then).
    """
    if not apps.ready:
        raise AppRegistryNotReady(
            "the apps register their recurring jobs in ready(): run django.setup() first"
        )
    jobs = registered_schedules()
    ours = _project_apps()
    removed, kept = [], []
    with transaction.atomic():
        for job in jobs:
            ensure_schedule(job.name, job.func, minutes=job.minutes)
        others = Schedule.objects.exclude(name__in=[job.name for job in jobs]).order_by("name")
        for schedule in others:
            module = str(schedule.func or "").split(".")[0]
            if module in ours:
                removed.append(schedule.name)
            else:
                kept.append(schedule.name)
        Schedule.objects.filter(name__in=removed).delete()
    return ScheduleReport(ensured=[job.name for job in jobs], removed=removed, kept=kept)


def release_taken_jobs() -> int:
    """On the ORM broker, make the jobs a stopped cluster had taken but not acknowledged available now.

    django-q2 takes several jobs at a time and locks each until ``Q_CLUSTER["retry"]`` seconds later; a
    cluster killed meanwhile leaves them locked for that long (an hour here). Only right when no cluster
    runs (the demo's start, before ``qcluster``): a running cluster's jobs would be handed out twice
    (harmless for our jobs, which claim their rows, but wasted work). Returns how many were released.
    """
    return OrmQ.objects.filter(lock__gt=timezone.now()).update(lock=timezone.now())
