"""Generative models in the registry: a local SmolLM2 and a model on an OpenAI-compatible server,
registered for a red-teaming task, checked with one short answer, and served through ``chat_stream``."""

from __future__ import annotations

import json

import pytest
from django.forms.models import model_to_dict

from engine.runtime.generative import Decoding
from models_registry import generative
from models_registry.generative import (
    chat_stream,
    clean_generation_settings,
    register_chat_endpoint_model,
    register_local_chat_model,
)
from models_registry.models import RegisteredModel
from models_registry.services import ModelRegistryError
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Task

pytestmark = pytest.mark.django_db
KEY = "sk-registry-test-9876543210"
CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture
def red_team_task(db):
    return Task.objects.create(slug="red-team", name="Red-team a chat model", config=RED_TEAM_CONFIG)


@pytest.fixture
def checked(django_capture_on_commit_callbacks):
    """Run what registration queues on commit (the check job, inline in tests) and reload the model."""

    def run(register, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            model = register(**kwargs)
        model.refresh_from_db()
        return model

    return run


def test_a_local_chat_model_is_checked_counted_and_answers(red_team_task, smollm2_dir, checked):
    model = checked(
        register_local_chat_model,
        task=red_team_task,
        name="smollm2",
        path=str(smollm2_dir),
        settings={"max_new_tokens": 20, "system_prompt": "Answer briefly."},
    )
    assert (model.status, model.error_message) == ("ready", "")
    assert model.parameter_count == model.card["parameter_count"] == 134_515_008
    assert model.card["context_tokens"] == 8192
    stream = chat_stream(model, CAPITAL)
    text = "".join(stream)
    assert text == stream.generation.text and stream.generation.decoding["max_new_tokens"] == 20
    assert stream.generation.model == "smollm2"


def test_a_gguf_is_converted_by_the_check_into_the_model_folder(
    red_team_task, smollm2_dir, checked, monkeypatch, tmp_path, settings
):
    """The conversion itself runs for real in the session fixture (tests/conftest.py, ``smollm2_dir``);
    here the check must call it for a .gguf path and then serve the folder it returns."""
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    calls = []

    def convert(path, out_dir):
        calls.append((path, str(out_dir)))
        return smollm2_dir

    monkeypatch.setattr(generative, "convert_gguf", convert)
    model = checked(register_local_chat_model, task=red_team_task, name="from-gguf", path=str(gguf))
    assert model.status == "ready", model.error_message
    ((path, out_dir),) = calls
    assert path == str(gguf) and out_dir.startswith(str(settings.DYNABENCH_MODEL_DIR) + "/red-team/")
    assert model.path == str(smollm2_dir) and model.card["converted_from"] == "model.gguf"


def test_a_remote_chat_model_answers_as_the_same_local_model(
    red_team_task, server, smollm2, checked, monkeypatch
):
    monkeypatch.setenv("REGISTRY_TEST_KEY", KEY)
    model = checked(
        register_chat_endpoint_model,
        task=red_team_task,
        name="remote-smollm2",
        base_url=server.base_url + "/",
        chat_model_name="smollm2",
        api_key_env="REGISTRY_TEST_KEY",
        settings={"max_new_tokens": 20, "price_input_per_million": 1.0, "price_output_per_million": 4.0},
    )
    assert (model.status, model.error_message) == ("ready", "")
    assert model.endpoint_url == server.base_url  # the trailing slash taken off
    generation = generative.chat_stream(model, CAPITAL)
    for _ in generation:
        pass
    local = smollm2.generate(CAPITAL, Decoding(max_new_tokens=20))
    assert generation.generation.text == local.text
    assert generation.generation.cost == pytest.approx(
        (local.input_tokens * 1.0 + local.output_tokens * 4.0) / 1e6
    )
    # The key went to the server as a bearer token, and is stored nowhere.
    assert set(server.headers) == {f"Bearer {KEY}"}
    assert KEY not in json.dumps(model_to_dict(model), default=str)


def test_a_wrong_key_fails_the_check_with_unauthorized_and_the_key_appears_nowhere(
    red_team_task, server, checked, monkeypatch, caplog
):
    monkeypatch.setenv("REGISTRY_TEST_KEY", KEY)
    model = checked(
        register_chat_endpoint_model,
        task=red_team_task,
        name="bad-key",
        base_url=server.base_url,
        chat_model_name="fault-401",
        api_key_env="REGISTRY_TEST_KEY",
    )
    assert model.status == "failed"
    assert model.error_message == (
        "probe message failed: the chat server answered 401 unauthorized: check the API key the operator named"
    )
    assert KEY not in json.dumps(model_to_dict(model), default=str) and KEY not in caplog.text


def test_a_key_variable_that_is_not_set_fails_the_check_before_any_call(
    red_team_task, server, checked, monkeypatch
):
    monkeypatch.delenv("REGISTRY_TEST_UNSET", raising=False)
    model = checked(
        register_chat_endpoint_model,
        task=red_team_task,
        name="no-key",
        base_url=server.base_url,
        chat_model_name="smollm2",
        api_key_env="REGISTRY_TEST_UNSET",
    )
    assert model.status == "failed"
    assert (
        model.error_message
        == "probe message failed: the API key variable REGISTRY_TEST_UNSET is not set on the server"
    )
    assert server.requests == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"base_url": "ftp://host/v1"}, r"is not an http\(s\) URL"),
        ({"chat_model_name": " "}, "give the model name the chat server expects"),
        ({"api_key_env": "A", "api_key_file": "/k"}, "not both"),
        ({"api_key_env": "MY KEY=1"}, "must be a name such as OPENAI_API_KEY"),
        ({"settings": {"temperature": 3}}, "generation settings: temperature must be between 0 and 2"),
        ({"settings": {"top_k": 5}}, "unknown generation settings: top_k"),
        ({"settings": {"timeout": 0}}, "timeout must be above 0 and at most 600 s"),
        ({"settings": {"price_input_per_million": -1}}, "prices cannot be negative"),
    ],
)
def test_bad_registrations_are_refused_and_store_nothing(red_team_task, server, kwargs, message):
    given = {
        "task": red_team_task,
        "name": "m",
        "base_url": server.base_url,
        "chat_model_name": "smollm2",
        **kwargs,
    }
    with pytest.raises(ModelRegistryError, match=message):
        register_chat_endpoint_model(**given)
    assert not RegisteredModel.objects.exists()


