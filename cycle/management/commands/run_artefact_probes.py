"""``manage.py run_artefact_probes <task-slug> <round-number>``: measure a round's artefact probes now."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from cycle.probes.selectors import verdict
from cycle.probes.services import run_round_probes
from tasks.models import Round


class Command(BaseCommand):
    help = (
        "Measure a round's artefact probes now, in this process (the input-only baseline and the "
        "annotator-identity probe on its validated examples), replacing its earlier results; prints each "
        "probe's accuracy against chance. Example: python manage.py run_artefact_probes nli 2"
    )

    def add_arguments(self, parser):
        parser.add_argument("task", help="Task slug.")
        parser.add_argument("round", type=int, help="Round number.")

    def handle(self, *args, task, round, **options):
        round_ = Round.objects.select_related("task").filter(task__slug=task, number=round).first()
        if round_ is None:
            raise CommandError(f"There is no round {round} of a task {task!r}.")
        for probe in run_round_probes(round_=round_):
            self.stdout.write(f"{task} round {round}, {probe.get_kind_display()}: {verdict(probe)}")
