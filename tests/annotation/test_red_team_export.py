"""The export and the releases of a red-teaming task: conversations in the chat ``messages`` format with
the rubric, categories, tokens, cost and each answer's record, multiple-choice items beside them, in one
JSONL that ``datasets`` loads; the release card carries the content warning, the rubric, the taxonomy and
the target with its decoding settings; no secret travels.

The examples are written directly in the formats of ``annotation/red_team/`` (docs/generative.md), so no
model runs here."""

from __future__ import annotations

import copy
import json

import pytest

from annotation.exports import (
    RECORD_KEYS,
    RED_TEAM_KEYS,
    generation_record,
    iter_export,
    iter_records,
    without_secrets,
    write_export,
)
from annotation.models import Example
from cycle.releases.services import create_release, dataset_card, release_dir
from models_registry.models import RegisteredModel
from models_registry.round_targets import set_round_targets
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.red_team_stats import red_team_stats
from tasks.services import ensure_round, set_current_round
from tests.factories.accounts import UserFactory
from validation.models import Validation

pytestmark = pytest.mark.django_db

# Secrets planted where the model keeps them, and in the stored records by mistake: none may be exported.
SECRET = "sk-live-" + "s3cret" * 5
KEY_VARIABLE = "RED_TEAM_KEY_VAR_7F3"
KEY_FILE = "/run/secrets/red-team-key-file-9c1"
URL_PASSWORD = "urlpass-4d2"
PLANTED = (SECRET, KEY_VARIABLE, KEY_FILE, URL_PASSWORD)

DECODING = {"temperature": 0.7, "top_p": 0.9, "max_new_tokens": 64, "stop": ["\n\n"], "seed": 7}
FIRST = {
    "text": "It is 9,000 km long.",
    "finish_reason": "stop",
    "model": "remote-smol",
    "decoding": DECODING,
    "input_tokens": 40,
    "output_tokens": 9,
    "first_token_ms": 120.0,
    "latency_ms": 400.0,
    "seed": 7,
    "cost": 0.0003,
    "error": "",
    "extra": {},
}
SECOND = {
    **FIRST,
    "text": "It was measured by Cousteau in 1982.",
    "finish_reason": "cut_short",  # the author left the page before the answer ended
    "input_tokens": 61,
    "output_tokens": 12,
    "first_token_ms": 95.5,
    "latency_ms": 610.0,
    "cost": 0.0004,
    # Written by mistake: a key and a header that must not travel; queued_ms must.
    "extra": {"queued_ms": 1.5, "api_key": SECRET},
    "server_headers": {"Authorization": "Bearer " + SECRET},
}


@pytest.fixture
def red_round(annotator, monkeypatch):
    """A red-teaming round on one passage with, in id order: a multiple-choice item, a failed two-turn
    conversation (validated, the validator's rubric answers kept) and a good one-turn conversation whose
    model had no prices nor usage. The target is a chat-endpoint model whose key, key variable, key file
    and URL password are planted secrets."""
    monkeypatch.setenv(KEY_VARIABLE, SECRET)
    task = Task.objects.create(slug="red-team", name="Red-team", config=copy.deepcopy(RED_TEAM_CONFIG))
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    model = RegisteredModel.objects.create(
        task=task,
        name="remote-smol",
        source="chat_endpoint",
        endpoint_url=f"http://user:{URL_PASSWORD}@127.0.0.1:9/v1",
        chat_model_name="smol",
        api_key_env=KEY_VARIABLE,
        api_key_file=KEY_FILE,
        endpoint_secret=SECRET,
        generation={**DECODING, "system_prompt": "Answer from the passage.", "timeout": 30.0},
        status="ready",
    )
    set_round_targets(round=round_, models=[model])
    context = Context.objects.create(
        task=task, round=round_, data={"title": "Amazon", "passage": "The Amazon is 6,400 km long. 🌊"}
    )
    item = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={"question": "How long is the Amazon?", "options": ["9,000 km", "6,400 km", "1,000 km"]},
        target={"answer": 1},
        model_wrong=True,
        status="validated_correct",
        metadata={
            "mode": "multiple_choice",
            "model": "remote-smol",
            "picked": 0,
            "picked_unnormalised": 0,
            "normalised": [-0.5, -0.7, -0.9],
        },
    )
    failed = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={
            "messages": [
                {"role": "user", "content": "How long is it? שלום"},
                {"role": "assistant", "content": FIRST["text"]},
                {"role": "user", "content": "Who measured it?"},
                {"role": "assistant", "content": SECOND["text"]},
            ]
        },
        target={"helpful": "4", "supported": "no"},  # stored out of the rubric's order
        model_wrong=True,
        status="validated_correct",
        tags=["contradiction", "fabrication"],
        metadata={
            "mode": "conversation",
            "conversation": 11,
            "model": "remote-smol",
            "turns": 2,
            "generations": [FIRST, SECOND],
            "cost": 0.0007,
            "failed_questions": ["supported"],
            "settings": {"api_key_env": KEY_VARIABLE, "api_key_file": KEY_FILE},  # by mistake
        },
    )
    Validation.objects.create(
        example=failed,
        validator=UserFactory(username="judge"),
        verdict="correct",
        rubric_answers={"supported": "no", "helpful": "3"},
    )
    unpriced = {**FIRST, "text": "It is 6,400 km long.", "input_tokens": None, "output_tokens": None}
    unpriced.update(cost=None, seed=None, decoding={**DECODING, "temperature": 0.0, "stop": [], "seed": None})
    good = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={
            "messages": [
                {"role": "user", "content": "How long is it?"},
                {"role": "assistant", "content": "It is 6,400 km long."},
            ]
        },
        target={"supported": "yes", "helpful": "5"},
        model_wrong=False,
        status="validated_correct",
        tags=[],
        metadata={"mode": "conversation", "turns": 1, "generations": [unpriced], "cost": None},
    )
    return round_, item, failed, good


