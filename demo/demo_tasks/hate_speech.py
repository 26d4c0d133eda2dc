"""The demo's hate-speech task: HatemojiBuild's rounds 5-7 as rounds 1-3, round 4 open.

round  target trained on                       state
1      round 1's own training split (marked)   closed
2      round 1                                 closed
3      rounds 1-2                              closed
4      rounds 1-3                              open, current: annotators write here
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.management import call_command

from demo.demo_tasks.base import DemoTask


def import_data(log: Callable[[str], None]) -> None:
    """HatemojiBuild, HateCheck and HatemojiCheck (``import_hate_data``), and HatemojiBuild's originals as
    the natural set an owner can mix into a target's training set (``import_natural_data``); idempotent."""
    call_command("import_hate_data")
    call_command("import_natural_data", task="hate-speech")


DEMO_TASK = DemoTask(
    slug="hate-speech",
    import_data=import_data,
    target_training_rounds={1: (1,), 2: (1,), 3: (1, 2), 4: (1, 2, 3)},
    open_round=4,
)
