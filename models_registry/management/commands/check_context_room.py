"""``manage.py check_context_room <task-slug> [<round-number>]``: mark the round's contexts that leave its
targets no room for the input, and say how many."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from models_registry.context_room import MIN_INPUT_ROOM, check_context_room
from tasks.models import Round, Task


class Command(BaseCommand):
    help = (
        "Check which contexts of a round leave its target models fewer than --min-room word pieces for "
        "the annotator's input (a premise too long to write a hypothesis on); those are not served. Run it "
        "after loading contexts with load_contexts or by hand; setting a round's targets runs it too. "
        "Without a round number, the task's current round. Example: python manage.py check_context_room nli 4"
    )

    def add_arguments(self, parser):
        parser.add_argument("task", help="Task slug.")
        parser.add_argument("round", type=int, nargs="?", help="Round number (default: the current round).")
        parser.add_argument(
            "--min-room",
            type=int,
            default=MIN_INPUT_ROOM,
            help=f"Word pieces a context must leave for the input (default {MIN_INPUT_ROOM}).",
        )

    def handle(self, *args, task, round, min_room, **options):
        found = Task.objects.filter(slug=task).first()
        if found is None:
            raise CommandError(f"There is no task {task!r}.")
        if round is None:
            round_ = found.current_round
            if round_ is None:
                raise CommandError(f"Task {task!r} has no current round; name the round.")
        else:
            round_ = Round.objects.select_related("task").filter(task=found, number=round).first()
            if round_ is None:
                raise CommandError(f"There is no round {round} of task {task!r}.")
        if min_room < 0:
            raise CommandError("--min-room must be 0 or more.")
        report = check_context_room(round_, min_room=min_room)
        self.stdout.write(f"{task} round {round_.number}: {report}")
