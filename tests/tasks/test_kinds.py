"""Each app chooses a task's kind once, from ``TaskConfig.kind``: the red-teaming kind (generation) is the
one whose rounds are conversations (tasks.kinds, for tasks, annotation and validation), whose models are chat models (models_registry)
and benchmarked (generative_bench); classification and span tasks are none of these."""

from __future__ import annotations

import pytest

from generative_bench.kinds import benchmarked
from models_registry.kinds import chat_models, span_models
from tasks.builtin_configs import HATE_SPEECH_CONFIG, NLI_CONFIG, QA_CONFIG, RED_TEAM_CONFIG, SENTIMENT_CONFIG
from tasks.config import TaskConfig
from tasks.kinds import conversational, labelled, span_answers

ASKS = [conversational, benchmarked, chat_models]
BUILT_IN = [
    ("hate", HATE_SPEECH_CONFIG),
    ("sentiment", SENTIMENT_CONFIG),
    ("nli", NLI_CONFIG),
    ("qa", QA_CONFIG),
    ("red", RED_TEAM_CONFIG),
]


def _answers(ask) -> dict[str, bool]:
    return {name: ask(TaskConfig(config)) for name, config in BUILT_IN}


@pytest.mark.parametrize("ask", ASKS, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_only_the_generation_kind_answers_yes(ask):
    assert _answers(ask) == {"hate": False, "sentiment": False, "nli": False, "qa": False, "red": True}


@pytest.mark.parametrize("ask", [span_answers, span_models], ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_only_the_span_kind_has_span_answers(ask):
    assert _answers(ask) == {"hate": False, "sentiment": False, "nli": False, "qa": True, "red": False}


def test_only_the_classification_kind_is_labelled():
    assert _answers(labelled) == {"hate": True, "sentiment": True, "nli": True, "qa": False, "red": False}