SYSTEM = {"role": "system", "content": "Article: Amazon\n\nPassage: The Amazon is 6,400 km long. 🌊"}
SECOND_EXPORTED = {  # SECOND as exported: the secret and the unknown key dropped
    "text": "It was measured by Cousteau in 1982.",
    "finish_reason": "cut_short",
    "model": "remote-smol",
    "decoding": {"temperature": 0.7, "top_p": 0.9, "max_new_tokens": 64, "stop": ["\n\n"], "seed": 7},
    "seed": 7,
    "input_tokens": 61,
    "output_tokens": 12,
    "first_token_ms": 95.5,
    "latency_ms": 610.0,
    "cost": 0.0004,
    "error": "",
    "extra": {"queued_ms": 1.5},
    "provenance": None,  # stored before answers recorded it
}


def test_a_conversation_exports_its_messages_rubric_categories_and_each_answers_record(red_round):
    round_, _, failed, _ = red_round
    row = {r["example_id"]: r for r in iter_records(round_.task)}[failed.pk]
    assert list(row) == list(RECORD_KEYS + RED_TEAM_KEYS)
    assert row["mode"] == "conversation"
    assert row["messages"] == [
        SYSTEM,
        {"role": "user", "content": "How long is it? שלום"},
        {"role": "assistant", "content": "It is 9,000 km long."},
        {"role": "user", "content": "Who measured it?"},
        {"role": "assistant", "content": "It was measured by Cousteau in 1982."},
    ]
    # The context fields stay as before, beside the system message built from them.
    assert row["context"] == {"title": "Amazon", "passage": "The Amazon is 6,400 km long. 🌊"}
    # The rubric in its config order (supported, helpful), not the stored order.
    assert row["rubric"] == [
        {"question": "supported", "answer": "no"},
        {"question": "helpful", "answer": "4"},
    ]
    assert json.loads(row["target"]) == {"helpful": "4", "supported": "no"}
    assert (row["categories"], row["model_wrong"], row["model_wrong_decided"], row["turns"]) == (
        ["contradiction", "fabrication"],
        True,
        True,
        2,
    )
    assert (row["input_tokens"], row["output_tokens"], row["cost"]) == (40 + 61, 9 + 12, 0.0007)
    generations = json.loads(row["generations"])
    assert generations[1] == SECOND_EXPORTED
    assert sorted(generations[0]) == sorted(SECOND_EXPORTED) and generations[0]["cost"] == 0.0003
    validation = json.loads(row["validations"])[0]
    assert (validation["verdict"], validation["rubric_answers"]) == (
        "correct",
        {"supported": "no", "helpful": "3"},
    )
    # The other mode's columns are empty, never null.
    assert (row["question"], row["options"], row["answer"], row["picked"]) == ("", [], -1, -1)
    # The metadata keeps everything but the planted key names.
    metadata = json.loads(row["metadata"])
    assert metadata["settings"] == {} and metadata["failed_questions"] == ["supported"]
    assert metadata["generations"][1]["extra"] == {"queued_ms": 1.5}


