"""The demo's sentiment task: DynaSent rounds 1-2 imported, round 3 open on round 2's prompt sentences.

    round  target trained on                       state
    1      round 1's own training split (marked)   closed
    2      round 1                                 closed
    3      rounds 1-2                              open: the 720 prompt sentences of round 2 as contexts

Splits (``docs/datasets.md``): round 1's dev file is 90% train / 10% dev, its test file is test;
round 2 (dev file only) is 60/10/30 train/dev/test.
"""

from __future__ import annotations

from django.core.management import call_command

from demo.demo_tasks.base import DemoTask, Log, copy_contexts
from tasks.models import Task


def import_data(log: Log) -> None:
    """DynaSent rounds 1-2 (``import_sentiment_data``) and the natural SST-3 sentences an owner can mix
    into a target's training set (``import_natural_data``); both idempotent."""
    call_command("import_sentiment_data", verbosity=0)
    call_command("import_natural_data", task="sentiment", verbosity=0)


def prepare_open_round(task: Task, log: Log) -> None:
    """Round 3's contexts: round 2's prompt sentences (real review sentences, as DynaSent round 2 used)."""
    copy_contexts(task, from_round=2, to_round=3, log=log)


DEMO_TASK = DemoTask(
    slug="sentiment",
    import_data=import_data,
    target_training_rounds={1: (1,), 2: (1,), 3: (1, 2)},
    open_round=3,
    prepare_open_round=prepare_open_round,
    card_note=(
        "Trained on DynaSent dev data: no train file could be had, so each round's dev file is cut into "
        "train and dev (and test for round 2) by a hash of text_id (docs/datasets.md). Round 1 test is "
        "the published test set."
    ),
)
