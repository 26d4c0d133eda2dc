"""The sentiment task: its config's rule and perf metric with hand-computed values, and the DynaSent
importer on small slices of the real files (and its split rule on the whole of them)."""

from __future__ import annotations

import json

import pytest

from annotation.importers.common import ImportReport
from annotation.importers.dynasent import FILES, import_dynasent, read_dynasent
from annotation.models import Example
from core.metrics import perf_function
from tasks.builtin_configs import SENTIMENT_CONFIG
from tasks.config import TaskConfig
from tasks.models import Context
from tasks.rules import model_wrong
from tests.helpers.data import slice_jsonl_gz

CFG = TaskConfig(SENTIMENT_CONFIG)


@pytest.mark.parametrize(
    ("intended", "model_label", "wrong"),
    [("positive", "positive", False), ("positive", "neutral", True), ("neutral", "negative", True)],
)
def test_model_wrong_is_exact_match_on_the_label(intended, model_label, wrong):
    output = {"label": model_label, "probabilities": {"positive": 0.2, "negative": 0.3, "neutral": 0.5}}
    assert model_wrong(CFG, target=intended, output=output) is wrong


def test_perf_metric_is_macro_f1_computed_by_hand_on_a_three_class_confusion():
    # Confusion (rows gold, columns predicted), labels positive / negative / neutral:
    #              pos neg neu
    #   gold pos    4   1   1
    #   gold neg    2   3   0
    #   gold neu    1   1   2
    # positive: TP 4, FP 2+1=3, FN 1+1=2 -> F1 = 8/13
    # negative: TP 3, FP 1+1=2, FN 2     -> F1 = 6/10
    # neutral:  TP 2, FP 1+0=1, FN 1+1=2 -> F1 = 4/7
    # macro-F1 = (8/13 + 6/10 + 4/7) / 3 = 0.595604...; accuracy would be 9/15 = 0.6
    cells = {
        ("positive", "positive"): 4,
        ("positive", "negative"): 1,
        ("positive", "neutral"): 1,
        ("negative", "positive"): 2,
        ("negative", "negative"): 3,
        ("neutral", "positive"): 1,
        ("neutral", "negative"): 1,
        ("neutral", "neutral"): 2,
    }
    gold = [g for (g, _), n in cells.items() for _ in range(n)]
    predicted = [p for (_, p), n in cells.items() for _ in range(n)]
    assert CFG.perf_metric == "macro_f1"
    score = perf_function(CFG.perf_metric, CFG.labels)(gold, predicted)
    assert score == pytest.approx((8 / 13 + 6 / 10 + 4 / 7) / 3)
    assert round(score, 6) == 0.595604


def test_split_rule_on_the_whole_files(dynasent_dir):
    """Round 1: dev file 90/10 train/dev by hash of text_id, test file test; round 2 (dev only) 60/10/30."""
    report = ImportReport(source="DynaSent")
    rows = read_dynasent(dynasent_dir, report, max_length=2000)
    assert (report.read, report.skipped) == (7920, [])
    counts: dict[tuple[int, str], int] = {}
    for row in rows:
        counts[(row.round_number, row.split)] = counts.get((row.round_number, row.split), 0) + 1
    assert counts == {
        (1, "train"): 3274,
        (1, "dev"): 326,
        (1, "test"): 3600,
        (2, "train"): 422,
        (2, "dev"): 72,
        (2, "test"): 226,
    }
    # Stable: the same id always lands in the same split (the rule hashes the id, not the file order).
    again = {r.external_id: r.split for r in read_dynasent(dynasent_dir, ImportReport(source="x"), 2000)}
    assert all(again[r.external_id] == r.split for r in rows)


@pytest.fixture
def dynasent_slice(dynasent_dir, tmp_path):
    """The first 20 rows of each file; round 2's file also gets a 'mixed' row and a repeated id."""
    folder = tmp_path / "dynasent"
    records = {}
    for name, _, _ in FILES:
        extra = []
        if "round02" in name:
            extra = [
                {"text_id": "r2-mixed-1", "sentence": "Good food, awful service.", "gold_label": "mixed"},
                {"text_id": "r2-null-1", "sentence": "Fine.", "gold_label": None},
            ]
        records[name] = slice_jsonl_gz(dynasent_dir / name, folder / name, 20, extra)
    return folder, records


def test_import_a_real_slice(sentiment_task, dynasent_slice):
    folder, records = dynasent_slice
    report = import_dynasent(task=sentiment_task, data_dir=folder)
    assert (report.read, report.created, report.already_present) == (62, 60, 0)
    assert report.skipped == [
        "dynasent-v1.1-round02-dynabench-dev.jsonl.gz line 21: label 'mixed' is not one of "
        "['positive', 'negative', 'neutral'] (mixed and unagreed sentences are left out)",
        "dynasent-v1.1-round02-dynabench-dev.jsonl.gz line 22: label None is not one of "
        "['positive', 'negative', 'neutral'] (mixed and unagreed sentences are left out)",
    ]
    first_r2 = records["dynasent-v1.1-round02-dynabench-dev.jsonl.gz"][0]
    example = Example.objects.get(round__number=2, external_id=first_r2["text_id"])
    assert example.inputs == {"statement": first_r2["sentence"]}
    assert example.target == first_r2["gold_label"]
    assert example.source == "imported" and example.status == "validated_correct"
    assert example.context.data == {"prompt": first_r2["prompt_data"]["prompt_sentence"]}
    # Round 1 (Yelp sentences) has no prompt; round 2 has one context per distinct prompt sentence.
    assert not Example.objects.filter(round__number=1, context__isnull=False).exists()
    prompts = {
        r["prompt_data"]["prompt_sentence"]
        for r in records["dynasent-v1.1-round02-dynabench-dev.jsonl.gz"][:20]
    }
    assert Context.objects.filter(round__number=2, round__task=sentiment_task).count() == len(prompts)
    # Round 1 test file rows are the test split.
    r1 = records["dynasent-v1.1-round01-yelp-test.jsonl.gz"]
    assert Example.objects.get(round__number=1, external_id=r1[0]["text_id"]).split == "test"

    again = import_dynasent(task=sentiment_task, data_dir=folder)
    assert (again.created, again.already_present, len(again.skipped)) == (0, 60, 2)
    assert Example.objects.filter(round__task=sentiment_task).count() == 60
    assert Context.objects.filter(round__task=sentiment_task).count() == len(prompts)


