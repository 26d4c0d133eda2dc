"""The demo's NLI task: ANLI rounds 1-3 imported (CC BY-NC 4.0), round 4 open on round 3's premises.

    round  target trained on                       state
    1      round 1's own training split (marked)   closed
    2      round 1                                 closed
    3      rounds 1-2                              closed
    4      rounds 1-3                              open: round 3's premises (several genres) as contexts

The model reads the pair (premise, hypothesis): each encoded alone, the head on (u, v, |u-v|, u*v)
(``engine.runtime.modeling``, pooling "pair"). Splits (``docs/datasets.md``): rounds 1-2 dev files are
90% train / 10% dev, their test files test; round 3 (dev file only) is 60/10/30 train/dev/test.
"""

from __future__ import annotations

from django.core.management import call_command

from demo.demo_tasks.base import DemoTask, Log, copy_contexts
from tasks.models import Task


def import_data(log: Log) -> None:
    """ANLI rounds 1-3 (``import_nli_data``; idempotent)."""
    call_command("import_nli_data", verbosity=0)


def prepare_open_round(task: Task, log: Log) -> None:
    """Round 4's contexts: the distinct premises of round 3 (news, fiction, legal, procedural, ...)."""
    copy_contexts(task, from_round=3, to_round=4, log=log)


DEMO_TASK = DemoTask(
    slug="nli",
    import_data=import_data,
    target_training_rounds={1: (1,), 2: (1,), 3: (1, 2), 4: (1, 2, 3)},
    open_round=4,
    prepare_open_round=prepare_open_round,
    card_note=(
        "Trained on ANLI dev data (CC BY-NC 4.0, non-commercial): no train file could be had, so each "
        "round's dev file is cut into train and dev (and test for round 3) by a hash of uid "
        "(docs/datasets.md). Rounds 1-2 test are the published test sets. MiniLM encodes premise and "
        "hypothesis separately and the head reads (u, v, |u-v|, u*v) (config pooling 'pair'). Quick "
        "targets, seed 0 (benchmarks/nli_target.py), accuracy on rounds 1 / 2 / 3 test: trained on "
        "round 1 41.8% / 39.8% / 34.5%; rounds 1-2 42.1% / 42.8% / 37.8%; rounds 1-3 42.6% / 43.4% / "
        "32.9% (chance 33.3%)."
    ),
)
