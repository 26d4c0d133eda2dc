"""The shared body of the round-data import commands (``import_sentiment_data``, ``import_nli_data``)."""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from tqdm import tqdm

from core.audit import OperatorCommand
from tasks.services import ensure_builtin_task


class RoundImportCommand(OperatorCommand):
    """Subclasses set ``task_slug`` (a built-in task), ``folder`` (under the data folder) and
    ``importer`` (``importer(task=, data_dir=, progress=) -> ImportReport``)."""

    task_slug = ""
    folder = ""
    importer = None

    def add_arguments(self, parser):
        parser.add_argument(
            "--data-dir",
            type=Path,
            default=None,
            help=f"Folder holding {self.folder}/ (default: settings.DYNABENCH_DATA_DIR).",
        )

    def handle(self, *args, data_dir: Path | None, verbosity: int, **options):
        data_dir = Path(data_dir or settings.DYNABENCH_DATA_DIR)
        if not (data_dir / self.folder).is_dir():
            raise CommandError(f"Data folder not found: {data_dir / self.folder}.")
        progress = partial(tqdm, unit="row", file=sys.stderr, disable=verbosity == 0, leave=False)
        task = ensure_builtin_task(self.task_slug)
        started = time.perf_counter()
        try:
            report = type(self).importer(task=task, data_dir=data_dir / self.folder, progress=progress)
        except (FileNotFoundError, ValueError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(str(report))
        elapsed = time.perf_counter() - started
        self.stdout.write(self.style.SUCCESS(f"Imported in {elapsed:.1f} s: {report.created} new examples."))
