"""The SQuAD importer: contexts, offsets after newline normalisation, split by article, idempotence."""

from __future__ import annotations

import gzip
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.importers.squad import article_split, import_squad
from annotation.models import Example
from tasks.models import Context
from tests.helpers.data import data_path

pytestmark = pytest.mark.django_db


def _write(folder: Path, data: list) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "squad_v1.1_dev_shared.json.gz", "wt", encoding="utf-8") as handle:
        json.dump({"version": "1.1", "data": data}, handle)
    return folder


PASSAGE = "Line one\r\nThe 🎉 party was in Tel Aviv.\r\nמרכז העיר is the centre."


def _data():
    raw_start = PASSAGE.index("Tel Aviv")
    return [
        {
            "title": "Party",
            "paragraphs": [
                {
                    "context": PASSAGE,
                    "qas": [
                        {
                            "id": "q1",
                            "question": "  Where was the party?\r\n",
                            "answers": [
                                {"text": "Tel Aviv", "answer_start": raw_start},
                                {"text": "in Tel Aviv", "answer_start": raw_start - 3},
                                {"text": "Jerusalem", "answer_start": 0},  # not there: dropped
                            ],
                        },
                        {
                            "id": "q2",
                            "question": "What is the centre?",
                            "answers": [{"text": "מרכז העיר", "answer_start": PASSAGE.index("מרכז")}],
                        },
                        {"id": "q3", "question": "   ", "answers": [{"text": "Line", "answer_start": 0}]},
                        {"id": "q4", "question": "Bad?", "answers": [{"text": "Line", "answer_start": 5}]},
                        {"id": "q1", "question": "Repeat?", "answers": [{"text": "Line", "answer_start": 0}]},
                    ],
                }
            ],
        }
    ]


def test_import_normalises_the_passage_and_remaps_offsets(qa_task, tmp_path):
    folder = _write(tmp_path / "squad", _data())
    report = import_squad(task=qa_task, data_dir=folder)
    assert (report.read, report.created, report.already_present, report.skipped_count) == (5, 2, 0, 3)
    assert any("q3: empty question" in s for s in report.skipped)
    assert any("q4: no answer at its offset" in s for s in report.skipped)
    assert any("duplicate id 'q1'" in s for s in report.skipped)
    assert report.breakdown["reference answers dropped (not at their offset)"] == 1

    [context] = Context.objects.filter(task=qa_task)
    passage = context.data["context"]
    assert "\r" not in passage and context.data["title"] == "Party"
    q1 = Example.objects.get(external_id="q1")
    assert q1.inputs == {"question": "Where was the party?"}
    # one CRLF before the answer became LF: the raw offset 29 is 28 in the stored passage
    assert PASSAGE.index("Tel Aviv") == 29
    assert q1.target == {
        "answer": "Tel Aviv",
        "answer_start": 28,
        "answers": [{"text": "Tel Aviv", "answer_start": 28}, {"text": "in Tel Aviv", "answer_start": 25}],
    }
    q2 = Example.objects.get(external_id="q2")
    start = q2.target["answer_start"]
    assert (
        passage[start : start + len("מרכז העיר")] == "מרכז העיר" and start == 38
    )  # raw 40, two CRLFs before
    assert q1.context_id == q2.context_id == context.pk
    assert q1.status == "validated_correct" and q1.source == "imported" and q1.annotator is None
    assert q1.tags == ["article:Party"] and q1.split == article_split("Party")

    again = import_squad(task=qa_task, data_dir=folder)
    assert (again.created, again.already_present) == (0, 2)
    assert Example.objects.count() == 2 and Context.objects.count() == 1


def test_article_split_is_the_documented_hash_rule():
    import hashlib

    for title in ["Super_Bowl_50", "Warsaw", "Normans", "Genghis_Khan"]:
        bucket = int.from_bytes(hashlib.sha256(title.encode()).digest()[:8], "big") % 10
        expected = "train" if bucket < 7 else "dev" if bucket == 7 else "test"
        assert article_split(title) == expected


def test_command_reports_and_refuses_a_missing_folder(qa_task, tmp_path):
    folder = _write(tmp_path / "data" / "squad", _data())
    out = StringIO()
    call_command("import_qa_data", "--data-dir", str(folder.parent), stdout=out, verbosity=0)
    assert "SQuAD v1.1: read 5, created 2, already present 0, skipped 3" in out.getvalue()
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not found"):
        call_command("import_qa_data", "--data-dir", str(tmp_path / "nowhere"), verbosity=0)


def test_real_squad_imports_whole(qa_task, settings):
    squad_dir = data_path(settings, "squad", "squad_v1.1_dev_shared.json.gz").parent
    report = import_squad(task=qa_task, data_dir=squad_dir)
    assert report.read == 9036 and report.created + report.skipped_count == 9036
    assert report.skipped_count <= 25  # repeated ids only, if any
    assert Context.objects.filter(task=qa_task).count() == 1872
    assert report.breakdown["round 1 train"] == 5748
    assert report.breakdown["round 1 test"] == 2171
    for example in Example.objects.filter(round__task=qa_task).select_related("context")[:2000]:
        passage = example.context.data["context"]
        for answer in example.target["answers"]:
            assert passage[answer["answer_start"] :].startswith(answer["text"])
