"""The kinds of task whose models are chat models (``tasks.config.TaskKind``), chosen here once: such a
model is registered, checked and warmed as a chat model (``generative.py``), answers on ``/v1``, and reads
its conversation whole (no context-room check); the others are classifiers and span predictors
(``inference.py``). Among those, the models of ``SPAN_KINDS`` answer with a span of the passage: the check
wants one at its offset, and the API maps its offset back to the text sent. The registry asks
``chat_models(task.cfg)`` and ``span_models(task.cfg)`` instead of testing the config."""

from __future__ import annotations

from tasks.config import TaskConfig, TaskKind

CHAT_KINDS = frozenset({TaskKind.GENERATION})
"""The kinds whose models answer in free text."""


SPAN_KINDS = frozenset({TaskKind.SPAN})
"""The kinds whose models answer with a span of the context (extractive QA)."""


def chat_models(cfg: TaskConfig) -> bool:
    """True when the models of the task whose config is ``cfg`` are chat models (``CHAT_KINDS``)."""
    return cfg.kind in CHAT_KINDS


def span_models(cfg: TaskConfig) -> bool:
    """True when the models of the task whose config is ``cfg`` answer with spans (``SPAN_KINDS``)."""
    return cfg.kind in SPAN_KINDS
