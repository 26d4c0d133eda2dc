"""Datasets (hidden ones for task owners only) and the streamed export (issue 5, part B)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation.models import Example
from annotation.services import create_example
from leaderboards.exports import pseudonym
from leaderboards.models import Dataset, DatasetItem
from tasks.services import ensure_round, set_current_round
from tests.helpers.api import forced_client as api
from tests.helpers.fakes import rule_predict

DATASETS = "/api/datasets/"
EXPORT = "/api/tasks/hate-speech/export/"


@pytest.fixture
def datasets(hate_task, hate_round):
    """A scoring round dataset with 2 items, a static standard set, a hidden training split."""
    scoring = Dataset.objects.create(
        task=hate_task,
        slug="r1-test",
        name="Round 1 test",
        kind=Dataset.Kind.ROUND,
        access=Dataset.Access.SCORING,
        round=hate_round,
        split="test",
        licence="CC BY 4.0",
    )
    for n in range(2):
        DatasetItem.objects.create(
            dataset=scoring, external_id=str(n), inputs={"statement": "x"}, target="hateful"
        )
    static = Dataset.objects.create(
        task=hate_task,
        slug="hatecheck",
        name="HateCheck",
        kind=Dataset.Kind.STATIC,
        access=Dataset.Access.STANDARD,
    )
    hidden = Dataset.objects.create(
        task=hate_task,
        slug="r1-train",
        name="Round 1 train",
        kind=Dataset.Kind.ROUND,
        access=Dataset.Access.HIDDEN,
        round=hate_round,
        split="train",
    )
    return {"scoring": scoring, "static": static, "hidden": hidden}


def slugs(response) -> list[str]:
    return [d["slug"] for d in response.json()["results"]]


def test_hidden_datasets_are_for_task_owners_only(datasets, owner, outsider):
    # Round datasets by round and name, then static sets.
    assert slugs(api().get(DATASETS)) == ["r1-test", "hatecheck"]
    assert slugs(api(outsider).get(DATASETS)) == ["r1-test", "hatecheck"]
    assert slugs(api(owner).get(DATASETS)) == ["r1-test", "r1-train", "hatecheck"]
    hidden = f"{DATASETS}{datasets['hidden'].pk}/"
    assert api().get(hidden).status_code == 404
    assert api(outsider).get(hidden).status_code == 404
    assert api(owner).get(hidden).json()["access"] == "hidden"


def test_a_dataset_describes_itself(datasets):
    body = api().get(f"{DATASETS}{datasets['scoring'].pk}/").json()
    assert body == {
        "id": datasets["scoring"].pk,
        "slug": "r1-test",
        "name": "Round 1 test",
        "task": "hate-speech",
        "kind": "round",
        "access": "scoring",
        "round": 1,
        "split": "test",
        "description": "",
        "licence": "CC BY 4.0",
        "source": "",
        "n_items": 2,
        "created_at": body["created_at"],
    }
    assert api().get(f"{DATASETS}{datasets['static'].pk}/").json()["round"] is None
    assert api().get(f"{DATASETS}99999999/").status_code == 404


def test_dataset_filters(datasets, owner):
    assert slugs(api().get(DATASETS, {"access": "scoring"})) == ["r1-test"]
    assert slugs(api().get(DATASETS, {"kind": "static"})) == ["hatecheck"]
    assert slugs(api(owner).get(DATASETS, {"round": 1})) == ["r1-test", "r1-train"]
    assert slugs(api().get(DATASETS, {"task": "other"})) == []
    assert api().get(DATASETS, {"round": "1.5"}).status_code == 400
    assert api().get(DATASETS, {"round": "99999999999999"}).status_code == 400
    assert api().get(DATASETS, {"access": "secret"}).status_code == 400
    assert api().get(DATASETS, {"round": "١"}).json() == {
        "round": ["A whole number from 1 to 2147483647, written with the digits 0-9."]
    }
    assert api().get(DATASETS, {"tsak": "hate-speech"}).json() == {
        "tsak": ["Unknown parameter; this list takes: task, access, kind, round, page, page_size, format."]
    }


# --- export --------------------------------------------------------------------------------------------


@pytest.fixture
def examples(hate_task, hate_round, annotator, monkeypatch):
    """Round 1: an emoji + CRLF example; round 2 (current): one RTL example; same annotator."""
    from models_registry import inference
    from tests.factories.models_registry import make_stand_in

    monkeypatch.setattr(inference, "predict", rule_predict)
    make_stand_in(hate_task, hate_round)
    first, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "I hate 🐀\r\nyes"}, target="hateful"
    )
    round2 = ensure_round(task=hate_task, number=2)
    set_current_round(task=hate_task, round_=round2)
    make_stand_in(hate_task, round2, name="stand-in-2")
    second, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "שלום \u200fمرحبا"}, target="not-hateful"
    )
    return {"first": first, "second": second, "round1": hate_round, "round2": round2}


def _body(response) -> str:
    assert response.streaming
    return b"".join(response.streaming_content).decode("utf-8")


def test_owners_get_a_streamed_jsonl_export_with_pseudonyms(examples, owner, annotator):
    response = api(owner).get(EXPORT)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="hate-speech.jsonl"'
    records = [json.loads(line) for line in _body(response).splitlines()]
    assert [r["example_id"] for r in records] == [examples["first"].pk, examples["second"].pk]
    assert records[0]["inputs"] == {"statement": "I hate 🐀\nyes"}
    assert records[1]["inputs"] == {"statement": "שלום \u200fمرحبا"}
    # Pseudonyms: HMAC over (round id, user id); the same annotator differs between rounds.
    assert records[0]["annotator"] == pseudonym(examples["round1"].pk, annotator.pk)
    assert records[1]["annotator"] == pseudonym(examples["round2"].pk, annotator.pk)
    assert records[0]["annotator"] != records[1]["annotator"]
    assert "annotator" not in {str(v) for r in records for v in r.values()}


def test_one_round_as_csv(examples, owner):
    response = api(owner).get(EXPORT, {"round": 2, "format": "csv"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="hate-speech-round-2.csv"'
    rows = list(csv.DictReader(io.StringIO(_body(response), newline="")))
    assert [int(r["example_id"]) for r in rows] == [examples["second"].pk]
    assert rows[0]["round"] == "2"


def test_export_refusals(examples, owner, annotator):
    assert api().get(EXPORT).status_code == 401
    response = api(annotator).get(EXPORT)
    assert response.status_code == 403 and not response.streaming
    assert api(owner).get("/api/tasks/nope/export/").status_code == 404
    response = api(owner).get(EXPORT, {"round": 9})
    assert response.status_code == 400 and response.json() == {"round": ["hate-speech has no round 9."]}
    response = api(owner).get(EXPORT, {"format": "xml"})
    assert response.status_code == 400 and "format" in response.json()
    assert api(owner).get(EXPORT, {"round": "one"}).status_code == 400
    assert Example.objects.count() == 2
