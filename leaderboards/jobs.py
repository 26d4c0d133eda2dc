"""django-q2 jobs of the leaderboards app: train the next round's target (the adversarial loop).

Pretix-style: a job takes primary keys only, is queued with ``transaction.on_commit`` (so a rolled-back
request queues nothing and the worker always finds the committed row), runs inline when
``Q_CLUSTER["sync"]`` is on (tests, ``DYNABENCH_JOBS_SYNC=1``) and in ``manage.py qcluster`` otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from tasks.models import Round, Task

from .models import TrainingJob
from .services_training import RECIPES, TargetTrainingError, train_target_for_rounds

logger = logging.getLogger(__name__)

MAX_LOG_LINE = 500
MAX_ERROR = 5000


def _enqueue(job_id: int) -> None:
    from django_q.tasks import async_task

    # Read "sync" from the settings at call time: django_q.conf.Conf reads it once at import.
    async_task(
        "leaderboards.jobs.run_training_job",
        job_id,
        task_name=f"training-job-{job_id}",
        sync=bool(settings.Q_CLUSTER.get("sync", False)),
    )


def request_training(
    *,
    task: Task,
    rounds: Sequence[int],
    recipe: str = "quick",
    name: str = "",
    target_round: int | None = None,
    seed: int = 0,
    epochs: int = 3,
    backbone_path: str = "",
    requested_by=None,
) -> TrainingJob:
    """Record a training request and queue ``run_training_job`` once the current transaction commits.

    Args:
        rounds: round numbers of ``task`` whose settled examples (plus imported training data) train it.
        recipe: one of ``services_training.RECIPES``.
        name: registered model name; blank for ``minilm-<recipe>-r<rounds>``.
        target_round: make the model that round's (only) target when training succeeds.
        backbone_path: encoder directory (tests pass a tiny one); blank for the offline MiniLM.

    Returns:
        The ``TrainingJob`` (status ``queued``; with inline jobs it has already run when the outermost
        transaction commits, so re-read it).

    Raises:
        TargetTrainingError: no rounds, an unknown recipe, or a round number the task does not have.
    """
    numbers = sorted({int(n) for n in rounds})
    if not numbers:
        raise TargetTrainingError("choose at least one round to train on")
    if recipe not in RECIPES:
        raise TargetTrainingError(f"unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}")
    known = set(Round.objects.filter(task=task, number__in=numbers).values_list("number", flat=True))
    missing = [n for n in numbers if n not in known]
    if missing:
        raise TargetTrainingError(f"task {task.slug} has no round(s) {missing}")
    job = TrainingJob.objects.create(
        task=task,
        rounds=numbers,
        recipe=recipe,
        name=name or "",
        target_round=target_round,
        seed=seed,
        epochs=epochs,
        backbone_path=str(backbone_path or ""),
        requested_by=requested_by,
    )
    job_id = job.pk
    transaction.on_commit(lambda: _enqueue(job_id))
    return job


def _record_progress(job_id: int, message: str) -> None:
    line = message.strip().replace("\n", " ")[:MAX_LOG_LINE]
    stamp = timezone.now().strftime("%H:%M:%S")
    TrainingJob.objects.filter(pk=job_id).update(
        progress=line, log=Concat(F("log"), Value(f"[{stamp}] {line}\n"))
    )


def _finish(job_id: int, status: str, **fields) -> None:
    TrainingJob.objects.filter(pk=job_id).update(status=status, finished_at=timezone.now(), **fields)


def run_training_job(job_id: int) -> str:
    """Run training job ``job_id``: train, register with its model card, optionally make it a target.

    Safe to run twice: the job is claimed with a conditional ``UPDATE ... WHERE status = 'queued'``, so
    only one worker moves it to ``running``; a job that is already running, done or failed is left as
    it is. Every exception ends as status ``failed`` with its message in ``error_message``; nothing is
    raised to the worker.

    Returns:
        The job's final status (``done``, ``failed``), or its current one when it was not claimed.
    """
    # The race between two workers (or a retried delivery) is settled here: one UPDATE wins.
    claimed = TrainingJob.objects.filter(pk=job_id, status=TrainingJob.Status.QUEUED).update(
        status=TrainingJob.Status.RUNNING, started_at=timezone.now(), progress="started", error_message=""
    )
    if not claimed:
        current = TrainingJob.objects.filter(pk=job_id).values_list("status", flat=True).first()
        logger.info("training job %s not started: it is %s", job_id, current or "missing")
        return current or "missing"

    job = TrainingJob.objects.select_related("task", "requested_by").get(pk=job_id)
    try:
        model = train_target_for_rounds(
            task=job.task,
            rounds=list(job.rounds),
            recipe=job.recipe,
            name=job.name or None,
            target_round=job.target_round,
            seed=job.seed,
            epochs=job.epochs,
            backbone_path=job.backbone_path or None,
            owner=job.requested_by,
            progress=lambda message: _record_progress(job_id, message),
        )
    except TargetTrainingError as exc:
        _finish(job_id, TrainingJob.Status.FAILED, error_message=str(exc)[:MAX_ERROR])
        return TrainingJob.Status.FAILED
    except Exception as exc:  # noqa: BLE001 - the owner must see every failure in the admin
        logger.exception("training job %s failed", job_id)
        _finish(
            job_id,
            TrainingJob.Status.FAILED,
            error_message=f"{type(exc).__name__}: {exc}"[:MAX_ERROR],
        )
        return TrainingJob.Status.FAILED

    dev = (model.card or {}).get("dev_accuracy")
    dev = float(dev) if isinstance(dev, int | float) else None
    if model.status != model.Status.READY:
        _finish(
            job_id,
            TrainingJob.Status.FAILED,
            model=model,
            dev_accuracy=dev,
            error_message=f"model {model.name} was trained but failed its check: {model.error_message}",
        )
        return TrainingJob.Status.FAILED
    summary = f"registered {model.name}" + (f", dev accuracy {dev:.4f}" if dev is not None else "")
    if job.target_round is not None:
        summary += f", target of round {job.target_round}"
    _record_progress(job_id, summary)
    _finish(job_id, TrainingJob.Status.DONE, model=model, dev_accuracy=dev)
    return TrainingJob.Status.DONE