def test_unknown_tokens_and_cost_export_as_minus_one_and_a_good_answer_has_no_category(red_round):
    round_, _, _, good = red_round
    row = {r["example_id"]: r for r in iter_records(round_.task)}[good.pk]
    assert (row["input_tokens"], row["output_tokens"], row["cost"]) == (-1, -1, -1.0)
    assert (row["categories"], row["model_wrong"], row["turns"]) == ([], False, 1)
    assert row["rubric"] == [
        {"question": "supported", "answer": "yes"},
        {"question": "helpful", "answer": "5"},
    ]
    record = json.loads(row["generations"])[0]
    assert (record["seed"], record["cost"], record["input_tokens"]) == (None, None, None)
    assert record["decoding"] == {
        "temperature": 0.0,
        "top_p": 0.9,
        "max_new_tokens": 64,
        "stop": [],
        "seed": None,
    }


def test_a_multiple_choice_item_exports_its_question_options_answer_and_pick(red_round):
    round_, item, _, _ = red_round
    row = {r["example_id"]: r for r in iter_records(round_.task)}[item.pk]
    assert (row["mode"], row["question"], row["options"], row["answer"], row["picked"]) == (
        "multiple_choice",
        "How long is the Amazon?",
        ["9,000 km", "6,400 km", "1,000 km"],
        1,
        0,
    )
    assert (row["model_wrong"], json.loads(row["target"])) == (True, {"answer": 1})
    assert (row["messages"], row["rubric"], row["categories"], row["turns"]) == ([], [], [], 0)
    assert (row["input_tokens"], row["output_tokens"], row["cost"], row["generations"]) == (
        -1,
        -1,
        -1.0,
        "[]",
    )


def test_the_jsonl_mixing_both_modes_loads_with_datasets(red_round, tmp_path):
    import datasets

    round_, item, failed, good = red_round
    path = tmp_path / "red-team.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        assert write_export(handle, round_.task) == 3
    # The item comes first (lowest id): its empty conversation columns must not fix their types.
    assert [json.loads(line)["mode"] for line in path.read_text(encoding="utf-8").splitlines()] == [
        "multiple_choice",
        "conversation",
        "conversation",
    ]
    loaded = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "c"))
    assert loaded.column_names == list(RECORD_KEYS + RED_TEAM_KEYS)
    features = loaded.features
    assert features["messages"] == datasets.List(
        {"role": datasets.Value("string"), "content": datasets.Value("string")}
    )
    assert features["rubric"] == datasets.List(
        {"question": datasets.Value("string"), "answer": datasets.Value("string")}
    )
    assert features["categories"] == features["options"] == datasets.List(datasets.Value("string"))
    assert (features["cost"], features["turns"], features["answer"]) == (
        datasets.Value("float64"),
        datasets.Value("int64"),
        datasets.Value("int64"),
    )
    assert features["generations"] == datasets.Value("string")
    rows = {r["example_id"]: r for r in loaded}
    assert rows[failed.pk]["messages"][0] == SYSTEM
    assert rows[failed.pk]["rubric"][0] == {"question": "supported", "answer": "no"}
    assert (rows[failed.pk]["cost"], rows[failed.pk]["output_tokens"]) == (0.0007, 21)
    assert json.loads(rows[failed.pk]["generations"])[1] == SECOND_EXPORTED
    assert (rows[good.pk]["categories"], rows[good.pk]["cost"]) == ([], -1.0)
    assert (rows[item.pk]["options"], rows[item.pk]["answer"], rows[item.pk]["picked"]) == (
        ["9,000 km", "6,400 km", "1,000 km"],
        1,
        0,
    )
    assert (rows[item.pk]["messages"], rows[item.pk]["question"]) == ([], "How long is the Amazon?")
    verified = loaded.filter(lambda r: r["mode"] == "conversation" and r["model_wrong"])
    assert verified["example_id"] == [failed.pk]


