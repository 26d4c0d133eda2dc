"""The arena's job: measure its leak rate (docs/benchmarking.md, "Anonymity"). Queued by
``services.request_leak_measurement``; re-exported by ``generative_bench.jobs`` (dotted path
``generative_bench.jobs.measure_leak_job``)."""

from __future__ import annotations

from tasks.models import Task

from . import services


def measure_leak_job(task_pk: int) -> None:
    """Measure and store the leak rate of task ``task_pk``'s arena (``services.measure_leak``); a task
    deleted meanwhile is skipped."""
    task = Task.objects.filter(pk=task_pk).first()
    if task is not None:
        services.measure_leak(task)
