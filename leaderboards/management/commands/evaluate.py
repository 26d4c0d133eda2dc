"""``manage.py evaluate``: run the missing (and optionally the failed) evaluations here, with a progress bar."""

from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Dataset, Score
from leaderboards.scheduling import pending_evaluations
from models_registry.models import RegisteredModel
from tasks.models import Task


class Command(BaseCommand):
    help = (
        "Evaluate every ready model on every scoring and standard dataset of its task that it has no "
        "score on yet, inline, with a progress bar. Hidden datasets (round train splits) are evaluated "
        "only when named with --dataset. Evaluations left running by a worker that is gone (older than "
        "the job timeout) are marked failed first; --retry-failed runs them again. Pending evaluations "
        "queued for the job cluster are run here too (each runs once). "
        "Example: python manage.py evaluate --task hate-speech"
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", default=None, help="Task slug (default: every task).")
        parser.add_argument(
            "--model", default=None, help="Registered model name (needs --task if ambiguous)."
        )
        parser.add_argument(
            "--dataset",
            default=None,
            help="Dataset slug (needs --task if ambiguous): evaluate on this dataset only, even a hidden one.",
        )
        parser.add_argument("--retry-failed", action="store_true", help="Run failed evaluations again.")

    def handle(self, *args, task, model, dataset, retry_failed, verbosity, **options):
        task_obj = None
        if task is not None:
            task_obj = Task.objects.filter(slug=task).first()
            if task_obj is None:
                known = ", ".join(Task.objects.values_list("slug", flat=True))
                raise CommandError(f"No task {task!r}. Known: {known}")
        model_obj = None
        if model is not None:
            candidates = RegisteredModel.objects.filter(name=model)
            if task_obj is not None:
                candidates = candidates.filter(task=task_obj)
            found = list(candidates[:2])
            if not found:
                raise CommandError(f"No model named {model!r}" + (f" in task {task}" if task else ""))
            if len(found) > 1:
                raise CommandError(f"Several tasks have a model named {model!r}; add --task.")
            model_obj = found[0]
            if model_obj.status != RegisteredModel.Status.READY:
                raise CommandError(
                    f"Model {model} is {model_obj.status}, not ready: {model_obj.error_message}"
                )

        dataset_obj = None
        if dataset is not None:
            candidates = Dataset.objects.filter(slug=dataset).exclude(kind=Dataset.Kind.PERTURBED)
            if task_obj is not None:
                candidates = candidates.filter(task=task_obj)
            found = list(candidates[:2])
            if not found:
                raise CommandError(f"No dataset {dataset!r}" + (f" in task {task}" if task else ""))
            if len(found) > 1:
                raise CommandError(f"Several tasks have a dataset {dataset!r}; add --task.")
            dataset_obj = found[0]
            if model_obj is not None and model_obj.task_id != dataset_obj.task_id:
                raise CommandError(f"Model {model} and dataset {dataset} belong to different tasks.")

        score_ids = pending_evaluations(
            task=task_obj, model=model_obj, dataset=dataset_obj, retry_failed=retry_failed
        )
        if not score_ids:
            where = f"dataset {dataset_obj.slug}" if dataset_obj else "every scoring and standard dataset"
            self.stdout.write(f"Nothing to evaluate: every ready model has a score on {where}.")
            return
        started = time.monotonic()
        outcomes: dict[str, int] = {}
        bar = tqdm(score_ids, unit="evaluation", file=sys.stderr, disable=verbosity == 0)
        for score_id in bar:
            score = Score.objects.select_related("model", "dataset").get(pk=score_id)
            bar.set_description(f"{score.model.name} on {score.dataset.slug}")
            status = run_evaluation_job(score_id)
            outcomes[status] = outcomes.get(status, 0) + 1
            if status == Score.Status.FAILED:
                score.refresh_from_db()
                bar.write(f"FAILED {score.model.name} on {score.dataset.slug}: {score.error_message}")
        summary = ", ".join(f"{n} {status}" for status, n in sorted(outcomes.items()))
        self.stdout.write(f"{len(score_ids)} evaluation(s) in {time.monotonic() - started:.0f} s: {summary}")
        if outcomes.get(Score.Status.FAILED):
            self.stdout.write("Run again with --retry-failed once the cause is fixed.")