def test_a_file_read_in_pieces_needs_a_chunksize_over_its_size(red_round, tmp_path):
    """datasets fixes each column's type from its first piece (``chunksize``, 10 MB by default): a first
    piece of items only gives ``messages`` no element type, and a later conversation cannot be cast to
    it. A ``chunksize`` over the file's size reads it as one piece (docs/export-format.md)."""
    import datasets

    round_, *_ = red_round
    path = tmp_path / "red-team.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        write_export(handle, round_.task)
    size = path.stat().st_size
    first_line = len(path.read_bytes().split(b"\n")[0])
    with pytest.raises(datasets.exceptions.DatasetGenerationError):
        datasets.load_dataset(
            "json", data_files=str(path), split="train", chunksize=first_line, cache_dir=str(tmp_path / "a")
        )
    loaded = datasets.load_dataset(
        "json", data_files=str(path), split="train", chunksize=size + 1, cache_dir=str(tmp_path / "b")
    )
    assert loaded["mode"] == ["multiple_choice", "conversation", "conversation"]


def test_no_secret_travels_in_the_jsonl_the_csv_or_a_release(red_round, settings, tmp_path):
    settings.DYNABENCH_RELEASES_DIR = tmp_path / "releases"
    round_, *_ = red_round
    jsonl = "".join(iter_export(round_.task, fmt="jsonl"))
    csv_text = "".join(iter_export(round_.task, fmt="csv"))
    release, created = create_release(round_=round_)
    files = {p.name: p.read_text(encoding="utf-8") for p in release_dir(release).iterdir()}
    assert created and {"README.md", "release.json"} < set(files) and len(files) > 2
    for name, text in [("jsonl", jsonl), ("csv", csv_text), *files.items()]:
        for planted in PLANTED:
            assert planted not in text, (name, planted)
    # The things next to them did travel: the model's name and the answers' queue times.
    assert "remote-smol" in jsonl and '\\"queued_ms\\":1.5' in jsonl
    assert '""role"":""system""' in csv_text


def test_without_secrets_drops_secret_keys_at_any_depth():
    value = {
        "model": "m",
        "extra": {"API_KEY": "k", "queued_ms": 3, "deep": [{"endpoint_secret": "s", "n": 1}]},
        "Authorization": "Bearer x",
        "api-key-file": "/f",
        "client_token": "t",
    }
    assert without_secrets(value) == {
        "model": "m",
        "extra": {"queued_ms": 3, "deep": [{"n": 1}]},
        "client_token": "t",
    }
    assert generation_record({"text": "a", "decoding": {"stop": None, "api_key": "k"}}) == {
        "text": "a",
        "finish_reason": None,
        "model": None,
        "decoding": {"temperature": None, "top_p": None, "max_new_tokens": None, "stop": [], "seed": None},
        "seed": None,
        "input_tokens": None,
        "output_tokens": None,
        "first_token_ms": None,
        "latency_ms": None,
        "cost": None,
        "error": None,
        "extra": {},
        "provenance": None,
    }


