"""The model page shows what produced a generative model's answers: the provenance its latest stored
answer recorded (engine/runtime/provenance.py)."""

from __future__ import annotations

import pytest

from annotation.models import Conversation, Turn
from leaderboards.selectors import latest_provenance
from tests.generative_bench.judge_world import URL, chat_model, red_team_task

pytestmark = pytest.mark.django_db

OLD = {"weights": {"model.safetensors": "a" * 64}, "tokenizer": "b" * 64, "chat_template": "c" * 64,
       "libraries": {"python": "3.11.7", "torch": "2.13.0"}}  # fmt: skip
NEW = {**OLD, "weights": {"model.safetensors": "d" * 64}}


def test_the_model_page_shows_the_latest_answers_provenance(client, annotator, owner):
    task = red_team_task()
    model = chat_model(task, "smol", URL)
    round_ = task.rounds.get()
    assert latest_provenance(model) is None  # no answer stored yet
    conversation = Conversation.objects.create(round=round_, annotator=annotator, model=model)
    Turn.objects.create(conversation=conversation, index=0, prompt="hi", answer="a", status="answered",
                        generation={"text": "a", "provenance": OLD})  # fmt: skip
    Turn.objects.create(conversation=conversation, index=1, prompt="and?", answer="b", status="answered",
                        generation={"text": "b", "provenance": NEW})  # fmt: skip
    assert latest_provenance(model) == NEW
    html = client.get(f"/models/{model.pk}/").content.decode()
    assert "What produced its answers" in html
    assert "d" * 64 in html and "a" * 64 not in html
    assert "torch 2.13.0" in html
