"""``manage.py train_target_model``: train a target model on rounds' examples and register it."""

from __future__ import annotations

import time

from django.core.management.base import CommandError
from django.db import transaction

from core.audit import OperatorCommand
from cycle.models import TrainingJob
from cycle.training.planning import (
    BACKBONE_CHOICES,
    MODEL_NAME_RULE,
    RECIPES,
    TargetTrainingError,
    check_model_name_free,
    default_model_name,
)
from cycle.training.requests import request_training
from cycle.training.targets import train_target_for_rounds
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Dataset
from leaderboards.scheduling import pending_evaluations
from leaderboards.selectors import CARD_TEST_METRICS, card_test_figures
from tasks.models import Task


class Command(OperatorCommand):
    help = (
        "Train a classifier (MiniLM, or the opt-in MPNet, + mean pooling, or pair pooling for text pairs, + linear head) on the training split of the given rounds, "
        "choose on their dev split, register it, then evaluate it on each round's test split and HateCheck "
        "(the leaderboard's evaluations) and report those test figures. Example: python manage.py train_target_model --task hate-speech --rounds 1 2 3 --recipe quick"
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, help="Task slug, e.g. hate-speech.")
        parser.add_argument("--rounds", type=int, nargs="+", required=True, help="Round numbers to train on.")
        parser.add_argument("--recipe", choices=RECIPES, default="quick")
        parser.add_argument(
            "--backbone",
            choices=BACKBONE_CHOICES,
            default="minilm",
            help="The encoder: minilm (all-MiniLM-L6-v2, default) or mpnet (all-mpnet-base-v2, 404 MB, about "
            "five times slower; install it with `make mpnet`; single-text tasks only).",
        )
        parser.add_argument(
            "--natural",
            default="",
            help="Slug of a natural dataset of the task to mix into the training set (import one with "
            "manage.py import_natural_data), e.g. sst-3-validated.",
        )
        parser.add_argument(
            "--natural-share",
            type=float,
            default=0.25,
            help="With --natural: the share of the training set made of natural texts (0 to 0.9; default 0.25).",
        )
        parser.add_argument(
            "--name",
            default=None,
            help=f"Registered model name, not taken yet ({MODEL_NAME_RULE}); default "
            "{backbone}-{recipe}-r{rounds}[-nat{share}].",
        )
        parser.add_argument(
            "--target-round", type=int, default=None, help="Also make the model the target of this round."
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--epochs", type=int, default=3, help="Fine-tuning epochs (finetune recipe only)."
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Queue a training job (run by `manage.py qcluster`, visible in the admin) instead of "
            "training here.",
        )

    def handle(
        self,
        *args,
        task: str,
        rounds,
        recipe,
        name,
        target_round,
        seed,
        epochs,
        queue,
        verbosity,
        backbone="minilm",
        natural="",
        natural_share=0.25,
        **options,
    ):
        task_obj = Task.objects.filter(slug=task).first()
        if task_obj is None:
            raise CommandError(
                f"No task {task!r}. Known: {', '.join(Task.objects.values_list('slug', flat=True))}"
            )
        try:
            # Before anything is queued, trained or created: a valid name that no model holds yet.
            share = natural_share if natural else 0.0
            check_model_name_free(task_obj, name or default_model_name(rounds, recipe, backbone, share))
        except TargetTrainingError as exc:
            raise CommandError(str(exc)) from exc
        if queue:
            self._queue(
                task_obj,
                rounds,
                recipe,
                name,
                target_round,
                seed,
                epochs,
                backbone=backbone,
                natural=natural,
                natural_share=natural_share,
            )
            return
        started = time.monotonic()

        def progress(message: str) -> None:
            if verbosity > 0:
                self.stdout.write(f"[{time.monotonic() - started:6.0f}s] {message}")
                self.stdout.flush()

        try:
            model = train_target_for_rounds(
                task=task_obj,
                rounds=rounds,
                recipe=recipe,
                name=name,
                target_round=target_round,
                seed=seed,
                epochs=epochs,
                backbone=backbone,
                natural=natural,
                natural_share=natural_share,
                progress=progress,
            )
        except TargetTrainingError as exc:
            raise CommandError(str(exc)) from exc
        if model.status != model.Status.READY:
            raise CommandError(f"Model {model.name} trained but failed its check: {model.error_message}")
        card = model.card
        self.stdout.write(f"model {model.name} (id {model.pk}) at {model.path}")
        self.stdout.write(f"parameters: {model.parameter_count:,}")
        self.stdout.write(f"dev accuracy: {card.get('dev_accuracy')}")
        # The test figures are the leaderboard's evaluations of the card's test datasets, run here.
        for dataset in Dataset.objects.filter(task=task_obj, slug__in=card.get("test_datasets") or []):
            for score_id in pending_evaluations(model=model, dataset=dataset):
                progress(f"evaluating on {dataset.name}…")
                run_evaluation_job(score_id)
        for slug, entry in card_test_figures(model).items():
            for key, label in CARD_TEST_METRICS:
                if key in entry:
                    self.stdout.write(f"{label} {slug}: {entry[key]:.4f} (n={entry['n']})")
        if card.get("note"):
            self.stdout.write(self.style.WARNING(card["note"]))
        self.stdout.write(
            self.style.SUCCESS(
                f"Done in {time.monotonic() - started:.0f}s (training {card['training']['seconds']}s)."
            )
        )

    def _queue(
        self, task_obj, rounds, recipe, name, target_round, seed, epochs, *, backbone, natural, natural_share
    ) -> None:
        try:
            with transaction.atomic():
                job = request_training(
                    task=task_obj,
                    rounds=rounds,
                    recipe=recipe,
                    name=name or "",
                    target_round=target_round,
                    seed=seed,
                    epochs=epochs,
                    backbone=backbone,
                    natural_dataset=natural,
                    natural_share=natural_share,
                )
        except TargetTrainingError as exc:
            raise CommandError(str(exc)) from exc
        job.refresh_from_db()
        if job.status == TrainingJob.Status.QUEUED:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Queued training job {job.pk}; a worker (python manage.py qcluster) runs it. "
                    "Follow it in the admin under Leaderboards > Training jobs."
                )
            )
        else:
            # Inline jobs (DYNABENCH_JOBS_SYNC=1) have already run when the transaction committed.
            self.stdout.write(f"Training job {job.pk}: {job.status}. {job.error_message or job.progress}")
