"""The leaderboards app's one table of what it does per kind of task (leaderboards/kinds.py)."""

from __future__ import annotations

from leaderboards.kinds import RULES, rules_for
from tasks.builtin_configs import HATE_SPEECH_CONFIG, QA_CONFIG, RED_TEAM_CONFIG
from tasks.config import TaskConfig, TaskKind


def test_every_kind_has_a_row():
    """A kind added to ``TaskKind`` without a row here fails at once, not in some page."""
    assert set(RULES) == set(TaskKind)


def test_the_built_in_tasks_rows():
    hate, qa, red = (rules_for(TaskConfig(c)) for c in (HATE_SPEECH_CONFIG, QA_CONFIG, RED_TEAM_CONFIG))
    assert [r.generative for r in (hate, qa, red)] == [False, False, True]
    assert [r.span_answers for r in (hate, qa, red)] == [False, True, False]
    assert [r.explained for r in (hate, qa, red)] == [True, False, False]
