"""django-q2 jobs of the leaderboards app: train the next round's target (the adversarial loop) and
evaluate a model on a dataset. Job functions only: the services that request and queue them are
``training.requests`` and ``scheduling`` (how jobs are queued: ``core.job_queue``).
"""

from __future__ import annotations

import logging

from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from core.job_queue import worker_timeout_seconds
from models_registry.models import RegisteredModel

from . import evaluation
from .evaluation import EvaluationError, InferenceError
from .models import Dataset, Score, TrainingJob
from .scheduling import enqueue_evaluation, fail_stale_evaluations, heartbeat, sweep_evaluations
from .training.planning import TargetTrainingError
from .training.requests import fail_interrupted_training_jobs
from .training.targets import train_target_for_rounds

logger = logging.getLogger(__name__)

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


# --- Evaluation: every ready model on every dataset of its task ---------------------------------------

EVALUATION_ERROR_MAX = MAX_ERROR


def run_evaluation_job(score_id: int, progress=None) -> str:
    """Evaluate Score ``score_id``'s model on its dataset and store the figures on the Score.

    Safe to run twice: the Score is claimed with a conditional ``UPDATE ... WHERE status = 'pending'``,
    so one worker moves it to ``running``; a Score that is running, done or failed is left as it is.
    Every exception ends as status ``failed`` with its message in ``error_message`` (shown in the
    admin, retried with "Retry failed evaluations" or ``manage.py evaluate --retry-failed``).
    Throughput is the median of ``DYNABENCH_THROUGHPUT_PASSES`` passes on a scoring dataset (the
    leaderboard ranks it) and the one prediction pass elsewhere (no spread stored there).

    Returns:
        ``done`` or ``failed``; ``pending`` (queued again) when the model was moved to another runtime
        while it ran; or the Score's current status when it was not claimed.
    """
    # Scores a killed worker left "running" (django-q stops a job after its timeout) end as failed.
    fail_stale_evaluations()
    # Two workers (or a retried delivery) racing on one Score: this UPDATE succeeds for one only.
    claimed = Score.objects.filter(pk=score_id, status=Score.Status.PENDING).update(
        status=Score.Status.RUNNING, updated_at=timezone.now(), attempts=F("attempts") + 1
    )
    if not claimed:
        current = Score.objects.filter(pk=score_id).values_list("status", flat=True).first()
        logger.info("evaluation %s not started: it is %s", score_id, current or "missing")
        return current or "missing"
    score = Score.objects.select_related("model__task", "dataset__task").get(pk=score_id)
    try:
        with heartbeat(score_id):
            # Only a scoring dataset's throughput is ranked (and its spread read by the noise guard):
            # on the others the prediction pass over the whole dataset is the one timed pass (a
            # sample larger than any dataset), which saves passes x sample predictions per pair.
            ranked = score.dataset.access == Dataset.Access.SCORING
            once = {} if ranked else {"passes": 1, "sample_size": 2**31}
            result = evaluation.evaluate_model_on_dataset(
                score.model, score.dataset, progress=progress, **once
            )
    except (EvaluationError, InferenceError) as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - the owner must see every failure in the admin
        logger.exception("evaluation %s failed", score_id)
        error = f"{type(exc).__name__}: {exc}"
    else:
        served = RegisteredModel.objects.filter(pk=score.model_id).values_list("runtime", flat=True).first()
        measured = result.metrics.get("runtime")
        if measured not in (None, "endpoint") and served is not None and measured != served:
            # A task owner pinned another runtime while this ran: the figures are not the served
            # system's, and the pin's own request skipped this Score because it was running.
            logger.info("evaluation %s measured %s, the model now runs %s: again", score_id, measured, served)
            Score.objects.filter(pk=score_id).update(
                status=Score.Status.PENDING, error_message="", updated_at=timezone.now()
            )
            enqueue_evaluation(score_id)
            return Score.Status.PENDING
        Score.objects.filter(pk=score_id).update(
            status=Score.Status.DONE,
            perf=result.perf,
            metrics=result.metrics,
            per_tag=result.per_tag,
            error_message="",
            updated_at=timezone.now(),
        )
        return Score.Status.DONE
    Score.objects.filter(pk=score_id).update(
        status=Score.Status.FAILED, error_message=error[:EVALUATION_ERROR_MAX], updated_at=timezone.now()
    )
    return Score.Status.FAILED


#: Registered by ``LeaderboardsConfig.ready()``: ``sweep_evaluations_job`` every minute.
SWEEP_SCHEDULE = "sweep evaluations"


def sweep_evaluations_job() -> dict:
    """Run again the evaluations cut off with their worker, queue again the forgotten pending ones
    (``scheduling.sweep_evaluations``; on the ``SWEEP_SCHEDULE``, every minute)."""
    return sweep_evaluations()
