"""``manage.py import_natural_data``: import a task's natural (non-adversarial) training texts."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from core.audit import OperatorCommand
from cycle.natural_sets import NATURAL_SETS, import_natural_set
from tasks.models import Task


class Command(OperatorCommand):
    help = (
        "Import the natural dataset of a task (sentiment: SST-3 sentences; hate-speech: HatemojiBuild's "
        "original entries) as a hidden training-only dataset, to mix into a target's training set with "
        "train_target_model --natural SLUG --natural-share 0.25. Example: python manage.py "
        "import_natural_data --task sentiment"
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, choices=sorted(NATURAL_SETS), help="Task slug.")
        parser.add_argument("--data-dir", type=Path, default=None, help="Default: DYNABENCH_DATA_DIR.")

    def handle(self, *args, task: str, data_dir: Path | None, **options):
        task_obj = Task.objects.filter(slug=task).first()
        if task_obj is None:
            raise CommandError(f"No task {task!r}; import its rounds first (e.g. import_hate_data).")
        try:
            report = import_natural_set(task=task_obj, data_dir=Path(data_dir or settings.DYNABENCH_DATA_DIR))
        except (FileNotFoundError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        spec = NATURAL_SETS[task]
        self.stdout.write(
            f"{spec.name} ({spec.slug}): {report.created} new, {report.already_present} already present, "
            f"{len(report.skipped)} skipped; per label {report.breakdown}"
        )
        for line in report.skipped[:10]:
            self.stdout.write(f"  skipped {line}")
