"""``manage.py check_arena_voters --task SLUG [--hold]``: the voter-integrity tests of a task's arena votes
(``core.voter_integrity``; docs/benchmarking.md, "Voter integrity"): each voter whose votes count, their
decisive votes, z and, for a flagged voter, the model they favour; then each model whose group of
favouring voters is larger than chance; ``--hold`` holds the flagged voters (by either test) for review
through the task's hold flow, so their votes leave the ranking until an owner releases them."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from core.audit import OperatorCommand
from generative_bench.arena.selectors import voter_checks
from generative_bench.arena.services import hold_flagged_voters
from generative_bench.kinds import benchmarked
from models_registry.models import RegisteredModel
from tasks.models import Task


class Command(OperatorCommand):
    help = "Test the arena's voters, alone and in groups, against the ranking; --hold holds the flagged ones."

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, help="The red-teaming task's slug.")
        parser.add_argument("--hold", action="store_true", help="Hold the flagged voters for review.")

    def handle(self, *args, task, hold, **options):
        found = Task.objects.filter(slug=task).first()
        if found is None or not benchmarked(found.cfg):
            raise CommandError(f"No red-teaming task {task!r}: only a red-teaming task has an arena.")
        checks = voter_checks(found)
        names = dict(RegisteredModel.objects.filter(task=found).values_list("pk", "name"))
        flagged = [t for t in checks.per_voter.values() if t.flagged]
        usernames = dict(
            get_user_model().objects.filter(pk__in=list(checks.per_voter)).values_list("pk", "username")
        )
        for test in sorted(checks.per_voter.values(), key=lambda t: (t.z is None, t.z or 0.0)):
            z = "not tested (fewer than 10 decisive votes)" if test.z is None else f"z = {test.z:.2f}"
            mark = "  FLAGGED" if test.flagged else ""
            pushed = f", favouring {names.get(test.pushed, test.pushed)}" if test.flagged else ""
            who = usernames.get(test.voter, test.voter)
            self.stdout.write(f"voter {who}: {test.votes} decisive votes, {z}{pushed}{mark}")
        tested = sum(1 for t in checks.per_voter.values() if t.z is not None)
        self.stdout.write(
            f"{len(checks.per_voter)} voters, {tested} with at least 10 decisive votes tested, {len(flagged)} "
            "flagged (z < -1.64, one-sided 5%)."
        )
        for model, group in sorted(checks.groups.items(), key=lambda item: -item[1].excess):
            if group.count:
                mark = "  FLAGGED" if group.flagged else ""
                self.stdout.write(
                    f"model {names.get(model, model)}: {group.count} voters chose it far more often than the "
                    f"ranking predicts ({group.expected:.1f} expected; excess {group.excess:.2f}, flagged above "
                    f"{group.threshold:.2f}){mark}"
                )
        groups = [g for g in checks.groups.values() if g.flagged]
        self.stdout.write(f"Groups flagged: {len(groups)} (about 5% chance of any in an honest arena).")
        if hold and (flagged or groups):
            held = hold_flagged_voters(task=found, checks=checks, names=names)
            self.stdout.write(f"Held for review: {len(held)} (their votes leave the ranking).")
