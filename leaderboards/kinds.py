"""What the leaderboards app does for each kind of task (``tasks.config.TaskKind``), chosen here once.

A classification task (hate speech, NLI) and a span task (extractive QA) rank their models by Dynascore
over datasets; a generation task (red teaming) ranks its generative models on the generative leaderboard
(multiple-choice accuracy, attack success rate, Bradley-Terry, speed), and its round datasets hold
validated multiple-choice items. The functions of the app ask ``rules_for(task.cfg)`` instead of testing
the config; a new kind is one more row of ``RULES``. (What the round-to-round loop does per kind, the
probes, the cycle matrix and the release card, is ``cycle.kinds``.)
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.config import TaskConfig, TaskKind


@dataclass(frozen=True)
class KindRules:
    """How leaderboards treats one kind of task.

    ``generative``: its models answer in free text: ranked on the generative leaderboard, evaluated on
    multiple-choice items (``leaderboards.generative.evaluation``), its round datasets the validated items.
    ``span_answers``: its items' targets are answer spans, scored by SQuAD F1 and exact match; a target
    trained here is measured on its rounds' test splits only (no static set such as HateCheck).
    ``explained``: the model page explains a prediction (word attributions of a label); not for spans.
    """

    generative: bool
    span_answers: bool
    explained: bool


RULES: dict[TaskKind, KindRules] = {
    TaskKind.CLASSIFICATION: KindRules(generative=False, span_answers=False, explained=True),
    TaskKind.SPAN: KindRules(generative=False, span_answers=True, explained=False),
    TaskKind.GENERATION: KindRules(generative=True, span_answers=False, explained=False),
}
"""One row per ``TaskKind``."""


def rules_for(cfg: TaskConfig) -> KindRules:
    """``RULES`` for the kind of the task whose config is ``cfg`` (``TaskConfig.kind``)."""
    return RULES[cfg.kind]
