"""django-q2 jobs of the cycle app: train the next round's target on rounds' settled examples. Job
functions only: the service that requests and queues them is ``training.requests`` (how jobs are queued:
``core.job_queue``); a closed round's artefact probes are ``probes.jobs``.
"""

from __future__ import annotations

import logging

from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from core.job_queue import worker_timeout_seconds

from .models import TrainingJob
from .training.planning import TargetTrainingError
from .training.requests import fail_interrupted_training_jobs, requeue_forgotten_training_jobs
from .training.targets import train_target_for_rounds

logger = logging.getLogger(__name__)

#: Registered by ``CycleConfig.ready()``: ``sweep_training_jobs_job`` every minute.
SWEEP_SCHEDULE = "sweep training jobs"

MAX_LOG_LINE = 500
MAX_ERROR = 5000


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
    # Jobs a killed worker left "running" (django-q stops a job after its timeout) end as failed.
    timeout = worker_timeout_seconds()
    if timeout is not None:
        fail_interrupted_training_jobs(older_than_seconds=timeout)
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
            backbone=job.backbone,
            backbone_path=job.backbone_path or None,
            natural=job.natural_dataset,
            natural_share=job.natural_share,
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


def sweep_training_jobs_job() -> dict:
    """Mend the training jobs no worker will finish (on the ``SWEEP_SCHEDULE``, every minute): a job
    left ``running`` past the worker timeout by a worker that is gone ends ``failed`` (the admin's "Run
    again" queues it anew), and a job ``queued`` long ago that no worker took is put on the queue again
    (``training.requests.requeue_forgotten_training_jobs``).

    Returns:
        ``{"failed": n, "requeued": n}``.
    """
    timeout = worker_timeout_seconds()
    failed = fail_interrupted_training_jobs(older_than_seconds=timeout) if timeout is not None else 0
    return {"failed": failed, "requeued": requeue_forgotten_training_jobs()}
