import copy

import pytest
from django.core.exceptions import ValidationError

from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.config import TaskConfig, validate_config


def _messages(config) -> list[str]:
    with pytest.raises(ValidationError) as info:
        validate_config(config)
    return info.value.messages


def test_hate_speech_config_is_valid_and_reads_back():
    validate_config(HATE_SPEECH_CONFIG)
    cfg = TaskConfig(HATE_SPEECH_CONFIG)
    assert cfg.labels == ["hateful", "not-hateful"]
    assert cfg.model_input_fields == ["statement"]
    assert cfg.max_input_length == 2000
    assert cfg.model_wrong_rule == "exact_match"


def test_missing_labels_is_named_with_its_path():
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    del config["target_field"]["labels"]
    assert _messages(config) == ["config['target_field']: a multiclass target needs at least two labels."]


def test_every_schema_problem_is_reported_at_once():
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["perf_metric"] = "bleu"
    config["input_fields"][0]["name"] = "Bad Name"
    messages = _messages(config)
    assert len(messages) == 2
    assert any(m.startswith("config['perf_metric']: 'bleu' is not one of") for m in messages)
    assert any(m.startswith("config['input_fields'][0]['name']: 'Bad Name' does not match") for m in messages)


def test_duplicate_labels_and_field_names_are_rejected():
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["target_field"]["labels"] = ["hateful", "hateful"]
    config["target_field"]["name"] = "statement"
    messages = _messages(config)
    assert "config: field names must be unique across context, input and target fields." in messages
    assert "config['target_field']['labels']: labels must be unique." in messages


def test_not_an_object():
    assert _messages(["statement"]) == ["The task config must be a JSON object."]


def test_span_target_needs_a_context_field_and_string_f1():
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["target_field"] = {"name": "answer", "type": "context_span", "context_field": "passage"}
    messages = _messages(config)
    assert "config['target_field']: a context_span target must name one of the context fields." in messages
    assert any("exact_match applies to label targets" in m for m in messages)


@pytest.mark.django_db
def test_task_clean_rejects_an_invalid_config(hate_task):
    hate_task.config = {"input_fields": []}
    with pytest.raises(ValidationError):
        hate_task.full_clean()


def test_span_config_without_model_input_fields_defaults_to_the_builtin_qa_pair():
    from tasks.builtin_configs import QA_CONFIG

    config = copy.deepcopy(QA_CONFIG)
    del config["model_input_fields"]
    validate_config(config)
    assert TaskConfig(config).model_input_fields == ["context", "question"]
    assert TaskConfig(config).model_input_fields == TaskConfig(QA_CONFIG).model_input_fields


def test_span_config_with_model_input_not_a_passage_question_pair_is_refused():
    from tasks.builtin_configs import QA_CONFIG

    expected = [
        "config['model_input_fields']: a context_span target's model reads a (passage, question) pair, "
        "so this must be ['context', <an input field>]; "
        "leave it out to use the span's context field and the first input field."
    ]
    for given in (["question"], ["question", "context"], ["title", "question"], ["context", "title"]):
        config = copy.deepcopy(QA_CONFIG)
        config["model_input_fields"] = given
        assert _messages(config) == expected, given


def test_each_built_in_config_has_its_kind_read_from_the_target_type():
    from tasks.builtin_configs import HATE_SPEECH_CONFIG as hate
    from tasks.builtin_configs import NLI_CONFIG as nli
    from tasks.builtin_configs import QA_CONFIG as qa
    from tasks.builtin_configs import RED_TEAM_CONFIG as red
    from tasks.builtin_configs import SENTIMENT_CONFIG as sentiment
    from tasks.config import TaskConfig, TaskKind

    kinds = {name: TaskConfig(c).kind for name, c in [("hate", hate), ("sentiment", sentiment), ("nli", nli)]}
    assert kinds == {"hate": "classification", "sentiment": "classification", "nli": "classification"}
    assert TaskConfig(qa).kind is TaskKind.SPAN
    assert TaskConfig(red).kind is TaskKind.GENERATION
    with pytest.raises(ValueError, match="no task kind has the target type 'string'"):
        _ = TaskConfig({**hate, "target_field": {"name": "label", "type": "string"}}).kind
