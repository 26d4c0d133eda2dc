"""The NLI task: rule and perf metric by hand, the ANLI importer on real slices, the (premise,
hypothesis) pair through live prediction, round datasets and training, and its non-commercial licence
on the task page and in exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.exports import iter_records
from annotation.importers.anli import import_anli, read_anli
from annotation.importers.common import ImportReport
from annotation.models import Example, Prediction
from annotation.services import create_example
from core.metrics import perf_function
from engine.runtime.classifier import get_classifier
from leaderboards.services import build_round_datasets
from models_registry.inference import predict
from models_registry.models import RegisteredModel
from models_registry.round_targets import set_round_targets
from models_registry.services import register_local_model
from tasks.builtin_configs import NLI_CONFIG
from tasks.config import TaskConfig
from tasks.models import Context
from tasks.rules import model_wrong
from tasks.services import ensure_round, set_current_round
from tests.helpers.tiny_models import build_tiny_classifier

CFG = TaskConfig(NLI_CONFIG)
LABELS = ("entailment", "neutral", "contradiction")


def test_model_wrong_is_exact_match_and_perf_is_accuracy_by_hand():
    assert model_wrong(CFG, target="entailment", output={"label": "contradiction"}) is True
    assert model_wrong(CFG, target="neutral", output={"label": "neutral"}) is False
    # 7 items, 4 right: accuracy 4/7 (macro-F1 would differ: it is not the NLI perf metric).
    gold = [
        "entailment",
        "entailment",
        "neutral",
        "neutral",
        "contradiction",
        "contradiction",
        "contradiction",
    ]
    pred = [
        "entailment",
        "neutral",
        "neutral",
        "contradiction",
        "contradiction",
        "contradiction",
        "entailment",
    ]
    assert CFG.perf_metric == "accuracy"
    assert perf_function(CFG.perf_metric, CFG.labels)(gold, pred) == pytest.approx(4 / 7)
    assert CFG.model_input_fields == ["premise", "hypothesis"]


def test_split_rule_on_the_whole_files(anli_dir):
    report = ImportReport(source="ANLI")
    rows = read_anli(anli_dir, report, limits=(100_000, 1000))
    assert (report.read, report.skipped) == (5050, [])
    counts: dict[tuple[int, str], int] = {}
    for row in rows:
        counts[(row.round_number, row.split)] = counts.get((row.round_number, row.split), 0) + 1
    assert counts == {
        (1, "train"): 913,
        (1, "dev"): 87,
        (1, "test"): 1000,
        (2, "train"): 894,
        (2, "dev"): 106,
        (2, "test"): 1000,
        (3, "train"): 644,
        (3, "dev"): 99,
        (3, "test"): 307,
    }


def test_import_a_real_slice(nli_task, anli_slice):
    folder, records = anli_slice
    report = import_anli(task=nli_task, data_dir=folder)
    assert (report.read, report.created, report.skipped) == (150, 150, [])
    first = records["anli_v0.1_R1_dev.jsonl.gz"][0]
    example = Example.objects.get(round__number=1, external_id=first["uid"])
    assert example.inputs == {"hypothesis": first["hypothesis"]}
    assert example.target == {"e": "entailment", "n": "neutral", "c": "contradiction"}[first["label"]]
    assert example.context.data == {"premise": first["context"]}
    assert example.tags == ["genre:wikipedia"] and example.metadata["reason"] == first["reason"]
    # One context per distinct premise of a round.
    for number, names in ((1, ("R1_dev", "R1_test")), (2, ("R2_dev", "R2_test")), (3, ("R3_dev",))):
        premises = {r["context"] for name in names for r in records[f"anli_v0.1_{name}.jsonl.gz"]}
        assert Context.objects.filter(round__task=nli_task, round__number=number).count() == len(premises)
    assert nli_task.rounds.get(number=3).metadata["licence"] == "CC BY-NC 4.0 (non-commercial)"
    again = import_anli(task=nli_task, data_dir=folder)
    assert (again.created, again.already_present) == (0, 150)


def test_the_pair_reaches_the_model_live_in_datasets_and_in_training(
    nli_task, anli_slice, annotator, tmp_path, tiny_backbone_dir
):
    folder, _ = anli_slice
    import_anli(task=nli_task, data_dir=folder)
    path = build_tiny_classifier(tmp_path / "tiny-nli", labels=LABELS, seed=1)
    model = register_local_model(task=nli_task, name="tiny-nli", path=str(path), card={})
    assert model.status == RegisteredModel.Status.READY, model.error_message
    round4 = ensure_round(task=nli_task, number=4)
    set_round_targets(round=round4, models=[model])
    set_current_round(task=nli_task, round_=round4)
    premise = "The cat sat on the mat all day.\nIt did not move."
    context = Context.objects.create(task=nli_task, round=round4, data={"premise": premise})

    example, _ = create_example(
        task=nli_task,
        annotator=annotator,
        inputs={"hypothesis": "The cat moved."},
        target="contradiction",
        context=context,
    )
    classifier = get_classifier(path)
    expected = classifier.predict_batch([(premise, "The cat moved.")])[0]
    prediction = Prediction.objects.get(example=example)
    assert prediction.output["probabilities"] == pytest.approx(expected["probabilities"])
    assert example.model_wrong is (expected["label"] != "contradiction")
    # The hypothesis alone is a different input: the pair really was sent.
    alone = classifier.predict_batch(["The cat moved."])[0]
    assert alone["probabilities"] != pytest.approx(expected["probabilities"])

    # Round datasets carry the premise with the hypothesis, so evaluation reads the pair too.
    built = build_round_datasets(nli_task.rounds.get(number=1))
    item = built.datasets["test"].items.first()
    assert set(item.inputs) == {"premise", "hypothesis"} and item.inputs["premise"].strip()
    assert predict(model, [item.inputs])[0]["label"] in LABELS

    # Training on rounds 1-2 reads pairs (a tiny backbone instead of MiniLM).
    from cycle.training.targets import train_target_for_rounds

    trained = train_target_for_rounds(
        task=nli_task, rounds=[1, 2], recipe="quick", name="pair-quick", backbone_path=tiny_backbone_dir
    )
    assert trained.status == RegisteredModel.Status.READY, trained.error_message
    assert sorted(get_classifier(trained.path).labels) == sorted(LABELS)
    # The card says what the model is: pair pooling (its config.pooling), not a mean-pooled pair.
    assert json.loads((Path(trained.path) / "config.json").read_text())["pooling"] == "pair"
    assert trained.card["description"].startswith(f"{trained.card['backbone']} with pair pooling (")
    assert "(u, v, |u-v|, u*v), quick recipe, trained on" in trained.card["description"]
    assert "mean-pooling" not in trained.card["description"]


def test_non_commercial_licence_on_the_task_page_and_in_exports(nli_task, anli_slice, client):
    folder, _ = anli_slice
    import_anli(task=nli_task, data_dir=folder)
    page = client.get(reverse("tasks:detail", args=[nli_task.slug])).content.decode()
    assert "CC BY-NC 4.0" in page and "non-commercial purposes only" in page
    records = list(iter_records(nli_task))
    assert len(records) == 150
    assert {r["licence"] for r in records} == {
        "CC BY-NC 4.0 (ANLI, Nie et al. 2020): non-commercial use only"
    }
    first = json.loads(json.dumps(records[0]))
    assert set(first["context"]) == {"premise"} and set(first["inputs"]) == {"hypothesis"}


def test_sentiment_page_shows_its_licence_without_the_non_commercial_warning(client, db):
    from tasks.services import ensure_builtin_task

    task = ensure_builtin_task("sentiment")
    page = client.get(reverse("tasks:detail", args=[task.slug])).content.decode()
    assert "CC BY 4.0 (DynaSent" in page and "non-commercial" not in page


def test_br_tags_become_newlines():
    from annotation.importers.anli import br_to_newline

    assert br_to_newline("High Dive<br>Jen climbed.") == "High Dive\nJen climbed."
    assert br_to_newline("a<BR>b<br/>c<br />d<Br  />e") == "a\nb\nc\nd\ne"
    assert br_to_newline("x.<br>") == "x.\n"
    # Other tags are the premise as written (wiki markup), not line breaks.
    assert br_to_newline("<ref>a</ref> <nowiki>b</nowiki> <bra> <b>c</b>") == (
        "<ref>a</ref> <nowiki>b</nowiki> <bra> <b>c</b>"
    )


def test_no_br_tag_is_left_in_the_whole_files(anli_dir):
    rows = read_anli(anli_dir, ImportReport(source="ANLI"), limits=(100_000, 1000))
    texts = [row.context["premise"] for row in rows] + [row.inputs["hypothesis"] for row in rows]
    assert not [t for t in texts if "<br" in t.lower()]
    # 346 rows had <br> or <BR> in their premise (the source has no other newline in a premise).
    with_newline = [row for row in rows if "\n" in row.context["premise"]]
    assert len(with_newline) == 346
    assert {row.round_number for row in with_newline} == {1, 2, 3}
    assert sum(row.round_number == 3 for row in with_newline) == 342


def _write_anli(folder, rows_by_file):
    import gzip

    from annotation.importers.anli import FILES

    folder.mkdir(parents=True, exist_ok=True)
    for name, _, _ in FILES:
        with gzip.open(folder / name, "wt", encoding="utf-8") as handle:
            for record in rows_by_file.get(name, []):
                handle.write(json.dumps(record) + "\n")


def test_import_stores_newlines_and_a_re_import_keeps_stored_text(nli_task, tmp_path):
    record = {
        "uid": "u-1",
        "context": "Title<br>First line.<BR/>Second line.",
        "hypothesis": "It has two lines.",
        "label": "e",
        "model_label": "n",
        "genre": "fiction",
        "reason": "Two<br />lines.",
        "tag": "r3_dev",
    }
    folder = tmp_path / "anli"
    _write_anli(folder, {"anli_v0.1_R3_dev.jsonl.gz": [record]})
    report = import_anli(task=nli_task, data_dir=folder)
    assert (report.created, report.skipped) == (1, [])
    example = Example.objects.get(external_id="u-1")
    assert example.context.data == {"premise": "Title\nFirst line.\nSecond line."}
    assert example.metadata["reason"] == "Two\nlines."
    # The create page (linebreaksbr) shows the lines, not a literal tag.
    assert "<br>" not in json.dumps(example.context.data)

    # The source changes the text of the same uid: the stored example (and what datasets and scores were
    # built from) is kept, and the report says so; changed metadata is refreshed.
    changed = {**record, "hypothesis": "It has three lines.", "reason": "Changed."}
    _write_anli(folder, {"anli_v0.1_R3_dev.jsonl.gz": [changed]})
    again = import_anli(task=nli_task, data_dir=folder)
    assert (again.created, again.already_present, again.metadata_updated) == (0, 1, 1)
    assert again.kept_as_stored == ["anli_v0.1_R3_dev.jsonl.gz line 1: u-1 in round 3"]
    assert "kept as stored (differs in the source): anli_v0.1_R3_dev.jsonl.gz line 1: u-1 in round 3" in str(
        again
    )
    example.refresh_from_db()
    assert example.inputs == {"hypothesis": "It has two lines."}
    assert example.metadata["reason"] == "Changed."
