"""Registering generative models in the admin: a chat server by URL, checked at once (a 401 is told on the
page, the key appears nowhere), with its generation settings; and a remote model answers the red-teaming
page as a local one does."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from annotation.models import Turn
from models_registry.models import RegisteredModel, RoundTarget
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.services import ensure_round, set_current_round

URL = reverse("admin:models_registry_registeredmodel_register")
KEY = "sk-test-" + "k3y" * 8


@pytest.fixture
def red_task(db, owner):
    task = Task.objects.create(slug="red-team", name="Red-team", config=RED_TEAM_CONFIG)
    task.owners.add(owner)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    Context.objects.create(task=task, round=round_, data={"passage": "Paris is the capital of France."})
    return task


def _register(client, task, server, model_name, **extra):
    return client.post(
        URL,
        {
            "source": "chat_endpoint",
            "name": "remote-smol",
            "task": task.pk,
            "chat_base_url": server.base_url,
            "chat_model_name": model_name,
            "api_key_env": "RED_TEAM_TEST_KEY",
            "max_new_tokens": "12",
            "temperature": "0",
            "stop": "###\r\nEND",
            "price_input_per_million": "0.5",
            "price_output_per_million": "2",
            **extra,
        },
        follow=True,
    )


def test_a_chat_server_registered_by_url_is_checked_at_once_and_keeps_its_settings(
    client, owner, red_task, server, monkeypatch
):
    monkeypatch.setenv("RED_TEAM_TEST_KEY", KEY)
    client.force_login(owner)
    response = _register(client, red_task, server, "smollm2")
    model = RegisteredModel.objects.get(task=red_task)
    assert (model.source, model.status, model.endpoint_url) == ("chat_endpoint", "ready", server.base_url)
    assert (model.chat_model_name, model.api_key_env) == ("smollm2", "RED_TEAM_TEST_KEY")
    assert model.generation["max_new_tokens"] == 12 and model.generation["stop"] == ["###", "END"]
    assert model.generation["price_output_per_million"] == 2.0
    assert "Remote-smol is registered and ready." in response.content.decode()
    assert server.headers[-1] == f"Bearer {KEY}"


def test_a_401_is_told_on_the_registration_page_and_the_key_appears_nowhere(
    client, owner, red_task, server, monkeypatch, caplog
):
    monkeypatch.setenv("RED_TEAM_TEST_KEY", KEY)
    client.force_login(owner)
    html = _register(client, red_task, server, "fault-401").content.decode()
    model = RegisteredModel.objects.get(task=red_task)
    assert model.status == "failed" and "401 unauthorized" in model.error_message
    assert "401 unauthorized" in html
    stored = " ".join(str(v) for v in RegisteredModel.objects.values().get().values())
    assert KEY not in html and KEY not in stored and KEY not in caplog.text


def test_a_classifier_task_refuses_a_chat_model(client, owner, hate_task, server):
    hate_task.owners.add(owner)
    client.force_login(owner)
    html = _register(client, hate_task, server, "smollm2").content.decode()
    assert "task hate-speech is not a red-teaming task; its models are classifiers" in html
    assert not RegisteredModel.objects.filter(task=hate_task).exists()


def test_a_remote_target_answers_through_the_red_teaming_page(
    client, annotator, red_task, server, monkeypatch
):
    monkeypatch.setenv("RED_TEAM_TEST_KEY", KEY)
    model = RegisteredModel.objects.create(
        task=red_task,
        name="remote-smol",
        source="chat_endpoint",
        endpoint_url=server.base_url,
        chat_model_name="smollm2",
        api_key_env="RED_TEAM_TEST_KEY",
        status="ready",
        generation={
            "max_new_tokens": 12,
            "temperature": 0.0,
            "price_input_per_million": 1.0,
            "price_output_per_million": 1.0,
        },
    )
    RoundTarget.objects.create(round=red_task.current_round, model=model)
    client.force_login(annotator)
    page = client.get("/tasks/red-team/red-team/").content.decode()
    context = re.search(r'name="context" value="(\d+)"', page).group(1)
    response = client.post(
        "/tasks/red-team/red-team/send/",
        {"prompt": "What is the capital of France?", "context": context, "client_token": str(uuid.uuid4())},
        HTTP_ACCEPT="text/event-stream",
    )
    body = b"".join(response.streaming_content).decode()
    turn = Turn.objects.get()
    assert turn.status == "answered" and turn.answer and '"event' not in turn.answer
    assert "event: done" in body
    generation = turn.generation
    assert generation["model"] == "remote-smol"
    # The server's usage priced at 1 per million tokens each way.
    assert generation["cost"] == pytest.approx(
        (generation["input_tokens"] + generation["output_tokens"]) / 1e6
    )
    # The passage reached the server as the system message.
    assert server.requests[-1]["messages"][0] == {
        "role": "system",
        "content": "Passage: Paris is the capital of France.",
    }


def test_a_remote_target_answers_a_multiple_choice_item_by_letter(
    client, annotator, red_task, server, monkeypatch
):
    from annotation.models import Example

    monkeypatch.setenv("RED_TEAM_TEST_KEY", KEY)
    model = RegisteredModel.objects.create(
        task=red_task,
        name="remote-smol",
        source="chat_endpoint",
        endpoint_url=server.base_url,
        chat_model_name="smollm2",
        api_key_env="RED_TEAM_TEST_KEY",
        status="ready",
    )
    RoundTarget.objects.create(round=red_task.current_round, model=model)
    client.force_login(annotator)
    context = red_task.contexts.get()
    client.post(
        "/tasks/red-team/red-team/choice/",
        {
            "client_token": str(uuid.uuid4()),
            "context": context.pk,
            "question": "What is the capital of France?",
            "answer": "Paris",
            "negative": ["Lyon", "Nice"],
        },
    )
    item = Example.objects.get()
    asked = server.requests[-1]
    assert asked["logprobs"] is True and "A. " in asked["messages"][-1]["content"]
    assert item.metadata["picked"] in (0, 1, 2)
    assert item.model_wrong is (item.metadata["picked"] != item.target["answer"])