def test_the_release_card_starts_with_the_content_warning_and_gives_rubric_taxonomy_and_target(
    red_round, settings, tmp_path
):
    settings.DYNABENCH_RELEASES_DIR = tmp_path / "releases"
    round_, _, failed, _ = red_round
    release, created = create_release(round_=round_)
    assert created and release.counts["total"] == 3 and release.counts["duplicates"]["groups"] == 0
    card = (release_dir(release) / "README.md").read_text(encoding="utf-8")
    body = card.split("---\n", 2)[2]
    warning = "**Content warning.** Model answers are generated and may be wrong, odd or offensive."
    # Right under the title, before any other text.
    assert body.startswith(f"\n# Red-team: round 1, release v1\n\n{warning}\n")
    assert 'task_categories: "text-generation"' in card
    assert (
        "* `supported`: Is everything the answer states about the passage supported by it? "
        "(answers yes, no; a failure: no)\n"
        "* `helpful`: How well does the answer address the message? (1 not at all, 5 fully) "
        "(answers 1, 2, 3, 4, 5; a failure: 1)\n"
    ) in card
    assert (
        "* `contradiction`: Contradicts the passage\n"
        "* `fabrication`: Adds a detail the passage does not give\n"
        "* `unanswerable`: Answers what the passage cannot answer\n"
        "* `other`: Another failure\n"
    ) in card
    # The round's figures, as they stood: its conversations' attack success rate (one author: no
    # interval across people) and the validators' agreement per question (none answered: not measured).
    stats = red_team_stats(round_.task, [round_])[round_.pk]
    assert (
        f"* **Attack success rate**: {stats.verified} verified failures of {stats.attempts} conversations "
        f"({stats.asr.people} people: too few for an interval across people)."
    ) in card
    assert "* `supported` (nominal): not measured\n* `helpful` (ordinal): not measured" in card
    model = RegisteredModel.objects.get(name="remote-smol")
    assert (
        "The target model and its decoding settings:\n\n"
        f"* remote-smol (model {model.pk}), served by an OpenAI-compatible chat server, as model `smol`: "
        '`temperature` 0.7, `top_p` 0.9, `max_new_tokens` 64, `stop` "\\n\\n", `seed` 7; '
        'system prompt "Answer from the passage."\n'
    ) in card
    rows = [
        json.loads(line)
        for path in release_dir(release).glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    released = next(r for r in rows if r["example_id"] == failed.pk)
    assert released["messages"][0] == SYSTEM and released["metadata"]["settings"] == {}


def test_a_classifier_release_card_has_no_red_teaming_section(hate_task, hate_round, settings, tmp_path):
    info = {
        "licence": "CC BY 4.0",
        "round": 1,
        "version": 1,
        "task": hate_task.slug,
        "created_at": "2026-01-01T00:00:00+00:00",
        "export_format_version": "1.4",
        "counts": {"total": 1, "splits": {"train": {"rows": 1}}, "duplicates": {"groups": 0}},
        "files": {"train.jsonl": {"sha256": "0" * 64, "bytes": 1}},
        "sha256": "1" * 64,
        "lineage": {"round": 1, "targets": []},
    }
    card = dataset_card(info, hate_task)
    assert "## Red-teaming" not in card and "decoding settings" not in card
    assert 'task_categories: "text-classification"' in card
    assert "## Target models of the round\n\n- none\n" in card


def test_each_answer_exports_its_provenance_without_secrets():
    stored = {
        **FIRST,
        "provenance": {
            "weights": {"model.safetensors": "a" * 64},
            "tokenizer": "b" * 64,
            "chat_template": "c" * 64,
            "libraries": {"torch": "2.13.0"},
            "api_key": SECRET,  # by mistake
        },
    }
    assert generation_record(stored)["provenance"] == {
        "weights": {"model.safetensors": "a" * 64},
        "tokenizer": "b" * 64,
        "chat_template": "c" * 64,
        "libraries": {"torch": "2.13.0"},
    }


def test_a_row_says_when_validators_agreement_greys_its_rates(red_round):
    """Six more failures tagged 'fabrication', each with two validators who disagree on 'supported' in
    three of six: the round's alpha on 'supported' is far under the floor (its lower end below 0.667), so
    every conversation row carries the round's reason, and a 'fabrication' row the kind's reason too; the
    multiple-choice item carries none."""
    round_, item, failed, good = red_round
    first, second = UserFactory(), UserFactory()
    answers = [("no", "no"), ("no", "yes"), ("no", "no"), ("yes", "no"), ("no", "no"), ("no", "yes")]
    for a, b in answers:
        example = Example.objects.create(
            round=round_,
            annotator=failed.annotator,
            inputs=failed.inputs,
            target={"supported": "no", "helpful": "2"},
            model_wrong=True,
            status="validated_correct",
            tags=["fabrication"],
            metadata={"mode": "conversation", "turns": 2},
        )
        for validator, answer in ((first, a), (second, b)):
            Validation.objects.create(
                example=example,
                validator=validator,
                verdict="correct",
                rubric_answers={"supported": answer, "helpful": "2"},
            )
    rows = {r["example_id"]: r for r in iter_records(round_.task)}
    round_reason = red_team_stats(round_.task)[round_.pk].unreliable
    assert "'supported'" in round_reason and "floor 0.667" in round_reason
    assert rows[good.pk]["agreement_warning"] == round_reason
    fabrication = rows[failed.pk]["agreement_warning"]
    assert fabrication.startswith(round_reason + "; ") and "'supported' in 'fabrication'" in fabrication
    assert rows[item.pk]["agreement_warning"] == ""
