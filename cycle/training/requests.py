"""Requests to train a round's target: record a ``TrainingJob``, queue it, and clean up after jobs a
stopped worker left running. The job itself is ``cycle.jobs.run_training_job``.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.job_queue import enqueue, worker_timeout_seconds
from tasks.models import Round, Task

from ..models import TrainingJob
from .natural import natural_count, natural_datasets
from .planning import (
    BACKBONE_CHOICES,
    RECIPES,
    TargetTrainingError,
    check_model_name_free,
    check_model_name_syntax,
    default_model_name,
    work_dir_pattern,
)

logger = logging.getLogger(__name__)


INTERRUPTED = "interrupted: the job worker stopped before the job finished; run it again"


PENDING = (TrainingJob.Status.QUEUED, TrainingJob.Status.RUNNING)


def _job_model_name(job: TrainingJob) -> str:
    return job.name or default_model_name(job.rounds or [], job.recipe)


def _remove_work_dirs(task: Task, name: str) -> None:
    try:
        pattern = work_dir_pattern(name)
    except TargetTrainingError:
        return  # a name queued before names were checked: never glob with it
    task_dir = Path(settings.DYNABENCH_MODEL_DIR) / task.slug
    for folder in task_dir.glob(pattern):
        if folder.parent == task_dir and folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)


def fail_interrupted_training_jobs(*, older_than_seconds: float | None = None) -> int:
    """Mark training jobs left ``running`` by a worker that is gone as ``failed``; remove their work files.

    Which jobs: with ``older_than_seconds=None`` every running job, which is right only when no worker
    runs (at start-up, before ``qcluster``, as the demo does); otherwise those started more than
    ``older_than_seconds`` ago (``worker_timeout_seconds()`` is the safe bound: django-q kills a job
    that runs longer). Each gets ``error_message`` ``INTERRUPTED`` and ``finished_at``; the admin's
    "Run again" queues it anew. Their half-written work directories (``.<name>.training-*`` next to the
    model) are removed, unless another running job of the same task and name may still be writing one.
    A finished model directory is never touched.

    Returns:
        How many jobs were marked failed.
    """
    stale = TrainingJob.objects.filter(status=TrainingJob.Status.RUNNING)
    if older_than_seconds is not None:
        cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
        stale = stale.filter(started_at__lt=cutoff)
    count = 0
    for job in stale.select_related("task").order_by("pk"):
        # Conditional UPDATE: a job that finished in the meantime keeps its result.
        if not TrainingJob.objects.filter(pk=job.pk, status=TrainingJob.Status.RUNNING).update(
            status=TrainingJob.Status.FAILED, error_message=INTERRUPTED, finished_at=timezone.now()
        ):
            continue
        count += 1
        logger.warning("training job %s was interrupted; marked failed", job.pk)
        name = _job_model_name(job)
        live = any(
            _job_model_name(other) == name
            for other in TrainingJob.objects.filter(task_id=job.task_id, status=TrainingJob.Status.RUNNING)
        )
        if not live:
            _remove_work_dirs(job.task, name)
    return count


def check_training_name(task: Task, name: str) -> str:
    """Return ``name`` when a new training job may use it (valid, not registered, no directory, no
    queued or running job of ``task`` that will register it); else raise ``TargetTrainingError``."""
    check_model_name_free(task, name)
    for job in TrainingJob.objects.filter(task=task, status__in=PENDING).only(
        "pk", "name", "rounds", "recipe"
    ):
        if _job_model_name(job) == name:
            raise TargetTrainingError(
                f"training job #{job.pk} ({job.status}) will already register a model named {name} "
                f"for task {task.slug}; choose another name"
            )
    return name


def _enqueue(job_id: int) -> None:
    enqueue("cycle.jobs.run_training_job", job_id, task_name=f"training-job-{job_id}")


#: A job still ``queued`` this long after it was last put on the queue is put on it again: its queue
#: entry may be gone (a broker restarted without its data, Redis keeping nothing on disk; an entry
#: queued under a name the code no longer has). A second entry is harmless: a job is claimed once.
REQUEUE_SECONDS = 600


def requeue_forgotten_training_jobs(*, now=None) -> int:
    """Put on the job queue again every training job ``queued`` since more than ``REQUEUE_SECONDS``
    (``queued_at``, or ``created_at`` for a job from before that field), once per ``REQUEUE_SECONDS``
    each; queued when the transaction commits. Returns how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=REQUEUE_SECONDS)
    waiting = TrainingJob.objects.filter(status=TrainingJob.Status.QUEUED).filter(
        Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True, created_at__lt=cutoff)
    )
    with transaction.atomic():
        ids = list(waiting.values_list("pk", flat=True))
        # Conditional: a job a worker claimed meanwhile is not queued again.
        TrainingJob.objects.filter(pk__in=ids, status=TrainingJob.Status.QUEUED).update(queued_at=now)
        for job_id in ids:
            transaction.on_commit(lambda job_id=job_id: _enqueue(job_id))
    if ids:
        logger.warning("training jobs queued long ago and not started: %s queued again", len(ids))
    return len(ids)


