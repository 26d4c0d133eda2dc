"""django-q2 jobs of the leaderboards app: evaluate a model on a dataset, and sweep the evaluations cut
off with their worker. Job functions only: the services that queue them are in ``scheduling`` (how jobs
are queued: ``core.job_queue``). Training the next round's target is ``cycle.jobs``.
"""

from __future__ import annotations

import logging

from django.db.models import F
from django.utils import timezone

from models_registry.models import RegisteredModel

from . import evaluation
from .evaluation import EvaluationError, InferenceError
from .models import Dataset, Score
from .scheduling import enqueue_evaluation, fail_stale_evaluations, heartbeat, sweep_evaluations

logger = logging.getLogger(__name__)

MAX_ERROR = 5000


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
