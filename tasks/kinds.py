"""The kinds of task (``config.TaskKind``) whose rounds collect conversations with a generative target
and multiple-choice items instead of examples, chosen here once for the apps that store and show them:
their task page shows the attack success rate per round (``red_team_stats``) instead of MER and vMER;
their pages, API and export are ``annotation/red_team/``'s, the create page sends writers there and
``create_example`` refuses them; the validate page shows them without the author's judgement. Asked
as ``conversational(task.cfg)``."""

from __future__ import annotations

from .config import TaskConfig, TaskKind

CONVERSATIONAL = frozenset({TaskKind.GENERATION})
"""The kinds whose rounds are measured by attack success rate, not MER."""


def conversational(cfg: TaskConfig) -> bool:
    """True when the task whose config is ``cfg`` is of a kind in ``CONVERSATIONAL``."""
    return cfg.kind in CONVERSATIONAL
