"""Scheduling evaluations: which (model, dataset) pairs need a ``Score``, queueing their jobs, retries,
and Scores a stopped worker left running. The job itself is ``leaderboards.jobs.run_evaluation_job``.
(docs/architecture.md, "Evaluation scheduling".)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from core.job_queue import enqueue, worker_timeout_seconds
from models_registry.models import RegisteredModel

from .models import Dataset, Score
from .selectors import evaluable_datasets

logger = logging.getLogger(__name__)


def _enqueue_evaluation(score_id: int) -> None:
    enqueue("leaderboards.jobs.run_evaluation_job", score_id, task_name=f"evaluation-{score_id}")


def enqueue_evaluation(score_id: int) -> None:
    """Queue ``jobs.run_evaluation_job(score_id)`` now (the Score must be pending to be claimed)."""
    _enqueue_evaluation(score_id)


def _queue_after_commit(score_ids: Sequence[int]) -> None:
    for score_id in score_ids:
        transaction.on_commit(lambda score_id=score_id: _enqueue_evaluation(score_id))


def request_evaluations(
    *, model=None, dataset=None, queue: bool = True, include_hidden: bool = False
) -> list[int]:
    """Create the missing ``Score`` rows and queue one evaluation job per new row after commit.

    Pairs considered: every ``ready`` model × every evaluable dataset (``evaluable_datasets``: scoring
    and standard; hidden ones too only with ``include_hidden``) with at least one item, of the same
    task, narrowed to ``model`` and/or ``dataset`` when given. A pair is missing when it has no
    Score; a ``done`` Score is also redone (set back to ``pending``) when its dataset's item count
    differs from the ``n`` it was computed on (a round dataset that grew), or when it was measured on
    another runtime than the model's current one (``metrics["runtime"]``; a runtime is part of the
    system, so a model re-checked onto ONNX is scored again). Pending, running and failed
    Scores are left alone (failed ones are retried by ``retry_evaluations``). Safe to call twice: the
    unique (model, dataset) constraint and ``ignore_conflicts`` make concurrent calls create each row
    once, and a job queued twice runs once (see ``run_evaluation_job``).

    Args:
        queue: queue the jobs after commit (``False``: the caller runs them, as ``manage.py evaluate``).

    Returns:
        The primary keys of the Scores created or reset to pending.
    """
    models = RegisteredModel.objects.filter(status=RegisteredModel.Status.READY)
    if model is not None:
        models = models.filter(pk=model.pk)
    if dataset is not None:
        models = models.filter(task_id=dataset.task_id)
    runtime_of = dict(models.values_list("pk", "runtime"))
    model_rows = list(models.values_list("pk", "task_id"))
    if not model_rows:
        return []
    datasets = evaluable_datasets({task_id for _, task_id in model_rows}, include_hidden=include_hidden)
    if dataset is not None:
        datasets = datasets.filter(pk=dataset.pk)
    # An empty dataset is not evaluated (nothing to score); it is once it has items.
    dataset_rows = list(
        datasets.annotate(n_items=Count("items"))
        .filter(n_items__gt=0)
        .values_list("pk", "task_id", "n_items")
    )
    wanted = {
        (m_pk, d_pk) for m_pk, m_task in model_rows for d_pk, d_task, _ in dataset_rows if m_task == d_task
    }
    if not wanted:
        return []
    item_counts = {d_pk: n for d_pk, _, n in dataset_rows}
    with transaction.atomic():
        existing = Score.objects.filter(
            model_id__in={m for m, _ in wanted}, dataset_id__in={d for _, d in wanted}
        ).values_list("pk", "model_id", "dataset_id", "status", "metrics")
        have = set()
        stale = []
        for pk, m_pk, d_pk, status, metrics in existing:
            have.add((m_pk, d_pk))
            n = (metrics or {}).get("n")
            # Measured on another runtime than the model now runs on (older Scores name none): redo.
            runtime = (metrics or {}).get("runtime")
            other_runtime = runtime is not None and runtime != runtime_of.get(m_pk) and runtime != "endpoint"
            if (
                status == Score.Status.DONE
                and (m_pk, d_pk) in wanted
                and (n != item_counts.get(d_pk) or other_runtime)
            ):
                stale.append(pk)
        missing = sorted(wanted - have)
        Score.objects.bulk_create(
            [Score(model_id=m, dataset_id=d) for m, d in missing], ignore_conflicts=True
        )
        # Only the rows still done are reset: a concurrent call resets each once.
        reset = list(
            Score.objects.filter(pk__in=stale, status=Score.Status.DONE).values_list("pk", flat=True)
        )
        Score.objects.filter(pk__in=reset, status=Score.Status.DONE).update(status=Score.Status.PENDING)
        missing_set = set(missing)
        created = [
            pk
            for pk, m_pk, d_pk in Score.objects.filter(
                model_id__in={m for m, _ in missing},
                dataset_id__in={d for _, d in missing},
                status=Score.Status.PENDING,
            ).values_list("pk", "model_id", "dataset_id")
            if (m_pk, d_pk) in missing_set
        ]
        score_ids = sorted(set(created) | set(reset))
        if queue:
            _queue_after_commit(score_ids)
    return score_ids


def retry_evaluations(score_ids: Sequence[int], *, queue: bool = True) -> list[int]:
    """Set failed Scores back to ``pending`` (their ``error_message`` stays until a run succeeds) and
    queue them after commit. Scores that are not failed are left alone.

    Returns:
        The primary keys set back to pending.
    """
    # A Score stuck "running" past the worker timeout was interrupted: it becomes failed, so retriable.
    fail_stale_evaluations()
    with transaction.atomic():
        ids = list(
            Score.objects.select_for_update()
            .filter(pk__in=list(score_ids), status=Score.Status.FAILED)
            .values_list("pk", flat=True)
        )
        Score.objects.filter(pk__in=ids, status=Score.Status.FAILED).update(status=Score.Status.PENDING)
        if queue:
            _queue_after_commit(ids)
    return ids


def pending_evaluations(*, task=None, model=None, dataset=None, retry_failed: bool = False) -> list[int]:
    """Request the missing evaluations (without queueing) and return every pending Score's pk.

    Narrowed to ``task`` (a Task), ``model`` (a RegisteredModel) and/or ``dataset`` (a Dataset) when
    given. Without ``dataset`` only scoring and standard datasets are concerned (``evaluable_datasets``);
    naming a ``dataset`` is an owner's explicit request and evaluates it even when it is hidden. Scores
    stuck ``running`` past the worker timeout are first marked failed (``fail_interrupted_evaluations``);
    with ``retry_failed`` the failed Scores of that selection are set back to pending. The caller runs
    them with ``run_evaluation_job`` (``manage.py evaluate``, the demo); a job cluster that picks up a
    copy queued earlier finds them claimed or done and does nothing.
    """
    fail_stale_evaluations()
    if dataset is not None:
        request_evaluations(model=model, dataset=dataset, queue=False, include_hidden=True)
    elif model is not None:
        request_evaluations(model=model, queue=False)
    else:
        for each in evaluable_datasets([task.pk] if task is not None else None):
            request_evaluations(dataset=each, queue=False)
    scores = Score.objects.exclude(dataset__kind=Dataset.Kind.PERTURBED)
    if dataset is not None:
        scores = scores.filter(dataset=dataset)
    else:
        scores = scores.exclude(dataset__access=Dataset.Access.HIDDEN)
    if task is not None:
        scores = scores.filter(dataset__task=task)
    if model is not None:
        scores = scores.filter(model=model)
    if retry_failed:
        retry_evaluations(
            list(scores.filter(status=Score.Status.FAILED).values_list("pk", flat=True)), queue=False
        )
    return list(
        scores.filter(status=Score.Status.PENDING)
        .order_by("dataset_id", "model_id")
        .values_list("pk", flat=True)
    )


EVALUATION_INTERRUPTED = "interrupted: the evaluation worker stopped before the evaluation finished; retry it"


def fail_interrupted_evaluations(*, older_than_seconds: float | None = None) -> int:
    """Mark Scores left ``running`` by a worker that is gone as ``failed`` with ``EVALUATION_INTERRUPTED``.

    The evaluation twin of ``fail_interrupted_training_jobs``. Which Scores: with
    ``older_than_seconds=None`` every running one, right only when no worker runs (the demo's start-up,
    before ``qcluster``); otherwise those claimed more than ``older_than_seconds`` ago (a running
    Score's ``updated_at`` is the moment it was claimed; ``worker_timeout_seconds()`` is the safe
    bound, since django-q kills a job that runs longer). A failed Score is retried like any other
    (the admin's "Retry failed evaluations", ``manage.py evaluate --retry-failed``). Each is updated
    with a conditional ``UPDATE ... WHERE status = 'running'``, so an evaluation that finished in the
    meantime keeps its result.

    Returns:
        How many Scores were marked failed.
    """
    stale = Score.objects.filter(status=Score.Status.RUNNING)
    if older_than_seconds is not None:
        stale = stale.filter(updated_at__lt=timezone.now() - timedelta(seconds=older_than_seconds))
    ids = list(stale.values_list("pk", flat=True))
    if not ids:
        return 0
    count = Score.objects.filter(pk__in=ids, status=Score.Status.RUNNING).update(
        status=Score.Status.FAILED, error_message=EVALUATION_INTERRUPTED, updated_at=timezone.now()
    )
    if count:
        logger.warning("%s evaluation(s) were interrupted; marked failed: %s", count, ids)
    return count


def fail_stale_evaluations() -> int:
    """``fail_interrupted_evaluations`` bounded by the worker timeout (nothing when there is none)."""
    timeout = worker_timeout_seconds()
    return fail_interrupted_evaluations(older_than_seconds=timeout) if timeout is not None else 0


# --- Heartbeat and sweep: evaluations cut off with their worker run again ---------------------------------
#
# A worker killed mid-evaluation (SIGKILL, out of memory, a machine lost) leaves its Score "running", and
# neither broker hands the job back soon: the ORM broker only after Q_CLUSTER["retry"] (an hour), Redis
# never. So a running evaluation touches its Score every ``heartbeat_seconds()``, and the scheduled sweep
# (``sweep_evaluations``, every minute) puts a running Score whose heartbeat stopped ``stale_seconds()`` ago back
# to pending and queues it, up to MAX_EVALUATION_ATTEMPTS claims; after that it fails with
# EVALUATION_INTERRUPTED (a model that kills its worker every time must not loop for ever). The sweep also
# queues again pending Scores untouched for ``requeue_pending_seconds()``: jobs that could not be queued (the
# broker was down) or that Redis lost before a worker took them.

# Defaults of DYNABENCH_EVALUATION_STALE_SECONDS and DYNABENCH_REQUEUE_PENDING_SECONDS; the heartbeat
# beats four times per stale period, so one late beat never makes a live evaluation look dead.
STALE_SECONDS = 120
REQUEUE_PENDING_SECONDS = 600
MAX_EVALUATION_ATTEMPTS = 3


def stale_seconds() -> float:
    """Seconds without a heartbeat after which a running evaluation counts as cut off."""
    return float(getattr(settings, "DYNABENCH_EVALUATION_STALE_SECONDS", STALE_SECONDS))


def heartbeat_seconds() -> float:
    """Seconds between two heartbeats of a running evaluation: a quarter of ``stale_seconds()``."""
    return stale_seconds() / 4


def requeue_pending_seconds() -> float:
    """Seconds a pending evaluation waits untouched before the sweep queues it again."""
    return float(getattr(settings, "DYNABENCH_REQUEUE_PENDING_SECONDS", REQUEUE_PENDING_SECONDS))


EVALUATION_GAVE_UP = (
    f"interrupted {MAX_EVALUATION_ATTEMPTS} times: the evaluation worker stopped before it finished each time "
    "(out of memory?); retry it"
)


@contextmanager
def heartbeat(score_id: int, *, every_seconds: float | None = None) -> Iterator[None]:
    """While the block runs, set Score ``score_id``'s ``updated_at`` to now every ``every_seconds``
    (default ``heartbeat_seconds()``) as long as it is ``running``, from a thread of its own."""
    interval = heartbeat_seconds() if every_seconds is None else every_seconds
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                Score.objects.filter(pk=score_id, status=Score.Status.RUNNING).update(
                    updated_at=timezone.now()
                )
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"heartbeat-{score_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def sweep_evaluations(*, now=None) -> dict[str, int]:
    """Run again the evaluations cut off with their worker, and queue again the pending ones nobody took
    (see the section comment above). Each change is a conditional ``UPDATE`` on the status it read, so
    a Score that finished meanwhile keeps its result; the jobs run once however often they are queued.

    Returns:
        ``{"rerun": n, "gave_up": n, "requeued": n}``.
    """
    now = now or timezone.now()
    stale = Score.objects.filter(
        status=Score.Status.RUNNING, updated_at__lt=now - timedelta(seconds=STALE_SECONDS)
    )
    gave_up = stale.filter(attempts__gte=MAX_EVALUATION_ATTEMPTS).update(
        status=Score.Status.FAILED, error_message=EVALUATION_GAVE_UP, updated_at=now
    )
    with transaction.atomic():
        rerun = list(stale.filter(attempts__lt=MAX_EVALUATION_ATTEMPTS).values_list("pk", flat=True))
        Score.objects.filter(pk__in=rerun, status=Score.Status.RUNNING).update(
            status=Score.Status.PENDING, updated_at=now
        )
        forgotten = list(
            Score.objects.filter(
                status=Score.Status.PENDING, updated_at__lt=now - timedelta(seconds=requeue_pending_seconds())
            ).values_list("pk", flat=True)
        )
        # Touched so that each is queued again at most once per requeue_pending_seconds().
        Score.objects.filter(pk__in=forgotten, status=Score.Status.PENDING).update(updated_at=now)
        _queue_after_commit(sorted(set(rerun) | set(forgotten)))
    if rerun or gave_up:
        logger.warning(
            "evaluations cut off with their worker: %s queued again, %s gave up", len(rerun), gave_up
        )
    return {"rerun": len(rerun), "gave_up": gave_up, "requeued": len(forgotten)}
