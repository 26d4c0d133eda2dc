"""The kinds of task whose models this app benchmarks (``tasks.config.TaskKind``), chosen here once:
replay, judges and the arena all work on a task whose target answers in free text (red teaming). Every
entry point asks ``benchmarked(task.cfg)`` instead of testing the config; a new generative kind is one
more member of ``BENCHMARKED``."""

from __future__ import annotations

from tasks.config import TaskConfig, TaskKind

BENCHMARKED = frozenset({TaskKind.GENERATION})
"""The kinds whose models answer in free text: replayed, judged and compared in the arena."""


def benchmarked(cfg: TaskConfig) -> bool:
    """True when the task whose config is ``cfg`` is of a kind in ``BENCHMARKED``."""
    return cfg.kind in BENCHMARKED
