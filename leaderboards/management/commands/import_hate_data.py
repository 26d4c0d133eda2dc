"""``manage.py import_hate_data``: HatemojiBuild as rounds 1-3 and the static suites as datasets."""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from tqdm import tqdm

from annotation.importers.hatemoji_build import FILES as HATEMOJI_BUILD_FILES
from annotation.importers.hatemoji_build import import_hatemoji_build
from core.audit import OperatorCommand
from leaderboards.importers.static_sets import STATIC_SETS, import_static_sets
from tasks.services import ensure_builtin_task

HATEMOJI_BUILD_DIR = "hatemoji_build"


def required_files(data_dir: Path) -> list[Path]:
    """Every file the import reads, under ``data_dir``."""
    return [data_dir / HATEMOJI_BUILD_DIR / name for name in HATEMOJI_BUILD_FILES] + [
        data_dir / spec.path for spec in STATIC_SETS
    ]


class Command(OperatorCommand):
    help = (
        "Import the real hate-speech data: HatemojiBuild as rounds 1-3 of the hate-speech task, "
        "HateCheck and HatemojiCheck as static datasets. Safe to re-run: nothing is added twice."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--data-dir",
            type=Path,
            default=None,
            help="Folder holding hatemoji_build/, hatecheck/ and hatemoji_check/ "
            "(default: settings.DYNABENCH_DATA_DIR).",
        )

    def handle(self, *args, data_dir: Path | None, verbosity: int, **options):
        data_dir = Path(data_dir or settings.DYNABENCH_DATA_DIR)
        hint = f"Fetch the files with: python manage.py fetch_datasets --dest {data_dir}"
        if not data_dir.is_dir():
            raise CommandError(f"Data folder not found: {data_dir}. {hint}")
        missing = [path for path in required_files(data_dir) if not path.is_file()]
        if missing:
            names = ", ".join(str(path) for path in missing)
            raise CommandError(f"Missing data file(s): {names}. {hint}")

        progress = partial(tqdm, unit="row", file=sys.stderr, disable=verbosity == 0, leave=False)
        task = ensure_builtin_task("hate-speech")
        started = time.perf_counter()
        try:
            reports = [
                import_hatemoji_build(task=task, data_dir=data_dir / HATEMOJI_BUILD_DIR, progress=progress)
            ]
            reports += import_static_sets(task=task, data_dir=data_dir, progress=progress)
        except (FileNotFoundError, ValueError) as error:
            raise CommandError(f"{error}. {hint}") from error
        elapsed = time.perf_counter() - started
        for report in reports:
            self.stdout.write(str(report))
        created = sum(report.created for report in reports)
        self.stdout.write(self.style.SUCCESS(f"Imported in {elapsed:.1f} s: {created} new rows."))
