"""Export: JSONL and CSV field values by hand (emoji, CRLF, RTL, long metadata), pseudonyms, command."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.exports import (
    FORMAT_VERSION,
    RECORD_KEYS,
    ExportError,
    iter_export,
    iter_records,
    pseudonym,
    write_export,
)
from annotation.models import Example
from annotation.services import create_example
from tasks.services import ensure_round, set_current_round
from validation.models import Validation

EMOJI_TEXT = "I hate them 🏳️\u200d🌈🐀\r\nreally 👨🏿\u200d❤️\u200d👨🏻"
RTL_TEXT = "אני אוהב את השכנים שלי \u200fمرحبا بالجميع"
LONG_METADATA = {"note": "x" * 40_000, "nested": {"list": [1, 2, 3], "quote": 'say "hi", ok'}, "ok": True}


def _export(task, rounds=None, fmt="jsonl", **kwargs) -> str:
    return "".join(iter_export(task, rounds, fmt=fmt, **kwargs))


def _jsonl(task, rounds=None, **kwargs) -> list[dict]:
    return [json.loads(line) for line in _export(task, rounds, **kwargs).split("\n") if line]


def _csv(task, rounds=None) -> list[dict]:
    return list(csv.DictReader(io.StringIO(_export(task, rounds, fmt="csv"), newline="")))


@pytest.fixture
def small_round(hate_task, hate_round, rule_model, annotator, validator, owner):
    """Round 1: an emoji example (CRLF) with two validations, an RTL one, an imported one with long metadata."""
    emoji, _ = create_example(
        task=hate_task,
        annotator=annotator,
        inputs={"statement": EMOJI_TEXT},
        target="not-hateful",
        explanation="the rainbow flag\r\nis friendly",
        time_taken_ms=4200,
    )
    rtl, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": RTL_TEXT}, target="hateful"
    )
    imported = Example.objects.create(
        round=hate_round,
        inputs={"statement": 'imported, with "quotes" and a comma'},
        target="hateful",
        source=Example.Source.IMPORTED,
        status=Example.Status.VALIDATED_CORRECT,
        split="train",
        external_id="row-7",
        prediction_status=Example.PredictionStatus.NONE,
        tags=["emoji", "perturbation"],
        metadata=LONG_METADATA,
    )
    Validation.objects.create(example=emoji, validator=validator, verdict="correct", reason="agree 👍")
    Validation.objects.create(example=emoji, validator=owner, verdict="incorrect", corrected_label="hateful")
    return {"emoji": emoji, "rtl": rtl, "imported": imported}


def test_jsonl_fields_by_hand(hate_task, hate_round, small_round, annotator, validator, owner, rule_model):
    records = _jsonl(hate_task)
    assert [r["example_id"] for r in records] == [
        small_round["emoji"].pk,
        small_round["rtl"].pk,
        small_round["imported"].pk,
    ]
    emoji, rtl, imported = records
    assert list(emoji) == list(RECORD_KEYS)
    anon = pseudonym(hate_round.pk, annotator.pk)
    assert emoji == {
        "format_version": FORMAT_VERSION,
        "task": "hate-speech",
        "licence": "CC BY 4.0 (HatemojiBuild, HateCheck, HatemojiCheck)",
        "example_id": small_round["emoji"].pk,
        "round": 1,
        "external_id": "",
        "source": "created",
        "split": "",
        "annotator": anon,
        "context_id": 0,
        "context_tag": "",
        "context": None,
        "inputs": {"statement": "I hate them 🏳️\u200d🌈🐀\nreally 👨🏿\u200d❤️\u200d👨🏻"},
        "target": "not-hateful",
        "predicted_labels": "hateful",
        "predictions": emoji["predictions"],
        "model_wrong": True,
        "model_wrong_decided": True,
        "prediction_status": "ok",
        "status": "pending",
        "is_retracted": False,
        "is_flagged_by_annotator": False,
        "flag_reason": "",
        "explanation": "the rainbow flag\nis friendly",
        "time_taken_ms": 4200,
        "n_validations": 2,
        "validations": emoji["validations"],
        "tags": "[]",
        "metadata": "{}",
        "created_at": small_round["emoji"].created_at.isoformat(),
        "settled_at": "",
        "retracted_at": "",
        "flagged_at": "",
    }
    assert json.loads(emoji["predictions"]) == [
        {
            "model": "stand-in",
            "model_id": rule_model.pk,
            "status": "ok",
            "label": "hateful",
            "output": {"label": "hateful", "probabilities": {"hateful": 0.875, "not-hateful": 0.125}},
            "model_wrong": True,
            "error": "",
        }
    ]
    validations = json.loads(emoji["validations"])
    assert [(v["validator"], v["verdict"], v["corrected_label"], v["reason"]) for v in validations] == [
        (pseudonym(hate_round.pk, validator.pk), "correct", "", "agree 👍"),
        (pseudonym(hate_round.pk, owner.pk), "incorrect", "hateful", ""),
    ]
    assert rtl["inputs"] == {"statement": RTL_TEXT}
    assert (rtl["model_wrong"], rtl["predicted_labels"]) == (True, "not-hateful")
    assert rtl["annotator"] == anon  # one annotator, one pseudonym within the round
    assert imported["annotator"] == ""
    assert (imported["model_wrong"], imported["model_wrong_decided"]) == (False, False)
    assert imported["predictions"] == "[]" and imported["time_taken_ms"] == -1
    assert json.loads(imported["metadata"]) == LONG_METADATA
    assert json.loads(imported["tags"]) == ["emoji", "perturbation"]
    assert (imported["external_id"], imported["split"], imported["status"]) == (
        "row-7",
        "train",
        "validated_correct",
    )


def _strings(value) -> list[str]:
    """Every string value inside a record, parsing the JSON-string fields too."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, str) and value and value[0] in "[{":
        return _strings(json.loads(value))
    return [value] if isinstance(value, str) else []


def test_no_real_ids_or_names_leak(hate_task, small_round, annotator, validator, owner):
    values = [s for record in _jsonl(hate_task) for s in _strings(record)]
    values += [cell for row in _csv(hate_task) for cell in row.values()]
    for user in (annotator, validator, owner):
        assert user.username not in values
        assert not any(user.email in v for v in values)


def test_jsonl_lines_are_one_per_example_and_keep_characters(hate_task, small_round):
    text = _export(hate_task)
    assert text.count("\n") == 3  # newlines inside texts are escaped
    assert "🏳️\u200d🌈🐀" in text and RTL_TEXT in text  # real characters, no \\u escapes
    assert "\\ud83c" not in text


def test_csv_round_trip(hate_task, small_round, annotator, hate_round):
    rows = _csv(hate_task)
    records = list(iter_records(hate_task))
    assert len(rows) == 3
    header = list(rows[0])
    assert "input.statement" in header and "inputs" not in header and "context" not in header
    emoji, rtl, imported = rows
    assert emoji["input.statement"] == "I hate them 🏳️\u200d🌈🐀\nreally 👨🏿\u200d❤️\u200d👨🏻"
    assert emoji["explanation"] == "the rainbow flag\nis friendly"
    assert emoji["annotator"] == pseudonym(hate_round.pk, annotator.pk)
    assert (emoji["model_wrong"], emoji["model_wrong_decided"], emoji["n_validations"]) == (
        "true",
        "true",
        "2",
    )
    assert json.loads(emoji["validations"]) == json.loads(records[0]["validations"])
    assert rtl["input.statement"] == RTL_TEXT
    assert imported["input.statement"] == 'imported, with "quotes" and a comma'
    assert json.loads(imported["metadata"]) == LONG_METADATA  # 40,000 characters in one quoted cell
    assert (imported["model_wrong"], imported["context_id"], imported["time_taken_ms"]) == (
        "false",
        "0",
        "-1",
    )
    # Every cell equals the JSONL value written as text.
    for row, record in zip(rows, records, strict=True):
        assert row["example_id"] == str(record["example_id"])
        assert row["predictions"] == record["predictions"]
        assert row["metadata"] == record["metadata"]


def test_csv_lines_end_with_crlf_and_quote_newlines(hate_task, small_round):
    text = _export(hate_task, fmt="csv")
    assert text.endswith("\r\n")
    assert '"I hate them 🏳️\u200d🌈🐀\nreally' in text  # the LF stays inside a quoted cell


def test_pseudonyms_stable_across_exports_and_different_across_rounds(
    hate_task, hate_round, small_round, annotator, rule_model, settings
):
    first = _jsonl(hate_task)
    again = _jsonl(hate_task)
    assert [r["annotator"] for r in first] == [r["annotator"] for r in again]
    assert [r["validations"] for r in first] == [r["validations"] for r in again]
    round2 = ensure_round(task=hate_task, number=2)
    set_current_round(task=hate_task, round_=round2)
    rule_model.round_targets.create(round=round2)
    create_example(task=hate_task, annotator=annotator, inputs={"statement": "hello"}, target="hateful")
    [in_round2] = _jsonl(hate_task, [round2])
    assert in_round2["round"] == 2
    assert in_round2["annotator"].startswith("anon-")
    assert in_round2["annotator"] != first[0]["annotator"]
    # Another key gives other pseudonyms; the same key the same ones.
    settings.DYNABENCH_EXPORT_KEY = "another key"
    assert _jsonl(hate_task, [hate_round])[0]["annotator"] != first[0]["annotator"]


def test_round_filter_and_errors(hate_task, hate_round, small_round, django_assert_max_num_queries):
    round2 = ensure_round(task=hate_task, number=2)
    assert _jsonl(hate_task, [round2]) == []
    assert len(_jsonl(hate_task, [hate_round])) == 3
    with pytest.raises(ExportError, match="unknown export format"):
        iter_export(hate_task, fmt="xml")
    other_round = ensure_round(task=_other_task(), number=1)
    with pytest.raises(ExportError, match="is not a round of hate-speech"):
        iter_export(hate_task, [other_round])


def _other_task():
    import copy

    from tasks.builtin_configs import HATE_SPEECH_CONFIG
    from tasks.models import Task

    return Task.objects.create(slug="other", name="Other", config=copy.deepcopy(HATE_SPEECH_CONFIG))


def test_queries_do_not_grow_with_rows(hate_task, small_round, django_assert_max_num_queries):
    # models, examples, predictions, validations (one chunk) plus the task's round lookups.
    with django_assert_max_num_queries(6):
        list(iter_export(hate_task, chunk_size=1000))


def test_command_to_file_and_stdout(hate_task, small_round, tmp_path):
    out_file = tmp_path / "round1.csv"
    err = io.StringIO()
    call_command(
        "export_examples",
        "--task=hate-speech",
        "--round=1",
        "--format=csv",
        f"--output={out_file}",
        stderr=err,
    )
    assert "3 examples written" in err.getvalue()
    with open(out_file, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["input.statement"] for r in rows][1] == RTL_TEXT
    out = io.StringIO()
    call_command("export_examples", "--task=hate-speech", stdout=out, stderr=io.StringIO())
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["format_version"] == FORMAT_VERSION
    with pytest.raises(CommandError, match=r"no round\(s\) \[9\]"):
        call_command("export_examples", "--task=hate-speech", "--round=9")


def test_write_export_counts(hate_task, small_round):
    buffer = io.StringIO()
    assert write_export(buffer, hate_task, fmt="csv") == 3
    assert write_export(io.StringIO(), hate_task, fmt="jsonl") == 3


def test_datasets_loads_the_jsonl(hate_task, small_round, tmp_path):
    path = tmp_path / "export.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        write_export(handle, hate_task)
    import datasets  # a test requirement (requirements.txt): missing, the test fails

    loaded = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "c"))
    assert loaded.num_rows == 3
    assert loaded[1]["inputs"]["statement"] == RTL_TEXT
    assert json.loads(loaded[2]["metadata"]) == LONG_METADATA


@pytest.mark.parametrize(
    "text",
    ['=HYPERLINK("http://127.0.0.1/x","click")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "'quoted"],
)
def test_csv_cells_that_a_spreadsheet_would_run_are_defused_and_jsonl_is_exact(
    hate_task, hate_round, rule_model, annotator, text
):
    example, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": text}, target="hateful", explanation=text
    )
    [row] = _csv(hate_task)
    assert row["input.statement"] == "'" + text and row["explanation"] == "'" + text
    assert row["example_id"] == str(example.pk)  # numbers are never prefixed
    [record] = _jsonl(hate_task)
    assert record["inputs"]["statement"] == text and record["explanation"] == text
    assert row["input.statement"].removeprefix("'") == text  # the documented way back


def test_csv_cells_of_ordinary_text_are_not_prefixed(hate_task, hate_round, rule_model, annotator):
    create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "a = b, 3 - 2 @ home"}, target="hateful"
    )
    [row] = _csv(hate_task)
    assert row["input.statement"] == "a = b, 3 - 2 @ home"
