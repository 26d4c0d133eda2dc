"""The tasks the demo sets up, one module per task; ``demo.setup.setup_demo`` runs them in order.

To add a task to the demo, write a module here that defines ``DEMO_TASK`` (a ``DemoTask``) and add
its dotted path to ``DEMO_TASK_MODULES`` (one line).
"""

from __future__ import annotations

from importlib import import_module

from demo.demo_tasks.base import DemoTask

DEMO_TASK_MODULES: tuple[str, ...] = (
    "demo.demo_tasks.hate_speech",
    # After hate speech, whose round-4 target it takes (no training of its own).
    "demo.demo_tasks.hate_speech_unsure",
    # Second: nothing to train (SmolLM2 is converted once, about 20 s), so it opens early in the first run.
    "demo.demo_tasks.red_team",
    "demo.demo_tasks.sentiment",
    "demo.demo_tasks.nli",
    "demo.demo_tasks.qa",
)


def demo_tasks() -> list[DemoTask]:
    """Every registered ``DemoTask``, in ``DEMO_TASK_MODULES`` order."""
    return [import_module(path).DEMO_TASK for path in DEMO_TASK_MODULES]


__all__ = ["DEMO_TASK_MODULES", "DemoTask", "demo_tasks"]
