"""The demo's fifth task, red-teaming SmolLM2 on SQuAD passages: laid out by ``setup_demo`` with the real
GGUF checked and (here, as converted once per test session) made the open round's target; a second run
adds nothing."""

from __future__ import annotations

import gzip
import json

import pytest

from demo import setup as demo
from engine.runtime.generative import smollm2_gguf
from models_registry import generative
from models_registry.models import RegisteredModel, RoundTarget
from tasks.models import Context, Task
from tests.helpers.data import data_path


@pytest.fixture
def converted_once(monkeypatch, smollm2_dir):
    """The check's GGUF conversion answered by the session's converted folder (the same conversion,
    already done once: tests/conftest.py ``smollm2_dir``); the calls are recorded."""
    calls = []

    def convert(gguf, out_dir):
        calls.append(str(gguf))
        return smollm2_dir

    monkeypatch.setattr(generative, "convert_gguf", convert)
    return calls


@pytest.mark.django_db(transaction=True)
def test_the_red_teaming_task_opens_with_smollm2_and_the_test_articles_passages(
    settings, converted_once, client
):
    squad = data_path(settings, "squad", "squad_v1.1_dev_shared.json.gz")
    with gzip.open(squad, "rt", encoding="utf-8") as handle:
        articles = json.load(handle)["data"]
    from annotation.importers.squad import article_split

    expected = sum(len(a["paragraphs"]) for a in articles if article_split(a["title"]) == "test")
    from tasks.services import ensure_builtin_task

    hate = ensure_builtin_task("hate-speech")  # laid out before red-teaming in the demo
    report = demo.setup_demo(password="pw-one-1234", tasks=["red-team"], log=lambda _: None)
    # The hate-speech task gets its annotation-assistant study once SmolLM2 is ready.
    hate.refresh_from_db()
    assert [arm.get("model") for arm in hate.cfg.assistant_arms] == [None, "red-team/smollm2-135m-instruct"]
    task = Task.objects.get(slug="red-team")
    assert task.cfg.kind == "generation" and task.current_round.number == 1 and task.current_round.is_open
    assert Context.objects.filter(round=task.current_round).count() == expected > 0
    model = RegisteredModel.objects.get(task=task, name="smollm2-135m-instruct")
    assert (model.name, model.status, model.is_published) == ("smollm2-135m-instruct", "ready", True)
    assert converted_once == [str(smollm2_gguf())]
    assert model.card["converted_from"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert model.generation["temperature"] == 0.7 and model.generation["max_new_tokens"] == 160
    assert list(
        RoundTarget.objects.filter(round=task.current_round).values_list("model__name", flat=True)
    ) == ["smollm2-135m-instruct"]
    assert report.evaluation_failures == []
    # The demo annotator can open the page at once.
    client.login(username="demo-annotator", password="pw-one-1234")
    html = client.get("/tasks/red-team/red-team/").content.decode()
    assert "Send to the model" in html and 'class="context"' in html

    demo.setup_demo(tasks=["red-team"], log=lambda _: None)
    assert Context.objects.filter(task=task).count() == expected
    # The target and the second model for benchmarking (docs/benchmarking.md), once each.
    assert sorted(RegisteredModel.objects.filter(task=task).values_list("name", flat=True)) == [
        "smollm2-135m-instruct",
        "smollm2-135m-instruct-concise",
    ]
    assert converted_once == [str(smollm2_gguf())]
