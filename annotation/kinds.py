"""The kinds of task whose examples are conversations and multiple-choice items (``tasks.config.TaskKind``),
chosen here once: their pages, API and export are ``annotation/red_team/``'s, the create page sends
writers there, and ``create_example`` refuses them. The app asks ``conversational(task.cfg)`` instead of
testing the config."""

from __future__ import annotations

from tasks.config import TaskConfig, TaskKind

CONVERSATIONAL = frozenset({TaskKind.GENERATION})
"""The kinds written as conversations with a generative target (and multiple-choice items)."""


def conversational(cfg: TaskConfig) -> bool:
    """True when the task whose config is ``cfg`` is of a kind in ``CONVERSATIONAL``."""
    return cfg.kind in CONVERSATIONAL
