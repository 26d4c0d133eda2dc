"""Each app chooses a task's kind once, from ``TaskConfig.kind``: the red-teaming kind (generation) is the
one whose rounds are conversations (tasks.kinds, for tasks, annotation and validation), whose models are chat models (models_registry)
and benchmarked (generative_bench); classification and span tasks are none of these."""

from __future__ import annotations

import pytest

from generative_bench.kinds import benchmarked
from models_registry.kinds import chat_models
from tasks.builtin_configs import HATE_SPEECH_CONFIG, NLI_CONFIG, QA_CONFIG, RED_TEAM_CONFIG, SENTIMENT_CONFIG
from tasks.config import TaskConfig
from tasks.kinds import conversational

ASKS = [conversational, benchmarked, chat_models]


@pytest.mark.parametrize("ask", ASKS, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_only_the_generation_kind_answers_yes(ask):
    answers = {
        name: ask(TaskConfig(config))
        for name, config in [
            ("hate", HATE_SPEECH_CONFIG),
            ("sentiment", SENTIMENT_CONFIG),
            ("nli", NLI_CONFIG),
            ("qa", QA_CONFIG),
            ("red", RED_TEAM_CONFIG),
        ]
    }
    assert answers == {"hate": False, "sentiment": False, "nli": False, "qa": False, "red": True}
