"""python manage.py load_contexts --task T --round N FILE [--format jsonl|csv]"""

from __future__ import annotations

from django.core.management.base import CommandError

from core.audit import OperatorCommand
from tasks.context_files import FORMATS, format_from_name
from tasks.models import Round
from tasks.services import ContextFileError, load_contexts


class Command(OperatorCommand):
    help = (
        "Load a round's contexts from a JSONL or CSV file (the task's context fields by name, optional "
        "tag, metadata, id). Idempotent by id; invalid records are skipped and listed with line numbers."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="a .jsonl or .csv file, UTF-8")
        parser.add_argument("--task", required=True, help="task slug")
        parser.add_argument("--round", type=int, required=True, help="round number")
        parser.add_argument("--format", choices=FORMATS, help="default: from the file's extension")

    def handle(self, *args, **options):
        try:
            round_ = Round.objects.select_related("task").get(
                task__slug=options["task"], number=options["round"]
            )
        except Round.DoesNotExist:
            raise CommandError(f"No round {options['round']} in task {options['task']!r}.") from None
        try:
            fmt = options["format"] or format_from_name(options["file"])
            with open(options["file"], "rb") as fileobj:
                report = load_contexts(
                    round_=round_,
                    fileobj=fileobj,
                    fmt=fmt,
                    progress=lambda n: self.stdout.write(f"{n:,} records read..."),
                )
        except OSError as exc:
            raise CommandError(f"Cannot read {options['file']}: {exc}") from None
        except ContextFileError as exc:
            raise CommandError(f"{options['file']}: {exc} Nothing was loaded.") from None
        for line in report.skipped_lines(limit=100):
            self.stderr.write(f"skipped {line}")
        self.stdout.write(f"{round_}: {report.summary()}")
