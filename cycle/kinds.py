"""What the cycle app does for each kind of task (``tasks.config.TaskKind``), chosen here once.

A classification task (hate speech, NLI) and a span task (extractive QA) run a closed round's artefact
probes and draw the cycle matrix (targets against the rounds written to fool them); a generation task
(red teaming) does neither: its examples are conversations and multiple-choice items, and its targets
are ranked on the generative leaderboard. A release card names the kind's Hugging Face task category.
The functions of the app ask ``rules_for(task.cfg)`` instead of testing the config; a new kind is one
more row of ``RULES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tasks.config import TaskConfig, TaskKind


@dataclass(frozen=True)
class KindRules:
    """How the cycle app treats one kind of task.

    ``generative``: its models answer in free text, so no cycle matrix and no artefact probes.
    ``hub_task_category``: a release card's Hugging Face task category. ``input_only_not_applicable``:
    why a round's input-only probe does not apply ("" when it does: a label target). ``cycle_rule``: the
    cycle matrix's words for a target an example fooled, from the config. ``labelled``: its examples'
    targets are labels (a classifier is trained; the training form counts examples per label; a file of
    texts and labels can be replayed). ``span_answers``: its targets are answer spans (a span model is
    trained, on the MiniLM backbone without natural data).
    """

    generative: bool
    labelled: bool
    span_answers: bool
    hub_task_category: str
    input_only_not_applicable: str
    cycle_rule: Callable[[TaskConfig], str]


GENERATIVE_PROBES_REASON = (
    "not applicable: a red-teaming task's examples are conversations with a generative model and "
    "multiple-choice items, not labelled texts"
)

RULES: dict[TaskKind, KindRules] = {
    TaskKind.CLASSIFICATION: KindRules(
        generative=False,
        labelled=True,
        span_answers=False,
        hub_task_category="text-classification",
        input_only_not_applicable="",
        cycle_rule=lambda cfg: "a predicted label that differs from the validated label",
    ),
    TaskKind.SPAN: KindRules(
        generative=False,
        labelled=False,
        span_answers=True,
        hub_task_category="question-answering",
        input_only_not_applicable="not applicable: the target is an answer span in the passage, not a label",
        cycle_rule=lambda cfg: (
            f"an answer whose best SQuAD F1 against the reference answers is below {cfg.string_f1_threshold:g}"
        ),
    ),
    TaskKind.GENERATION: KindRules(
        generative=True,
        labelled=False,
        span_answers=False,
        hub_task_category="text-generation",
        input_only_not_applicable=GENERATIVE_PROBES_REASON,
        cycle_rule=lambda cfg: (
            "not measured here: a red-teaming task's targets are ranked on its generative leaderboard"
        ),
    ),
}
"""One row per ``TaskKind``."""


def rules_for(cfg: TaskConfig) -> KindRules:
    """``RULES`` for the kind of the task whose config is ``cfg`` (``TaskConfig.kind``)."""
    return RULES[cfg.kind]
