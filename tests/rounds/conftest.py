"""Fixtures for the round lifecycle and context tests: a task with a "prompt" context field, stand-in models."""

from __future__ import annotations

import copy

import pytest

from models_registry.models import RegisteredModel
from tasks.config import HATE_SPEECH_CONFIG
from tasks.models import Task
from tasks.services import ensure_round, set_current_round
from tests.annotation.fakes import crashing_model, rule_model  # noqa: F401 - fixtures

PROMPT_CONFIG = {
    **copy.deepcopy(HATE_SPEECH_CONFIG),
    "context_fields": [{"name": "prompt", "type": "string", "label": "Prompt"}],
}


def stand_in(task, name: str, status=RegisteredModel.Status.READY) -> RegisteredModel:
    """A registered model with no weights (tests monkeypatch ``inference.predict`` where it runs)."""
    return RegisteredModel.objects.create(task=task, name=name, path=f"/nonexistent/{name}", status=status)


@pytest.fixture
def prompt_task(db):
    """A two-label task whose annotators write against a "prompt" context; round 1 current."""
    task = Task.objects.create(slug="prompted", name="Prompted", config=copy.deepcopy(PROMPT_CONFIG))
    set_current_round(task=task, round_=ensure_round(task=task, number=1))
    return task


@pytest.fixture
def owner_client(client, owner, password, prompt_task):
    """The owner fixture (owner of hate-speech) logged in, and made owner of the prompt task too."""
    prompt_task.owners.add(owner)
    client.login(username=owner.username, password=password)
    return client
