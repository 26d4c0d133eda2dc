"""The kinds of task (``config.TaskKind``) whose rounds collect conversations with a generative target
and multiple-choice items, chosen here once for this app: their task page shows the attack success
rate per round (``red_team_stats``) instead of MER and vMER. Asked as ``conversational(task.cfg)``."""

from __future__ import annotations

from .config import TaskConfig, TaskKind

CONVERSATIONAL = frozenset({TaskKind.GENERATION})
"""The kinds whose rounds are measured by attack success rate, not MER."""


def conversational(cfg: TaskConfig) -> bool:
    """True when the task whose config is ``cfg`` is of a kind in ``CONVERSATIONAL``."""
    return cfg.kind in CONVERSATIONAL
