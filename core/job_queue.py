"""Queueing background jobs on django-q2, the same way for every app (docs/architecture.md, "Jobs").

A job takes primary keys only and is queued with ``transaction.on_commit`` by the service that records
the request, so a rolled-back request queues nothing and the worker always finds the committed row.
It runs inline when ``Q_CLUSTER["sync"]`` is on (tests, ``DYNABENCH_JOBS_SYNC=1``) and in
``manage.py qcluster`` otherwise. Every job claims its row with a conditional ``UPDATE``, so a job
delivered twice runs once.
"""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.db import DatabaseError
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

    Idempotent: the schedule is created or updated by ``name`` (django-q2's ``Schedule``).
    """
    Schedule.objects.update_or_create(
        name=name,
        defaults={"func": func, "schedule_type": Schedule.MINUTES, "minutes": minutes, "repeats": -1},
    )


def release_taken_jobs() -> int:
    """On the ORM broker, make the jobs a stopped cluster had taken but not acknowledged available now.

    django-q2 takes several jobs at a time and locks each until ``Q_CLUSTER["retry"]`` seconds later; a
    cluster killed meanwhile leaves them locked for that long (an hour here). Only right when no cluster
    runs (the demo's start, before ``qcluster``): a running cluster's jobs would be handed out twice
    (harmless for our jobs, which claim their rows, but wasted work). Returns how many were released.
    """
    return OrmQ.objects.filter(lock__gt=timezone.now()).update(lock=timezone.now())