def test_missing_file_is_named_and_nothing_written(sentiment_task, tmp_path):
    with pytest.raises(FileNotFoundError, match="dynasent-v1.1-round01-yelp-dev.jsonl.gz"):
        import_dynasent(task=sentiment_task, data_dir=tmp_path)
    assert not Example.objects.exists()


def test_command_reports_and_is_idempotent(sentiment_task, dynasent_slice, settings):
    from io import StringIO

    from django.core.management import call_command

    folder, _ = dynasent_slice
    settings.DYNABENCH_DATA_DIR = folder.parent
    out = StringIO()
    call_command("import_sentiment_data", verbosity=0, stdout=out)
    text = out.getvalue()
    assert "DynaSent: read 62, created 60, already present 0, skipped 2" in text
    assert "line 21: label 'mixed'" in text
    out = StringIO()
    call_command("import_sentiment_data", verbosity=0, stdout=out)
    assert "created 0, already present 60, skipped 2" in out.getvalue()


def test_validator_votes_are_kept_as_counts_never_as_worker_ids(sentiment_task, dynasent_slice, owner):
    from rest_framework.test import APIClient

    from annotation.exports import iter_export
    from annotation.importers.dynasent import label_counts

    folder, records = dynasent_slice
    import_dynasent(task=sentiment_task, data_dir=folder)
    # Source: {"positive": ["w224", "w310", "w730", "w786"], "negative": [], "neutral": ["w152"], "mixed": []}
    first_r1 = records["dynasent-v1.1-round01-yelp-dev.jsonl.gz"][0]
    assert first_r1["label_distribution"]["positive"] == ["w224", "w310", "w730", "w786"]
    example = Example.objects.get(round__number=1, external_id=first_r1["text_id"])
    assert example.metadata["label_counts"] == {"positive": 4, "negative": 0, "neutral": 1, "mixed": 0}
    assert "label_distribution" not in example.metadata
    # Round 2's first sentence: five validators said neutral.
    first_r2 = records["dynasent-v1.1-round02-dynabench-dev.jsonl.gz"][0]
    example = Example.objects.get(round__number=2, external_id=first_r2["text_id"])
    assert example.metadata["label_counts"] == {"positive": 0, "negative": 0, "neutral": 5, "mixed": 0}
    assert label_counts(None) is None and label_counts({"positive": "w1", "neutral": []}) == {"neutral": 0}

    # No worker id ("w224") anywhere: stored metadata, the JSONL and CSV exports, the API.
    worker_ids = {
        w
        for r in records.values()
        for rec in r
        for ids in (rec.get("label_distribution") or {}).values()
        for w in ids
    }
    assert len(worker_ids) > 20
    stored = json.dumps(list(Example.objects.values_list("metadata", flat=True)))
    exported = "".join(iter_export(sentiment_task)) + "".join(iter_export(sentiment_task, fmt="csv"))
    sentiment_task.owners.add(owner)
    client = APIClient()
    client.force_authenticate(owner)
    served = client.get("/api/tasks/sentiment/examples/", {"page_size": 200}).content.decode()
    assert json.loads(served)["count"] == 60
    for text in (stored, exported, served):
        assert "label_counts" in text
        assert not {w for w in worker_ids if f'"{w}"' in text or f"'{w}'" in text}


def test_re_import_replaces_stored_worker_ids_by_counts(sentiment_task, dynasent_slice):
    folder, records = dynasent_slice
    import_dynasent(task=sentiment_task, data_dir=folder)
    # As a database imported before this change holds them.
    for example in Example.objects.all():
        old = {k: v for k, v in example.metadata.items() if k != "label_counts"}
        example.metadata = {**old, "label_distribution": {"positive": ["w1"], "neutral": ["w2", "w3"]}}
        example.save(update_fields=["metadata"])
    again = import_dynasent(task=sentiment_task, data_dir=folder)
    assert (again.created, again.already_present, again.metadata_updated, again.kept_as_stored) == (
        0,
        60,
        60,
        [],
    )
    assert not Example.objects.filter(metadata__has_key="label_distribution").exists()
    first_r1 = records["dynasent-v1.1-round01-yelp-dev.jsonl.gz"][0]
    example = Example.objects.get(round__number=1, external_id=first_r1["text_id"])
    assert example.metadata["label_counts"] == {"positive": 4, "negative": 0, "neutral": 1, "mixed": 0}
    third = import_dynasent(task=sentiment_task, data_dir=folder)
    assert (third.metadata_updated, third.kept_as_stored) == (0, [])
