"""The export and the releases of a red-teaming task: conversations in the chat ``messages`` format with
the rubric, categories, tokens, cost and decoding settings, multiple-choice items beside them, in one JSONL
that ``datasets`` loads; the release card carries the content warning; no secret travels."""

from __future__ import annotations

import copy
import json

import pytest

from annotation.exports import RECORD_KEYS, RED_TEAM_KEYS, iter_export, iter_records, write_export
from annotation.models import Example
from leaderboards.releases import create_release, release_dir
from models_registry.models import RegisteredModel
from tasks.config import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.services import ensure_round, set_current_round
from tests.factories.accounts import UserFactory
from validation.models import Validation

pytestmark = pytest.mark.django_db

SECRET = "sk-live-" + "s3cret" * 5
GENERATION = {
    "text": "It is 9,000 km long.",
    "finish_reason": "stop",
    "model": "remote-smol",
    "decoding": {"temperature": 0.7, "top_p": 0.9, "max_new_tokens": 64, "stop": [], "seed": 7},
    "input_tokens": 40,
    "output_tokens": 9,
    "first_token_ms": 120.0,
    "latency_ms": 400.0,
    "seed": 7,
    "cost": 0.0003,
    "error": "",
    "extra": {},
}


@pytest.fixture
def red_round(annotator, monkeypatch):
    monkeypatch.setenv("RED_TEAM_KEY", SECRET)
    task = Task.objects.create(slug="red-team", name="Red-team", config=copy.deepcopy(RED_TEAM_CONFIG))
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    RegisteredModel.objects.create(
        task=task,
        name="remote-smol",
        source="chat_endpoint",
        endpoint_url="http://127.0.0.1:9/v1",
        chat_model_name="smol",
        api_key_env="RED_TEAM_KEY",
        endpoint_secret=SECRET,
        status="ready",
    )
    context = Context.objects.create(
        task=task, round=round_, data={"title": "Amazon", "passage": "The Amazon is 6,400 km long. 🌊"}
    )
    conversation = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={
            "messages": [
                {"role": "user", "content": "How long is it? שלום"},
                {"role": "assistant", "content": "It is 9,000 km long."},
            ]
        },
        target={"supported": "no", "helpful": "4"},
        model_wrong=True,
        status="validated_correct",
        tags=["contradiction"],
        metadata={"mode": "conversation", "turns": 1, "generations": [GENERATION], "cost": 0.0003},
    )
    Validation.objects.create(
        example=conversation,
        validator=UserFactory(username="judge"),
        verdict="correct",
        rubric_answers={"supported": "no", "helpful": "3"},
    )
    item = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={"question": "How long is the Amazon?", "options": ["9,000 km", "6,400 km", "1,000 km"]},
        target={"answer": 1},
        model_wrong=True,
        status="validated_correct",
        metadata={"mode": "multiple_choice", "picked": 0, "normalised": [-0.5, -0.7, -0.9]},
    )
    return round_, conversation, item


def test_a_conversation_and_an_item_export_with_their_own_columns(red_round):
    round_, conversation, item = red_round
    records = {r["example_id"]: r for r in iter_records(round_.task)}
    talk, mc = records[conversation.pk], records[item.pk]
    assert list(talk) == list(RECORD_KEYS + RED_TEAM_KEYS) == list(mc)
    assert talk["mode"] == "conversation" and talk["messages"] == [
        {"role": "system", "content": "Article: Amazon\n\nPassage: The Amazon is 6,400 km long. 🌊"},
        {"role": "user", "content": "How long is it? שלום"},
        {"role": "assistant", "content": "It is 9,000 km long."},
    ]
    assert talk["rubric"] == [
        {"question": "supported", "answer": "no"},
        {"question": "helpful", "answer": "4"},
    ]
    assert (talk["categories"], talk["turns"], talk["input_tokens"], talk["output_tokens"]) == (
        ["contradiction"],
        1,
        40,
        9,
    )
    assert talk["cost"] == 0.0003 and json.loads(talk["generations"])[0]["decoding"]["seed"] == 7
    assert json.loads(talk["validations"])[0]["rubric_answers"] == {"supported": "no", "helpful": "3"}
    assert json.loads(talk["target"]) == {"supported": "no", "helpful": "4"}
    assert (talk["question"], talk["options"], talk["answer"], talk["picked"]) == ("", [], -1, -1)
    assert (mc["mode"], mc["question"], mc["options"], mc["answer"], mc["picked"]) == (
        "multiple_choice",
        "How long is the Amazon?",
        ["9,000 km", "6,400 km", "1,000 km"],
        1,
        0,
    )
    assert (mc["messages"], mc["rubric"], mc["cost"], mc["input_tokens"]) == ([], [], -1.0, -1)


def test_the_jsonl_loads_with_datasets_and_holds_no_secret(red_round, tmp_path):
    round_, conversation, _ = red_round
    path = tmp_path / "red-team.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        assert write_export(handle, round_.task) == 2
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text and "RED_TEAM_KEY" not in text
    import datasets

    loaded = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "c"))
    assert loaded.num_rows == 2
    rows = {r["example_id"]: r for r in loaded}
    assert rows[conversation.pk]["messages"][2] == {"role": "assistant", "content": "It is 9,000 km long."}
    assert sorted(r["mode"] for r in loaded) == ["conversation", "multiple_choice"]
    csv_text = "".join(iter_export(round_.task, fmt="csv"))
    assert SECRET not in csv_text
    assert '""role"":""system""' in csv_text


def test_the_release_card_carries_the_content_warning_and_the_rubric(red_round, settings, tmp_path):
    settings.DYNABENCH_RELEASES_DIR = tmp_path / "releases"
    round_, _, _ = red_round
    release, created = create_release(round_=round_)
    assert created and release.counts["total"] == 2 and release.counts["duplicates"]["groups"] == 0
    card = (release_dir(release) / "README.md").read_text(encoding="utf-8")
    assert "**Content warning.** Model answers are generated and may be wrong, odd or offensive." in card
    assert 'task_categories: "text-generation"' in card
    assert (
        "* `supported`: Is everything the answer states about the passage supported by it? (answers yes, no; a failure: no)"
        in card
    )
    assert "* `fabrication`: Adds a detail the passage does not give" in card
    for name in release_dir(release).iterdir():
        assert SECRET not in name.read_text(encoding="utf-8")
