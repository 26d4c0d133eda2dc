"""The cycle app's one table of what it does per kind of task (cycle/kinds.py)."""

from __future__ import annotations

from cycle.kinds import GENERATIVE_PROBES_REASON, RULES, rules_for
from tasks.builtin_configs import HATE_SPEECH_CONFIG, QA_CONFIG, RED_TEAM_CONFIG
from tasks.config import TaskConfig, TaskKind


def test_every_kind_has_a_row():
    """A kind added to ``TaskKind`` without a row here fails at once, not in some page."""
    assert set(RULES) == set(TaskKind)


def test_the_built_in_tasks_rows():
    hate, qa, red = (rules_for(TaskConfig(c)) for c in (HATE_SPEECH_CONFIG, QA_CONFIG, RED_TEAM_CONFIG))
    assert [r.generative for r in (hate, qa, red)] == [False, False, True]
    assert [r.labelled for r in (hate, qa, red)] == [True, False, False]
    assert [r.span_answers for r in (hate, qa, red)] == [False, True, False]
    assert [r.hub_task_category for r in (hate, qa, red)] == [
        "text-classification",
        "question-answering",
        "text-generation",
    ]
    assert hate.input_only_not_applicable == ""
    assert "answer span" in qa.input_only_not_applicable
    assert red.input_only_not_applicable == GENERATIVE_PROBES_REASON
    assert qa.cycle_rule(TaskConfig(QA_CONFIG)) == (
        "an answer whose best SQuAD F1 against the reference answers is below 0.4"
    )
    assert (
        hate.cycle_rule(TaskConfig(HATE_SPEECH_CONFIG))
        == "a predicted label that differs from the validated label"
    )
    assert red.cycle_rule(TaskConfig(RED_TEAM_CONFIG)).startswith("not measured here")
