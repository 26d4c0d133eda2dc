"""Queueing background jobs on django-q2, the same way for every app (docs/architecture.md, "Jobs").

A job takes primary keys only and is queued with ``transaction.on_commit`` by the service that records
the request, so a rolled-back request queues nothing and the worker always finds the committed row.
It runs inline when ``Q_CLUSTER["sync"]`` is on (tests, ``DYNABENCH_JOBS_SYNC=1``) and in
``manage.py qcluster`` otherwise. Every job claims its row with a conditional ``UPDATE``, so a job
delivered twice runs once.
"""

from __future__ import annotations

from django.conf import settings
from django_q import tasks as django_q_tasks


def enqueue(func: str, *args, task_name: str) -> None:
    """Queue the job ``func`` (a dotted path, e.g. ``"leaderboards.jobs.run_evaluation_job"``) now.

    ``sync`` is read from the settings at call time: ``django_q.conf.Conf`` reads them once, at import,
    and tests switch it per test.
    """
    # Looked up on the module at call time, so a test can patch ``django_q.tasks.async_task``.
    django_q_tasks.async_task(
        func, *args, task_name=task_name, sync=bool(settings.Q_CLUSTER.get("sync", False))
    )


def worker_timeout_seconds() -> int | None:
    """``Q_CLUSTER["timeout"]`` in seconds: a job running longer than this has been killed by its worker
    (None when no timeout is set)."""
    timeout = settings.Q_CLUSTER.get("timeout")
    return int(timeout) if timeout else None
