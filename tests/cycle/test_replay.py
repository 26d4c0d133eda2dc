"""Replay: rows of a HatemojiBuild-format file through create_example as a replay user; fooling rate."""

from __future__ import annotations

import csv
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Example
from cycle.training.replay import ReplayError, client_token_for, replay_file
from engine.runtime.classifier import get_classifier
from tasks.services import ensure_round, set_current_round

HEADER = ["entry_id", "text", "type", "target", "round.base", "round.set", "set", "split", "label_gold"]
ROWS = [
    # entry_id, text, round.base, split, label_gold. The stand-in says "hateful" iff "hate" is in the text.
    ("11", "I hate them all 🐀", 5, "test", "1"),  # model: hateful, gold hateful -> not fooled
    ("12", "they are vermin 🐀", 5, "test", "1"),  # model: not-hateful, gold hateful -> fooled
    ("13", "I hate rainy days\r\nso much", 5, "test", "0"),  # model: hateful, gold not -> fooled
    ("14", "what a lovely day ☀️", 5, "test", "0"),  # model: not-hateful, gold not -> not fooled
    ("21", "I hate it", 6, "test", "0"),  # other source round: filtered out by --source-round 5
    ("15", "a train row that hates", 5, "train", "1"),  # other split: filtered out by --split test
]


@pytest.fixture
def replay_csv(tmp_path):
    path = tmp_path / "test.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for entry_id, text, source_round, split, label in ROWS:
            writer.writerow(
                [
                    entry_id,
                    text,
                    "none",
                    "['none']",
                    source_round,
                    f"{source_round}a",
                    "original",
                    split,
                    label,
                ]
            )
    return path


def test_fooling_rate_by_hand(hate_task, rule_model, replay_csv):
    report = replay_file(task=hate_task, round_number=1, path=replay_csv, source_rounds=[5], splits=["test"])
    # Fooled: rows 12 and 13 of the four rows 11-14.
    assert (report.read, report.created, report.already_present) == (4, 4, 0)
    assert (report.scored, report.fooled) == (4, 2)
    assert report.fooling_rate == 0.5
    examples = Example.objects.filter(pk__in=report.example_ids).order_by("id")
    assert [e.source for e in examples] == [Example.Source.REPLAY] * 4
    assert {e.annotator.username for e in examples} == {"replay-bot"}
    assert [e.model_wrong for e in examples] == [False, True, True, False]
    assert [e.target for e in examples] == ["hateful", "hateful", "not-hateful", "not-hateful"]
    assert examples[2].inputs == {"statement": "I hate rainy days\nso much"}  # CRLF -> LF
    assert all(e.predictions.count() == 1 for e in examples)
    assert not examples[0].annotator.has_usable_password()


def test_second_run_adds_nothing(hate_task, rule_model, replay_csv):
    first = replay_file(task=hate_task, round_number=1, path=replay_csv, source_rounds=[5], splits=["test"])
    second = replay_file(task=hate_task, round_number=1, path=replay_csv, source_rounds=[5], splits=["test"])
    assert (second.created, second.already_present) == (0, 4)
    assert second.fooling_rate == first.fooling_rate == 0.5
    assert sorted(second.example_ids) == sorted(first.example_ids)
    assert Example.objects.filter(source=Example.Source.REPLAY).count() == 4


def test_client_token_is_deterministic_per_round_file_and_row(hate_task, hate_round, rule_model, replay_csv):
    replay_file(task=hate_task, round_number=1, path=replay_csv, limit=1)
    example = Example.objects.get(source=Example.Source.REPLAY)
    assert example.client_token == client_token_for(hate_round, "/elsewhere/test.csv", "11")
    round2 = ensure_round(task=hate_task, number=2)
    assert client_token_for(round2, "test.csv", "11") != example.client_token


def test_with_the_tiny_model(hate_task, tiny_registered_model, replay_csv):
    report = replay_file(task=hate_task, round_number=1, path=replay_csv, source_rounds=[5], splits=["test"])
    classifier = get_classifier(tiny_registered_model.path)
    texts = ["I hate them all 🐀", "they are vermin 🐀", "I hate rainy days\nso much", "what a lovely day ☀️"]
    gold = ["hateful", "hateful", "not-hateful", "not-hateful"]
    predicted = [p["label"] for p in classifier.predict_batch(texts)]
    expected = sum(p != g for p, g in zip(predicted, gold, strict=True))
    assert (report.scored, report.fooled) == (4, expected)


def test_only_the_current_round(hate_task, rule_model, replay_csv):
    ensure_round(task=hate_task, number=2)
    with pytest.raises(ReplayError, match="round 2 is not the current round of hate-speech"):
        replay_file(task=hate_task, round_number=2, path=replay_csv)
    assert not Example.objects.exists()


def test_skips_bad_rows_and_reports_them(hate_task, rule_model, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(
        "entry_id,text,label_gold\n1,fine text,0\n2,   ,1\n3,what,maybe\n,no id,1\n", encoding="utf-8"
    )
    report = replay_file(task=hate_task, round_number=1, path=path)
    assert report.created == 1
    assert len(report.skipped) == 3
    assert "bad.csv row 3 (line 4): unknown label 'maybe'" in report.skipped


def test_missing_column(hate_task, rule_model, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,text\n1,x\n", encoding="utf-8")
    with pytest.raises(ReplayError, match="missing column"):
        replay_file(task=hate_task, round_number=1, path=path)


def test_command(hate_task, rule_model, replay_csv):
    out = StringIO()
    call_command(
        "replay_round",
        "--task=hate-speech",
        "--round=1",
        f"--source={replay_csv}",
        "--source-round=5",
        "--split=test",
        "--user=replayer",
        stdout=out,
    )
    assert "fooling rate (MER): 2/4 = 50.0%" in out.getvalue()
    assert Example.objects.filter(annotator__username="replayer").count() == 4
    with pytest.raises(CommandError, match="not the current round"):
        call_command("replay_round", "--task=hate-speech", "--round=3", f"--source={replay_csv}")


def test_command_limit(hate_task, rule_model, replay_csv):
    set_current_round(task=hate_task, round_=hate_task.current_round)
    out = StringIO()
    call_command(
        "replay_round", "--task=hate-speech", "--round=1", f"--source={replay_csv}", "--limit=2", stdout=out
    )
    assert Example.objects.count() == 2
    assert "replayed 2 (created 2" in out.getvalue()


def test_replay_reads_odd_round_digits_as_no_round(hate_task, rule_model, tmp_path):
    from cycle.training.replay import replay_file

    path = tmp_path / "odd.csv"
    path.write_text(
        "entry_id,text,round.base,label_gold\n1,fine text,5,0\n2,other text,²,1\n3,more text,"
        + "9" * 5000
        + ",1\n",
        encoding="utf-8",
    )
    report = replay_file(task=hate_task, round_number=1, path=path, source_rounds=[5])
    assert (report.read, report.created) == (1, 1)  # rows 2 and 3 have no readable round: not round 5
