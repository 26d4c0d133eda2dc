"""``manage.py export_examples``: a task's or a round's examples as JSONL or CSV (docs/export-format.md)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.exports import DEFAULT_CHUNK_SIZE, FORMATS, ExportError, write_export
from tasks.models import Round, Task


class Command(BaseCommand):
    help = (
        "Export the examples of a task (every round) or of some rounds, with predictions, validations "
        "(pseudonymous validator ids) and metadata, as JSONL or CSV, streamed with constant memory. "
        "Example: python manage.py export_examples --task hate-speech --round 4 --format jsonl "
        "--output round4.jsonl"
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, help="Task slug, e.g. hate-speech.")
        parser.add_argument(
            "--round", type=int, nargs="+", default=None, help="Round number(s); default every round."
        )
        parser.add_argument("--format", choices=FORMATS, default="jsonl")
        parser.add_argument("--output", default=None, help="File to write; default standard output.")
        parser.add_argument(
            "--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, help="Examples read per query."
        )

    def handle(self, *args, task, round, format, output, chunk_size, **options):
        task_obj = Task.objects.filter(slug=task).first()
        if task_obj is None:
            raise CommandError(
                f"No task {task!r}. Known: {', '.join(Task.objects.values_list('slug', flat=True))}"
            )
        rounds = None
        if round:
            rounds = list(Round.objects.filter(task=task_obj, number__in=round))
            missing = sorted(set(round) - {r.number for r in rounds})
            if missing:
                raise CommandError(f"Task {task_obj.slug} has no round(s) {missing}.")
        if chunk_size < 1:
            raise CommandError("--chunk-size must be at least 1")
        try:
            if output:
                with open(output, "w", encoding="utf-8", newline="") as handle:
                    count = write_export(handle, task_obj, rounds, fmt=format, chunk_size=chunk_size)
                self.stderr.write(f"{count} examples written to {output} ({format}).")
            else:
                count = write_export(_Raw(self.stdout), task_obj, rounds, fmt=format, chunk_size=chunk_size)
                self.stderr.write(f"{count} examples exported ({format}).")
        except ExportError as exc:
            raise CommandError(str(exc)) from exc


class _Raw:
    """Writes pieces to a command's stdout as they are (no added line ending)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, piece: str) -> None:
        self.stream.write(piece, ending="")
