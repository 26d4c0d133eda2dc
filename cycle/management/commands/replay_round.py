"""``manage.py replay_round``: replay real annotator-written examples through the create service."""

from __future__ import annotations

from django.core.management.base import CommandError

from core.audit import OperatorCommand
from cycle.training.replay import DEFAULT_REPLAY_USER, ReplayError, replay_file
from tasks.models import Task


class Command(OperatorCommand):
    help = (
        "Feed the rows of a dataset file (HatemojiBuild CSV: entry_id, text, label_gold[, round.base, split]) "
        "through the same service as the create page, as a named replay user, into the task's current "
        "round, and print the fooling rate (MER) of the replayed examples. Idempotent per row. Example: "
        "python manage.py replay_round --task hate-speech --round 4 "
        "--source ../shared/data/hatemoji_build/test.csv --source-round 6"
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, help="Task slug, e.g. hate-speech.")
        parser.add_argument(
            "--round", type=int, required=True, help="The task's current round (examples go only there)."
        )
        parser.add_argument("--source", required=True, help="CSV file in HatemojiBuild format.")
        parser.add_argument("--limit", type=int, default=None, help="Replay at most this many rows.")
        parser.add_argument("--user", default=DEFAULT_REPLAY_USER, help="Replay user (created if missing).")
        parser.add_argument(
            "--source-round",
            type=int,
            nargs="+",
            default=None,
            help="Keep rows whose round.base is one of these (HatemojiBuild: 5 6 7).",
        )
        parser.add_argument(
            "--split", nargs="+", default=None, help="Keep rows of these splits (train, dev, test)."
        )

    def handle(self, *args, task, round, source, limit, user, source_round, split, verbosity, **options):
        task_obj = Task.objects.select_related("current_round").filter(slug=task).first()
        if task_obj is None:
            raise CommandError(
                f"No task {task!r}. Known: {', '.join(Task.objects.values_list('slug', flat=True))}"
            )
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")

        def progress(done: int) -> None:
            if verbosity > 1 and done % 100 == 0:
                self.stdout.write(f"{done} rows replayed")

        try:
            report = replay_file(
                task=task_obj,
                round_number=round,
                path=source,
                username=user,
                source_rounds=source_round,
                splits=split,
                limit=limit,
                progress=progress,
            )
        except ReplayError as exc:
            raise CommandError(str(exc)) from exc
        for reason in report.skipped + report.rejected:
            self.stdout.write(self.style.WARNING(f"skipped {reason}"))
        self.stdout.write(str(report))
