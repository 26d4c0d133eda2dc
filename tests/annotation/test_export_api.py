"""The export of a task's examples through the API: streamed JSONL with pseudonyms, one round as CSV,
refusals (owners only)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation.exports import pseudonym
from annotation.models import Example
from annotation.services import create_example
from tasks.services import ensure_round, set_current_round
from tests.helpers.api import forced_client as api
from tests.helpers.fakes import rule_predict

EXPORT = "/api/tasks/hate-speech/export/"


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


@pytest.mark.parametrize("raw", ["1_0", " 2", "2.0", "٢", "abc"])
def test_export_round_parameter_is_ascii_digits(examples, owner, raw):
    response = api(owner).get(EXPORT, {"round": raw})
    assert response.status_code == 400
    assert response.json() == {"round": ["A whole number written with the digits 0-9."]}
