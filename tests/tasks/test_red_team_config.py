"""A red-teaming task by config: the ``red_team`` section, its cross-field rules, and the rubric that
decides whether a generated answer failed."""

from __future__ import annotations

import copy

import pytest
from django.core.exceptions import ValidationError

from tasks.builtin_configs import HATE_SPEECH_CONFIG, RED_TEAM_CONFIG
from tasks.config import TaskConfig, validate_config


def _messages(config) -> list[str]:
    with pytest.raises(ValidationError) as info:
        validate_config(config)
    return info.value.messages


def test_the_red_team_config_is_valid_and_reads_back():
    validate_config(RED_TEAM_CONFIG)
    cfg = TaskConfig(RED_TEAM_CONFIG)
    assert cfg.kind == "generation" and TaskConfig(HATE_SPEECH_CONFIG).kind == "classification"
    assert cfg.red_team_modes == ["conversation", "multiple_choice"]
    assert (cfg.max_turns, cfg.min_negatives, cfg.max_options) == (3, 2, 5)
    assert [c["name"] for c in cfg.failure_categories] == [
        "contradiction",
        "fabrication",
        "unanswerable",
        "other",
    ]
    assert [q.name for q in cfg.rubric.questions] == ["supported", "helpful"]
    assert cfg.model_input_fields == ["passage", "prompt"]


def test_defaults_of_the_optional_settings():
    config = copy.deepcopy(RED_TEAM_CONFIG)
    del config["red_team"]["max_turns"], config["red_team"]["multiple_choice"]
    validate_config(config)
    assert (
        TaskConfig(config).max_turns,
        TaskConfig(config).min_negatives,
        TaskConfig(config).max_options,
    ) == (
        3,
        2,
        6,
    )


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c.pop("red_team"),
        lambda c: c.update(model_wrong_rule={"type": "exact_match"}),
        lambda c: c["target_field"].update(type="string"),
    ],
    ids=["no-section", "another-rule", "another-target"],
)
def test_the_generation_target_the_rubric_rule_and_the_section_go_together(change):
    config = copy.deepcopy(RED_TEAM_CONFIG)
    change(config)
    messages = _messages(config)
    assert (
        "config: a red-teaming task has all three of target_field type 'generation', model_wrong_rule "
        "'rubric' and a 'red_team' section; other tasks have none of them."
    ) in messages


def test_a_classifier_task_with_a_red_team_section_is_refused():
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["red_team"] = copy.deepcopy(RED_TEAM_CONFIG["red_team"])
    assert _messages(config)[-1].startswith("config: a red-teaming task has all three")


def test_rubric_and_category_problems_are_each_named():
    config = copy.deepcopy(RED_TEAM_CONFIG)
    section = config["red_team"]
    section["categories"].append({"name": "other", "label": "Again"})
    section["rubric"][0]["failure_answers"] = ["maybe"]
    section["rubric"][1]["failure_answers"] = ["1", "2", "3", "4", "5"]
    section["multiple_choice"] = {"min_negatives": 4, "max_options": 4}
    assert _messages(config) == [
        "config['red_team']['categories']: names must be unique.",
        "config['red_team']['rubric'][0]: failure answers 'maybe' are not among its answers.",
        "config['red_team']['rubric'][1]: not every answer can be a failure.",
        "config['red_team']['multiple_choice']: max_options must leave room for the answer and 4 negatives.",
    ]


def test_schema_limits_on_the_section():
    config = copy.deepcopy(RED_TEAM_CONFIG)
    config["red_team"]["modes"] = ["chat"]
    config["red_team"]["max_turns"] = 0
    config["red_team"]["rubric"][0]["answers"] = ["yes"]
    messages = _messages(config)
    assert len(messages) == 3
    assert any(m.startswith("config['red_team']['modes'][0]: 'chat' is not one of") for m in messages)
    assert any(
        m.startswith("config['red_team']['max_turns']: 0 is less than the minimum of 1") for m in messages
    )
    assert any(m.startswith("config['red_team']['rubric'][0]['answers']:") for m in messages)


# --- the rubric ---------------------------------------------------------------------------------------

RUBRIC = TaskConfig(RED_TEAM_CONFIG).rubric


@pytest.mark.parametrize(
    "answers, failed, which",
    [
        ({"supported": "yes", "helpful": "5"}, False, []),
        ({"supported": "yes", "helpful": "2"}, False, []),  # 2 is not a failure answer; only 1 is
        ({"supported": "no", "helpful": "5"}, True, ["supported"]),
        ({"supported": "yes", "helpful": "1"}, True, ["helpful"]),
        ({"supported": "no", "helpful": "1"}, True, ["supported", "helpful"]),
    ],
)
def test_an_output_fails_when_any_answer_is_a_failure_answer(answers, failed, which):
    clean = RUBRIC.clean(answers)
    assert (RUBRIC.failed(clean), RUBRIC.failed_questions(clean)) == (failed, which)


def test_bad_rubric_answers_are_each_named():
    with pytest.raises(ValidationError) as info:
        RUBRIC.clean({"supported": "perhaps", "tone": "rude"})
    assert info.value.messages == [
        "rubric: 'tone' is not a question of this task's rubric.",
        "rubric: 'supported' takes one of 'yes', 'no', not 'perhaps'.",
        "rubric: answer 'How well does the answer address the message? (1 not at all, 5 fully)'.",
    ]
    with pytest.raises(ValidationError, match="must be an object"):
        RUBRIC.clean(["yes", "5"])
    with pytest.raises(ValidationError, match="takes one of"):
        RUBRIC.clean({"supported": 5, "helpful": "5"})  # not a string: not one of the answers
