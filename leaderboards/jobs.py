"""django-q2 jobs of the leaderboards app: train the next round's target (the adversarial loop).

Pretix-style: a job takes primary keys only, is queued with ``transaction.on_commit`` (so a rolled-back
request queues nothing and the worker always finds the committed row), runs inline when
``Q_CLUSTER["sync"]`` is on (tests, ``DYNABENCH_JOBS_SYNC=1``) and in ``manage.py qcluster`` otherwise.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from tasks.models import Round, Task

from .models import TrainingJob
from .services_training import (
    RECIPES,
    TargetTrainingError,
    check_model_name_free,
    check_model_name_syntax,
    default_model_name,
    train_target_for_rounds,
    work_dir_pattern,
)

logger = logging.getLogger(__name__)

MAX_LOG_LINE = 500
MAX_ERROR = 5000
INTERRUPTED = "interrupted: the job worker stopped before the job finished; run it again"
PENDING = (TrainingJob.Status.QUEUED, TrainingJob.Status.RUNNING)


def _job_model_name(job: TrainingJob) -> str:
    return job.name or default_model_name(job.rounds or [], job.recipe)


def worker_timeout_seconds() -> int | None:
    """``Q_CLUSTER["timeout"]``: a job running longer than this has been killed by its worker."""
    timeout = settings.Q_CLUSTER.get("timeout")
    return int(timeout) if timeout else None


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
        name: registered model name; blank for ``minilm-{recipe}-r{rounds}``. It must be valid
            (``services_training.MODEL_NAME_RE``) and free (``check_training_name``).
        target_round: make the model that round's (only) target when training succeeds.
        backbone_path: encoder directory (tests pass a tiny one); blank for the offline MiniLM.

    Returns:
        The ``TrainingJob`` (status ``queued``; with inline jobs it has already run when the outermost
        transaction commits, so re-read it).

    Raises:
        TargetTrainingError: no rounds, an unknown recipe, a round number the task does not have, an
            invalid model name or one already taken (a model, a directory, or a pending job's name).
    """
    numbers = sorted({int(n) for n in rounds})
    if not numbers:
        raise TargetTrainingError("choose at least one round to train on")
    if recipe not in RECIPES:
        raise TargetTrainingError(f"unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}")
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
    check_training_name(task, name or default_model_name(numbers, recipe))
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


# --- Evaluation: every ready model on every dataset of its task ---------------------------------------

EVALUATION_ERROR_MAX = MAX_ERROR


def _enqueue_evaluation(score_id: int) -> None:
    from django_q.tasks import async_task

    async_task(
        "leaderboards.jobs.run_evaluation_job",
        score_id,
        task_name=f"evaluation-{score_id}",
        sync=bool(settings.Q_CLUSTER.get("sync", False)),
    )


def _queue_after_commit(score_ids: Sequence[int]) -> None:
    for score_id in score_ids:
        transaction.on_commit(lambda score_id=score_id: _enqueue_evaluation(score_id))


def evaluable_datasets(task_ids: Sequence[int] | None = None, *, include_hidden: bool = False):
    """Datasets models are evaluated on automatically: scoring and standard ones, so that every ready
    model has a score on each of them (docs/datasets.md, "Evaluation"), never the perturbed copies
    (read while evaluating their source dataset).

    Hidden datasets (the round train splits: most of the examples, ranked nowhere) are left out of the
    automatic evaluations; they cost the demo a third of its evaluation time for figures only owners
    would see. ``include_hidden=True`` is for an owner's explicit request (``manage.py evaluate
    --dataset SLUG``).
    """
    from .models import Dataset

    datasets = Dataset.objects.exclude(kind=Dataset.Kind.PERTURBED)
    if not include_hidden:
        datasets = datasets.exclude(access=Dataset.Access.HIDDEN)
    return datasets if task_ids is None else datasets.filter(task_id__in=list(task_ids))


def request_evaluations(
    *, model=None, dataset=None, queue: bool = True, include_hidden: bool = False
) -> list[int]:
    """Create the missing ``Score`` rows and queue one evaluation job per new row after commit.

    Pairs considered: every ``ready`` model × every evaluable dataset (``evaluable_datasets``: scoring
    and standard; hidden ones too only with ``include_hidden``) with at least one item, of the same
    task, narrowed to ``model`` and/or ``dataset`` when given. A pair is missing when it has no
    Score; a ``done`` Score is also redone (set back to ``pending``) when its dataset's item count
    differs from the ``n`` it was computed on (a round dataset that grew). Pending, running and failed
    Scores are left alone (failed ones are retried by ``retry_evaluations``). Safe to call twice: the
    unique (model, dataset) constraint and ``ignore_conflicts`` make concurrent calls create each row
    once, and a job queued twice runs once (see ``run_evaluation_job``).

    Args:
        queue: queue the jobs after commit (``False``: the caller runs them, as ``manage.py evaluate``).

    Returns:
        The primary keys of the Scores created or reset to pending.
    """
    from django.db.models import Count

    from models_registry.models import RegisteredModel

    from .models import Score

    models = RegisteredModel.objects.filter(status=RegisteredModel.Status.READY)
    if model is not None:
        models = models.filter(pk=model.pk)
    if dataset is not None:
        models = models.filter(task_id=dataset.task_id)
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
            if status == Score.Status.DONE and (m_pk, d_pk) in wanted and n != item_counts.get(d_pk):
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
    from .models import Score

    # A Score stuck "running" past the worker timeout was interrupted: it becomes failed, so retriable.
    _fail_stale_evaluations()
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


def run_evaluation_job(score_id: int, progress=None) -> str:
    """Evaluate Score ``score_id``'s model on its dataset and store the figures on the Score.

    Safe to run twice: the Score is claimed with a conditional ``UPDATE ... WHERE status = 'pending'``,
    so one worker moves it to ``running``; a Score that is running, done or failed is left as it is.
    Every exception ends as status ``failed`` with its message in ``error_message`` (shown in the
    admin, retried with "Retry failed evaluations" or ``manage.py evaluate --retry-failed``).

    Returns:
        ``done`` or ``failed``, or the Score's current status when it was not claimed.
    """
    from .evaluation import EvaluationError, InferenceError, evaluate_model_on_dataset
    from .models import Score

    # Scores a killed worker left "running" (django-q stops a job after its timeout) end as failed.
    _fail_stale_evaluations()
    # Two workers (or a retried delivery) racing on one Score: this UPDATE succeeds for one only.
    claimed = Score.objects.filter(pk=score_id, status=Score.Status.PENDING).update(
        status=Score.Status.RUNNING, updated_at=timezone.now()
    )
    if not claimed:
        current = Score.objects.filter(pk=score_id).values_list("status", flat=True).first()
        logger.info("evaluation %s not started: it is %s", score_id, current or "missing")
        return current or "missing"
    score = Score.objects.select_related("model__task", "dataset__task").get(pk=score_id)
    try:
        result = evaluate_model_on_dataset(score.model, score.dataset, progress=progress)
    except (EvaluationError, InferenceError) as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - the owner must see every failure in the admin
        logger.exception("evaluation %s failed", score_id)
        error = f"{type(exc).__name__}: {exc}"
    else:
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
    from .models import Dataset, Score

    _fail_stale_evaluations()
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
    from .models import Score

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


def _fail_stale_evaluations() -> int:
    """``fail_interrupted_evaluations`` bounded by the worker timeout (nothing when there is none)."""
    timeout = worker_timeout_seconds()
    return fail_interrupted_evaluations(older_than_seconds=timeout) if timeout is not None else 0