def request_training(
    *,
    task: Task,
    rounds: Sequence[int],
    recipe: str = "quick",
    name: str = "",
    target_round: int | None = None,
    seed: int = 0,
    epochs: int = 3,
    backbone: str = "minilm",
    backbone_path: str = "",
    natural_dataset: str = "",
    natural_share: float = 0.0,
    requested_by=None,
) -> TrainingJob:
    """Record a training request and queue ``run_training_job`` once the current transaction commits.

    Args:
        rounds: round numbers of ``task`` whose settled examples (plus imported training data) train it.
        recipe: one of ``planning.RECIPES``.
        name: registered model name; blank for ``minilm-{recipe}-r{rounds}``. It must be valid
            (``planning.MODEL_NAME_RE``) and free (``check_training_name``).
        target_round: make the model that round's (only) target when training succeeds.
        backbone: ``"minilm"`` or ``"mpnet"`` (``engine.runtime.backbones``; mpnet must be
            installed, ``make mpnet``, and takes single-text tasks only).
        backbone_path: encoder directory (tests pass a tiny one); blank for the backbone's own.
        natural_dataset / natural_share: a natural dataset of the task and the share of the training
            set its texts make up (``natural.mix_natural``); blank / 0 for none.

    Returns:
        The ``TrainingJob`` (status ``queued``; with inline jobs it has already run when the outermost
        transaction commits, so re-read it).

    Raises:
        TargetTrainingError: no rounds, an unknown recipe, a round number the task does not have, an
            invalid model name or one already taken (a model, a directory, or a pending job's name),
            an unknown backbone, a natural dataset the task does not have or that is not natural, or
            a share outside [0, 0.9].
    """
    numbers = sorted({int(n) for n in rounds})
    if not numbers:
        raise TargetTrainingError("choose at least one round to train on")
    if recipe not in RECIPES:
        raise TargetTrainingError(f"unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}")
    if backbone not in BACKBONE_CHOICES:
        raise TargetTrainingError(
            f"unknown backbone {backbone!r}; choose one of {', '.join(BACKBONE_CHOICES)}"
        )
    if natural_dataset:
        natural_count(natural_share, 0)  # the share's range
        if not natural_datasets(task).filter(slug=natural_dataset).exists():
            raise TargetTrainingError(f"task {task.slug} has no natural dataset {natural_dataset!r}")
    else:
        natural_share = 0.0
    if name:
        check_model_name_syntax(name)
    known = set(Round.objects.filter(task=task, number__in=numbers).values_list("number", flat=True))
    missing = [n for n in numbers if n not in known]
    if missing:
        raise TargetTrainingError(f"task {task.slug} has no round(s) {missing}")
    # A job stuck "running" past the worker timeout must not hold its name.
    timeout = worker_timeout_seconds()
    if timeout is not None:
        fail_interrupted_training_jobs(older_than_seconds=timeout)
    check_training_name(task, name or default_model_name(numbers, recipe, backbone, natural_share))
    job = TrainingJob.objects.create(
        task=task,
        rounds=numbers,
        recipe=recipe,
        name=name or "",
        target_round=target_round,
        seed=seed,
        epochs=epochs,
        backbone=backbone,
        backbone_path=str(backbone_path or ""),
        natural_dataset=natural_dataset,
        natural_share=natural_share,
        requested_by=requested_by,
        queued_at=timezone.now(),
    )
    job_id = job.pk
    transaction.on_commit(lambda: _enqueue(job_id))
    return job
