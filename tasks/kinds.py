"""What a task's kind (``config.TaskKind``) means for the apps that store and show its examples, chosen
here once.

``conversational``: the kinds whose rounds collect conversations with a generative target
and multiple-choice items instead of examples, for the apps that store and show them:
their task page shows the attack success rate per round (``red_team_stats``) instead of MER and vMER;
their pages, API and export are ``annotation/red_team/``'s, the create page sends writers there and
``create_example`` refuses them; the validate page shows them without the author's judgement. Asked
as ``conversational(task.cfg)``.

``labelled``: the kinds whose example's target is one of the config's labels (a choice on the create
form and in the API); ``span_answers``: the kinds whose target is a span of the context (selected in the
passage, checked against it, compared by SQuAD F1). A kind in neither (generation) has no target an
annotator writes."""

from __future__ import annotations

from .config import TaskConfig, TaskKind

CONVERSATIONAL = frozenset({TaskKind.GENERATION})
"""The kinds whose rounds are measured by attack success rate, not MER."""


LABELLED = frozenset({TaskKind.CLASSIFICATION})
"""The kinds whose target is a label from the config's list."""

SPAN_ANSWERS = frozenset({TaskKind.SPAN})
"""The kinds whose target is a span of the context."""


def conversational(cfg: TaskConfig) -> bool:
    """True when the task whose config is ``cfg`` is of a kind in ``CONVERSATIONAL``."""
    return cfg.kind in CONVERSATIONAL


def labelled(cfg: TaskConfig) -> bool:
    """True when the task whose config is ``cfg`` is of a kind in ``LABELLED``."""
    return cfg.kind in LABELLED


def span_answers(cfg: TaskConfig) -> bool:
    """True when the task whose config is ``cfg`` is of a kind in ``SPAN_ANSWERS``."""
    return cfg.kind in SPAN_ANSWERS