def test_loopback_is_refused_at_registration_unless_allowed(red_team_task, server, settings):
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = []
    with pytest.raises(ModelRegistryError, match="loopback address"):
        register_chat_endpoint_model(
            task=red_team_task, name="m", base_url=server.base_url, chat_model_name="x"
        )


def test_only_red_teaming_tasks_take_generative_models(hate_task, smollm2_dir):
    with pytest.raises(ModelRegistryError, match="is not a red-teaming task"):
        register_local_chat_model(task=hate_task, name="m", path=str(smollm2_dir))


def test_a_local_path_must_be_a_folder_or_a_gguf_file(red_team_task, tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"x")
    for path in (str(tmp_path / "missing"), str(tmp_path / "weights.bin")):
        with pytest.raises(ModelRegistryError, match="a save_pretrained folder or a .gguf file"):
            register_local_chat_model(task=red_team_task, name="m", path=path)


def test_settings_are_stored_normalised():
    assert clean_generation_settings(
        {"temperature": 0.7, "stop": ["###"], "price_output_per_million": "2.5"}
    ) == {
        "temperature": 0.7,
        "top_p": 1.0,
        "max_new_tokens": 256,
        "stop": ["###"],
        "seed": None,
        "system_prompt": "",
        "timeout": 60.0,
        "price_input_per_million": None,
        "price_output_per_million": 2.5,
    }
