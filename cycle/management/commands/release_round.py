"""``manage.py release_round <task-slug> <round-number>``: freeze the round's validated examples as a release."""

from __future__ import annotations

from django.core.management.base import CommandError

from core.audit import OperatorCommand
from cycle.releases.services import ReleaseError, create_release, release_dir
from tasks.models import Round


class Command(OperatorCommand):
    help = (
        "Release a round: its validated-correct examples as train/dev/test JSONL, release.json and a "
        "dataset card, read-only under DYNABENCH_RELEASES_DIR/<task>/round-<n>/v<version>/. Prints the "
        "existing release when nothing changed since the latest one. --actor names the operator "
        "(recorded as the release's creator and in the audit log). "
        "Example: python manage.py release_round hate-speech 1 --actor alice"
    )

    def add_arguments(self, parser):
        parser.add_argument("task", help="Task slug.")
        parser.add_argument("round", type=int, help="Round number.")

    def handle(self, *args, task, round, **options):
        round_ = Round.objects.select_related("task").filter(task__slug=task, number=round).first()
        if round_ is None:
            raise CommandError(f"There is no round {round} of a task {task!r}.")
        try:
            release, created = create_release(round_=round_, user=self.actor)
        except ReleaseError as exc:
            raise CommandError(str(exc)) from None
        verb = "Released" if created else "Unchanged since"
        self.stdout.write(
            f"{verb} {task} round {round} v{release.version}: {release.counts['total']} example(s), "
            f"sha256 {release.sha256}, in {release_dir(release)}"
        )
