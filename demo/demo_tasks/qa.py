"""The demo's extractive QA task: SQuAD v1.1 (shared dev articles) as round 1, round 2 open.

    round  target trained on                       state
    1      round 1's own training split (marked)   closed: 43 articles, split by article
    2      round 1                                 open: the passages of the held-apart test articles

The target is MiniLM with a start/end span head (``engine.training.qa``, quick recipe: every
layer and the head, one epoch on 1,400 sampled training questions in 192-token windows; held-apart test
F1 33.7% / EM 21.8% on 500 test questions, ``benchmarks/qa_target.py``). The split is by article
(``docs/datasets.md``, "Extractive QA"): the target never saw a passage of the test articles, so round 2's
annotators write on passages new to it, and its F1 / EM on round 1's test split are held-apart figures.
"""

from __future__ import annotations

from django.core.management import call_command

from demo.demo_tasks.base import DemoTask, Log
from tasks.models import Context, Task


def import_data(log: Log) -> None:
    """SQuAD v1.1 into round 1 (``import_qa_data``; idempotent)."""
    call_command("import_qa_data", verbosity=0)


def prepare_open_round(task: Task, log: Log) -> None:
    """Round 2's contexts: the paragraphs of round 1's test articles (idempotent by external id)."""
    round1 = task.rounds.get(number=1)
    round2 = task.rounds.get(number=2)
    have = set(Context.objects.filter(round=round2).values_list("external_id", flat=True))
    test_contexts = (
        Context.objects.filter(round=round1, examples__split="test").exclude(external_id="").distinct()
    )
    new = [
        Context(
            task=task, round=round2, data=c.data, tag=c.tag, metadata=c.metadata, external_id=c.external_id
        )
        for c in test_contexts.order_by("id")
        if c.external_id not in have
    ]
    Context.objects.bulk_create(new, ignore_conflicts=True)
    if new:
        log(f"[{task.slug}] Round 2: {len(new)} passages of the held-apart test articles")


DEMO_TASK = DemoTask(
    slug="qa",
    import_data=import_data,
    target_training_rounds={1: (1,), 2: (1,)},
    open_round=2,
    prepare_open_round=prepare_open_round,
)
