"""load_contexts: JSONL and CSV, BOM, CRLF, emoji, long fields, empty lines, bad rows, idempotence; the command."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tasks.models import Context
from tasks.services import ContextFileError, load_contexts

LONG = "ä" * 9_990 + "0123456789"  # 10,000 characters


def _jsonl(*records) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records).encode()


def _round(task):
    return task.current_round


def test_jsonl_with_bom_crlf_emoji_long_field_and_empty_lines(prompt_task):
    data = (
        "\ufeff"
        + json.dumps(
            {"prompt": "Hello 👋🏽 world\r\nsecond line", "tag": "greet", "id": "a1"}, ensure_ascii=False
        )
        + "\r\n\r\n   \r\n"
        + json.dumps({"prompt": LONG, "metadata": {"source": "wiki", "n": 1}, "id": 2})
        + "\r\n"
        + json.dumps({"prompt": "שלום\u2028עולם 👨‍👩‍👧"}, ensure_ascii=False)
        + "\n"
    ).encode()
    report = load_contexts(round_=_round(prompt_task), fileobj=io.BytesIO(data), fmt="jsonl")
    assert (report.loaded, report.already_loaded, report.skipped) == (3, 0, [])
    first, second, third = Context.objects.filter(round=_round(prompt_task)).order_by("id")
    assert first.data == {"prompt": "Hello 👋🏽 world\nsecond line"}  # CRLF inside a value becomes LF
    assert (first.tag, first.external_id) == ("greet", "a1")
    assert second.data["prompt"] == LONG and second.metadata == {"source": "wiki", "n": 1}
    assert second.external_id == "2"
    assert third.data["prompt"] == "שלום\u2028עולם 👨‍👩‍👧" and third.task == prompt_task


def test_invalid_jsonl_lines_are_skipped_with_their_line_numbers(prompt_task):
    data = _jsonl(
        {"prompt": "ok", "id": "x"},
        "{not json",
        "[1, 2]",
        {"tag": "no prompt"},
        {"prompt": "   "},
        {"prompt": 5},
        {"prompt": "ok", "metadata": "not an object"},
        {"prompt": "ok", "tag": "t" * 101},
        {"prompt": "p" * 100_001},
        {"prompt": "dup", "id": "x"},
        {"prompt": "ok too", "colour": "blue"},
    )
    report = load_contexts(round_=_round(prompt_task), fileobj=io.BytesIO(data), fmt="jsonl")
    assert report.loaded == 2 and report.already_loaded == 1
    assert [line for line, _ in report.skipped] == [2, 3, 4, 5, 6, 7, 8, 9]
    reasons = dict(report.skipped)
    assert "not valid JSON" in reasons[2] and reasons[3] == "not a JSON object"
    assert "'prompt' is missing" in reasons[4] and "must be text" in reasons[6]
    assert "100,001 characters" in reasons[9]
    assert report.ignored_columns == ["colour"]
    assert "2 contexts loaded, 1 already loaded, 8 skipped; ignored columns: colour." == report.summary()


def test_loading_twice_is_idempotent_by_id(prompt_task):
    data = _jsonl({"prompt": "a", "id": "1"}, {"prompt": "b", "id": "2"})
    load_contexts(round_=_round(prompt_task), fileobj=io.BytesIO(data), fmt="jsonl")
    again = load_contexts(round_=_round(prompt_task), fileobj=io.BytesIO(data), fmt="jsonl")
    assert (again.loaded, again.already_loaded) == (0, 2)
    assert Context.objects.filter(round=_round(prompt_task)).count() == 2


def test_csv_with_bom_crlf_quoted_newlines_emoji_and_a_bad_row(prompt_task):
    text = (
        "\ufeffid,prompt,tag,metadata\r\n"
        'c1,"Line one\r\nline two 🏳️‍🌈",news,"{""k"": [1, 2]}"\r\n'
        "\r\n"
        f"c2,{LONG},,\r\n"
        "c3,too,many,columns,here\r\n"
        'c4,fine,,{"broken\r\n'
        "c5,,empty prompt,\r\n"
        "c6,last,,\r\n"
    )
    report = load_contexts(round_=_round(prompt_task), fileobj=io.BytesIO(text.encode()), fmt="csv")
    assert report.loaded == 3
    assert [line for line, _ in report.skipped] == [6, 7, 8]
    assert "5 columns" in report.skipped[0][1] and "metadata" in report.skipped[1][1]
    assert "'prompt' is missing or empty" in report.skipped[2][1]
    c1, c2, c6 = Context.objects.filter(round=_round(prompt_task)).order_by("id")
    assert c1.data == {"prompt": "Line one\nline two 🏳️‍🌈"} and c1.metadata == {"k": [1, 2]}
    assert c1.tag == "news" and c1.external_id == "c1"
    assert c2.data["prompt"] == LONG and c2.metadata == {}
    assert c6.external_id == "c6"


def test_unreadable_files_raise_and_load_nothing(prompt_task):
    round_ = _round(prompt_task)
    with pytest.raises(ContextFileError, match="not UTF-8"):
        load_contexts(round_=round_, fileobj=io.BytesIO(b'{"prompt": "ok"}\n\xff\xfe'), fmt="jsonl")
    with pytest.raises(ContextFileError, match="header"):
        load_contexts(round_=round_, fileobj=io.BytesIO(b""), fmt="csv")
    with pytest.raises(ContextFileError, match="Unknown"):
        load_contexts(round_=round_, fileobj=io.BytesIO(b""), fmt="xml")
    assert not Context.objects.exists()


def test_text_file_objects_are_accepted(prompt_task):
    report = load_contexts(round_=_round(prompt_task), fileobj=io.StringIO("prompt\nhi\n"), fmt="csv")
    assert report.loaded == 1


def test_load_contexts_command(prompt_task, tmp_path, capsys):
    path = tmp_path / "contexts.jsonl"
    path.write_bytes(_jsonl({"prompt": "a", "id": "1"}, {"nothing": 1}, {"prompt": "b", "id": "2"}))
    call_command("load_contexts", str(path), task="prompted", round=1)
    out, err = capsys.readouterr()
    assert "prompted round 1: 2 contexts loaded, 0 already loaded, 1 skipped" in out
    assert "skipped line 2: the context field 'prompt' is missing or empty" in err
    call_command("load_contexts", str(path), task="prompted", round=1)
    assert "0 contexts loaded, 2 already loaded" in capsys.readouterr().out

    with pytest.raises(CommandError, match="No round 9"):
        call_command("load_contexts", str(path), task="prompted", round=9)
    bad = tmp_path / "contexts.txt"
    bad.write_text("x")
    with pytest.raises(CommandError, match="use a .jsonl or .csv"):
        call_command("load_contexts", str(bad), task="prompted", round=1)


def test_progress_is_reported_per_thousand(prompt_task):
    seen = []
    data = _jsonl(*({"prompt": f"p{i}"} for i in range(2500)))
    report = load_contexts(
        round_=_round(prompt_task), fileobj=io.BytesIO(data), fmt="jsonl", progress=seen.append
    )
    assert report.loaded == 2500 and seen == [1000, 2000]


def test_a_task_without_context_fields_refuses_contexts(hate_round):
    data = io.BytesIO(b'{"id": "c1", "prompt": "never shown"}\n')
    with pytest.raises(ContextFileError, match="has no context fields"):
        load_contexts(round_=hate_round, fileobj=data, fmt="jsonl")
    assert Context.objects.count() == 0
