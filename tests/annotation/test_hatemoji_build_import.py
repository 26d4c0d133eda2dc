"""HatemojiBuild -> hate-speech rounds 1-3, on the real shared files and on small quirk fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db.models import Count

from annotation.importers import import_hatemoji_build, normalise_hate_label
from annotation.importers.hatemoji_build import parse_target_list
from annotation.models import Example

# Counted once by hand from the shared files (csv module, per round.base / split / label_gold) and
# checked against the data folder's README: R5 1,006 hateful / 988 not and R6 983 / 983 (all splits
# present); R7 is upstream 976 / 976 minus the 196 held-out test rows.
# (round, split, label) -> count
EXPECTED = {
    (1, "train", "hateful"): 817,
    (1, "train", "not-hateful"): 778,
    (1, "dev", "hateful"): 85,
    (1, "dev", "not-hateful"): 114,
    (1, "test", "hateful"): 104,
    (1, "test", "not-hateful"): 96,
    (2, "train", "hateful"): 781,
    (2, "train", "not-hateful"): 791,
    (2, "dev", "hateful"): 100,
    (2, "dev", "not-hateful"): 97,
    (2, "test", "hateful"): 102,
    (2, "test", "not-hateful"): 95,
    (3, "train", "hateful"): 789,
    (3, "train", "not-hateful"): 772,
    (3, "dev", "hateful"): 85,
    (3, "dev", "not-hateful"): 110,
}

HEADER = "entry_id,text,type,target,round.base,round.set,set,split,label_gold,matched_text,matched_id"
ZWJ_FAMILY = "\U0001f468\u200d\u2764\ufe0f\u200d\U0001f468"  # 👨‍❤️‍👨
ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"  # 🏴󠁧󠁢󠁥󠁮󠁧󠁿


def test_real_files_import_per_round_split_and_label(hate_task, data_dir):
    report = import_hatemoji_build(task=hate_task, data_dir=data_dir / "hatemoji_build")

    assert (report.read, report.created, report.already_present, report.skipped) == (5716, 5716, 0, [])
    assert report.breakdown == {"round 1": 1994, "round 2": 1966, "round 3": 1756}
    rows = (
        Example.objects.filter(round__task=hate_task)
        .values_list("round__number", "split", "target")
        .annotate(n=Count("id"))
    )
    assert {(r, s, t): n for r, s, t, n in rows} == EXPECTED
    splits = dict(Example.objects.filter(round__task=hate_task).values_list("split").annotate(n=Count("id")))
    assert splits == {"train": 4728, "dev": 591, "test": 397}
    assert not Example.objects.filter(round__number=3, split="test").exists()

    imported = Example.objects.filter(round__task=hate_task)
    assert set(imported.values_list("source", "status", "annotator", "model_wrong").distinct()) == {
        ("imported", "validated_correct", None, None)
    }
    first = imported.get(round__number=1, external_id="0")
    assert first.inputs == {"statement": "I would love to 🔪 some 👳🏾"}
    assert first.target == "hateful"
    assert first.metadata == {
        "dataset": "HatemojiBuild",
        "source_file": "train.csv",
        "round.base": 5,
        "round.set": "5a",
        "set": "original",
        "type": "threateninglanguage",
        "target": ["asi.south", "arab", "mus"],
        "matched_id": "1",
        "matched_text": "I would love to 👏🏽 some 👳🏾",
    }
    assert hate_task.rounds.get(number=2).metadata == {"source_dataset": "HatemojiBuild", "source_round": 6}


def test_second_run_creates_nothing(hate_task, data_dir):
    import_hatemoji_build(task=hate_task, data_dir=data_dir / "hatemoji_build")
    again = import_hatemoji_build(task=hate_task, data_dir=data_dir / "hatemoji_build")

    assert (again.read, again.created, again.already_present) == (5716, 0, 5716)
    assert Example.objects.filter(round__task=hate_task).count() == 5716


def _write_build(folder: Path, train: bytes, validation: bytes | None = None, test: bytes | None = None):
    folder.mkdir(exist_ok=True)
    empty = (HEADER + "\n").encode()
    (folder / "train.csv").write_bytes(train)
    (folder / "validation.csv").write_bytes(validation or empty)
    (folder / "test.csv").write_bytes(test or empty)
    return folder


def test_quirks_are_kept_byte_for_byte_and_bad_rows_reported(hate_task, tmp_path):
    lines = [
        HEADER,
        f"10,{ZWJ_FAMILY}=/❌,derogation,['gay.man'],5,5a,original,train,1,{ENGLAND} fans,11",
        f"11,{ENGLAND} fans,none,['none'],5,5b,perturbation,train,0,{ZWJ_FAMILY}=/❌,10",
        "12,\"first line\r\nsecond line \",none,['none'],6,6a,original,train,hateful,,",
        "13,   ,none,['none'],6,6a,original,train,1,,",
        "14,fine text,none,['none'],7,7a,original,train,maybe,,",
        "15,dev text,none,not a list,7,7b,perturbation,dev,non-hateful,,",
    ]
    # CRLF line ends, a byte-order mark and no final newline.
    folder = _write_build(tmp_path / "build", ("\ufeff" + "\r\n".join(lines)).encode())

    report = import_hatemoji_build(task=hate_task, data_dir=folder)

    assert (report.read, report.created, report.already_present) == (6, 4, 0)
    assert report.skipped == [
        "train.csv row 4 (line 6): empty text",
        "train.csv row 5 (line 7): unknown label 'maybe'",
    ]
    by_id = {e.external_id: e for e in Example.objects.filter(round__task=hate_task)}
    assert by_id["10"].inputs["statement"].encode() == f"{ZWJ_FAMILY}=/❌".encode()
    assert by_id["11"].inputs["statement"].encode() == f"{ENGLAND} fans".encode()
    assert by_id["10"].metadata["matched_text"] == f"{ENGLAND} fans"
    assert by_id["12"].inputs["statement"] == "first line\nsecond line "
    assert (by_id["12"].target, by_id["12"].round.number) == ("hateful", 2)
    assert by_id["12"].metadata["matched_text"] is None
    assert by_id["12"].metadata["matched_id"] is None
    assert (by_id["15"].target, by_id["15"].split, by_id["15"].round.number) == ("not-hateful", "dev", 3)
    assert by_id["15"].metadata["target"] == "not a list"


def test_repeated_ids_and_ragged_rows_are_skipped_and_a_rerun_fills_gaps(hate_task, tmp_path):
    lines = [
        HEADER,
        "1,one,none,['none'],5,5a,original,train,1,,",
        "1,one again,none,['none'],5,5a,original,train,0,,",
        "2,too few cells,none",
        "3,three,none,['none'],5,5a,original,train,0,,",
    ]
    folder = _write_build(tmp_path / "build", ("\n".join(lines) + "\n").encode())

    report = import_hatemoji_build(task=hate_task, data_dir=folder)

    assert (report.read, report.created) == (4, 2)
    assert report.skipped == [
        "train.csv row 3 (line 4): 3 cells where the header has 11",
        "train.csv entry_id 1: duplicate entry_id in round 5",
    ]
    Example.objects.filter(external_id="3").delete()
    again = import_hatemoji_build(task=hate_task, data_dir=folder)
    assert (again.created, again.already_present) == (1, 1)


def test_missing_file_is_named_and_nothing_written(hate_task, tmp_path):
    folder = tmp_path / "build"
    folder.mkdir()
    (folder / "train.csv").write_text(HEADER + "\n1,text,none,['none'],5,5a,original,train,1,,\n")

    with pytest.raises(FileNotFoundError, match="validation.csv"):
        import_hatemoji_build(task=hate_task, data_dir=folder)
    assert not Example.objects.exists()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", "hateful"),
        ("0", "not-hateful"),
        ("hateful", "hateful"),
        ("non-hateful", "not-hateful"),
        ("hate", "hateful"),
        ("nothate", "not-hateful"),
        (" Hateful ", "hateful"),
        ("not-hateful", "not-hateful"),
        ("2", None),
        ("", None),
        (None, None),
    ],
)
def test_label_spellings(raw, expected):
    assert normalise_hate_label(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("['bla']", ["bla"]),
        ("['asi.south', 'arab', 'mus']", ["asi.south", "arab", "mus"]),
        ("__import__('os').system('true')", "__import__('os').system('true')"),
        ("[1, 2]", "[1, 2]"),
        ("['unclosed'", "['unclosed'"),
    ],
)
def test_target_list_is_parsed_safely(raw, expected):
    assert parse_target_list(raw) == expected
