"""The kinds of task whose models are chat models (``tasks.config.TaskKind``), chosen here once: such a
model is registered, checked and warmed as a chat model (``generative.py``), answers on ``/v1``, and reads
its conversation whole (no context-room check); the others are classifiers and span predictors
(``inference.py``). The registry asks ``chat_models(task.cfg)`` instead of testing the config."""

from __future__ import annotations

from tasks.config import TaskConfig, TaskKind

CHAT_KINDS = frozenset({TaskKind.GENERATION})
"""The kinds whose models answer in free text."""


def chat_models(cfg: TaskConfig) -> bool:
    """True when the models of the task whose config is ``cfg`` are chat models (``CHAT_KINDS``)."""
    return cfg.kind in CHAT_KINDS
