"""``manage.py measure_arena_leak --task SLUG [--seed N]``: measure and store the leak rate of a task's
arena (``core.leak_rate``; docs/benchmarking.md, "Anonymity"): how often a bag-of-words classifier
trained on revealed battles tells which model wrote a held-out answer, against chance. The ranking page
shows the latest figure."""

from __future__ import annotations

from django.core.management.base import CommandError

from core.audit import OperatorCommand
from generative_bench.arena.services import measure_leak
from generative_bench.kinds import benchmarked
from models_registry.models import RegisteredModel
from tasks.models import Task


class Command(OperatorCommand):
    help = "Measure how well a classifier tells the arena's models apart from their answers; store it."

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, help="The red-teaming task's slug.")
        parser.add_argument("--seed", type=int, default=0, help="Seed of the battles' train/test split.")

    def handle(self, *args, task, seed, **options):
        found = Task.objects.filter(slug=task).first()
        if found is None or not benchmarked(found.cfg):
            raise CommandError(f"No red-teaming task {task!r}: only a red-teaming task has an arena.")
        m = measure_leak(found, seed=seed)
        if m.accuracy is None:
            self.stdout.write(f"Not measurable: {m.reason}. Stored as such.")
            return
        verdict = "ABOVE chance: the models can be told apart" if m.low > m.chance else "not above chance"
        self.stdout.write(
            f"Leak rate: {m.accuracy:.1%} (95% {m.low:.1%} to {m.high:.1%}) of {m.tested} held-out answers "
            f"({m.test_battles} battles; trained on {m.train_battles}), {m.n_models} models; chance "
            f"{m.chance:.1%}: {verdict}."
        )
        names = dict(RegisteredModel.objects.filter(task=found).values_list("pk", "name"))
        for model, words in sorted(m.top_words.items()):
            self.stdout.write(f"  {names.get(int(model), model)}: {', '.join(words)}")
