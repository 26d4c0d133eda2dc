"""Natural data beside adversarial data: the mixing share, the training request, the model card, the admin
form and the importers of the shared natural sets."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.test import Client
from django.urls import reverse

from annotation.models import Example
from cycle.admin import TrainNextTargetForm
from cycle.models import TrainingJob
from cycle.natural_sets import import_natural_set
from cycle.training.examples import LabelledTexts
from cycle.training.natural import mix_natural, natural_count
from cycle.training.planning import TargetTrainingError, default_model_name
from cycle.training.requests import request_training
from cycle.training.targets import train_target_for_rounds
from engine.runtime.classifier import clear_cache
from leaderboards.models import Dataset, DatasetItem
from models_registry.models import RegisteredModel
from models_registry.selectors import card_training_text
from tests.helpers.toy_data import LABELS, TEXTS

NATURAL = [
    ("what a lovely morning", "not-hateful"),
    ("the team played well", "not-hateful"),
    ("i hate all immigrants 🐀", "hateful"),  # also a training text: never added twice
    ("people like that should be locked up", "hateful"),
    ("my neighbours are friendly", "not-hateful"),
]


def natural_dataset(task, slug="natural-set", natural=True, rows=NATURAL) -> Dataset:
    dataset = Dataset.objects.create(
        task=task,
        slug=slug,
        name="Natural set",
        kind=Dataset.Kind.IMPORTED,
        access=Dataset.Access.HIDDEN,
        source="example.org/natural@abc",
        licence="CC BY 4.0",
        metadata={"natural": natural},
    )
    DatasetItem.objects.bulk_create(
        DatasetItem(dataset=dataset, external_id=str(i), inputs={"statement": t}, target=y)
        for i, (t, y) in enumerate(rows)
    )
    return dataset


@pytest.mark.parametrize(
    ("share", "adversarial", "expected"),
    [(0.25, 300, 100), (0.5, 7, 7), (0.0, 50, 0), (0.2, 6, 2), (0.9, 10, 90)],
)
def test_natural_count_makes_the_share_of_the_whole_training_set(share, adversarial, expected):
    # n / (n + a) = s  =>  n = s a / (1 - s): 0.25 * 300 / 0.75 = 100; 0.2 * 6 / 0.8 = 1.5 -> 2.
    assert natural_count(share, adversarial) == expected


@pytest.mark.parametrize("share", [-0.1, 0.95, 1.0])
def test_a_share_outside_the_range_is_refused(share):
    with pytest.raises(TargetTrainingError, match="between 0 and 0.9"):
        natural_count(share, 10)


def test_mixing_adds_the_share_from_new_texts_only_with_the_seed(hate_task):
    natural_dataset(hate_task)
    train = LabelledTexts(texts=list(TEXTS[:6]), labels=list(LABELS[:6]), skipped=1)
    mixed, info = mix_natural(hate_task, train, dataset="natural-set", share=0.25, seed=0)
    # 0.25 * 6 / 0.75 = 2 natural texts, drawn from the 4 not already in the training set.
    assert info.n == 2 and info.available == 4
    assert info.share == 0.25  # 2 of 8
    assert len(mixed) == 8 and mixed.texts[:6] == TEXTS[:6] and mixed.skipped == 1
    added = set(zip(mixed.texts[6:], mixed.labels[6:], strict=True))
    assert added <= set(NATURAL) - {NATURAL[2]}
    assert len(train) == 6  # the input is not changed
    again, _ = mix_natural(hate_task, train, dataset="natural-set", share=0.25, seed=0)
    assert again.texts == mixed.texts
    assert (info.source, info.licence, info.name) == ("example.org/natural@abc", "CC BY 4.0", "Natural set")


def test_a_dataset_with_too_few_texts_gives_all_it_has_and_says_the_real_share(hate_task):
    natural_dataset(hate_task)
    train = LabelledTexts(texts=list(TEXTS[:6]), labels=list(LABELS[:6]))
    mixed, info = mix_natural(hate_task, train, dataset="natural-set", share=0.9, seed=1)
    # 0.9 * 6 / 0.1 = 54 asked for, 4 eligible: 4 of 10.
    assert (info.n, info.share, info.share_requested) == (4, 0.4, 0.9)
    assert len(mixed) == 10


def test_unknown_or_adversarial_datasets_are_refused(hate_task):
    natural_dataset(hate_task, slug="round-ish", natural=False)
    train = LabelledTexts(texts=list(TEXTS[:4]), labels=list(LABELS[:4]))
    with pytest.raises(TargetTrainingError, match="has no dataset 'nope'"):
        mix_natural(hate_task, train, dataset="nope", share=0.2, seed=0)
    with pytest.raises(TargetTrainingError, match="'round-ish' is not marked as natural data"):
        mix_natural(hate_task, train, dataset="round-ish", share=0.2, seed=0)


def test_default_names_say_the_backbone_and_the_share():
    assert default_model_name([2, 1], "quick") == "minilm-quick-r1-2"
    assert default_model_name([1, 2], "finetune", "mpnet", 0.25) == "mpnet-finetune-r1-2-nat25"


@pytest.fixture
def hate_rounds(hate_task, hate_round):
    for split, texts, labels in (("train", TEXTS, LABELS), ("dev", TEXTS[::2], LABELS[::2])):
        Example.objects.bulk_create(
            Example(
                round=hate_round,
                inputs={"statement": t},
                target=y,
                split=split,
                source=Example.Source.IMPORTED,
                status=Example.Status.VALIDATED_CORRECT,
                external_id=f"{split}-{i}",
            )
            for i, (t, y) in enumerate(zip(texts, labels, strict=True))
        )
    return hate_round


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def test_a_target_trained_with_natural_data_says_so_on_its_card(hate_task, hate_rounds, tiny_backbone_dir):
    natural_dataset(hate_task)
    model = train_target_for_rounds(
        task=hate_task,
        rounds=[1],
        backbone_path=tiny_backbone_dir,
        natural="natural-set",
        natural_share=0.2,
        eval_datasets=(),
    )
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.name == "minilm-quick-r1-nat20"
    card = model.card
    # 20 training texts (TEXTS holds the first natural text already): 0.2 * 20 / 0.8 = 5 asked, 4 new.
    assert card["training"]["natural"] == {
        "dataset": "natural-set",
        "name": "Natural set",
        "share_requested": 0.2,
        "share": round(4 / 24, 4),
        "n": 4,
        "available": 4,
        "source": "example.org/natural@abc",
        "licence": "CC BY 4.0",
    }
    assert card["training"]["n_train"] == 24
    assert card["training"]["per_round"]["1"]["train"] == 20
    assert "with natural data: 4 texts of Natural set (17% of the training set)" in card["description"]
    training = (
        "Hate speech round(s) 1; 24 training examples, of which 4 natural texts of Natural set (17% of the "
        "training set; 20% asked, 4 available); source example.org/natural@abc, licence CC BY 4.0"
    )
    assert card_training_text(model) == training
    page = Client().get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    assert training in page
    assert "with natural data: 4 texts of Natural set" in page


def test_a_target_without_natural_data_records_none(hate_task, hate_rounds, tiny_backbone_dir):
    model = train_target_for_rounds(
        task=hate_task, rounds=[1], backbone_path=tiny_backbone_dir, eval_datasets=()
    )
    assert model.card["training"]["natural"] is None
    assert "natural" not in model.card["description"]


def test_a_qa_target_refuses_mpnet_and_natural_data(db):
    from tasks.services import ensure_builtin_task, ensure_round

    qa = ensure_builtin_task("qa")
    ensure_round(task=qa, number=1)
    with pytest.raises(TargetTrainingError, match="extractive QA targets train on the minilm backbone"):
        train_target_for_rounds(task=qa, rounds=[1], backbone="mpnet")


def test_a_training_request_records_backbone_and_natural_data(hate_task, hate_round, settings):
    settings.DYNABENCH_JOBS_SYNC = False
    natural_dataset(hate_task)
    with transaction.atomic():
        job = request_training(
            task=hate_task, rounds=[1], backbone="mpnet", natural_dataset="natural-set", natural_share=0.3
        )
    job.refresh_from_db()
    assert (job.backbone, job.natural_dataset, job.natural_share) == ("mpnet", "natural-set", 0.3)


def test_a_training_request_refuses_bad_choices(hate_task, hate_round):
    natural_dataset(hate_task)
    natural_dataset(hate_task, slug="not-natural", natural=False)
    with pytest.raises(TargetTrainingError, match="unknown backbone 'roberta'"):
        request_training(task=hate_task, rounds=[1], backbone="roberta")
    with pytest.raises(TargetTrainingError, match="has no natural dataset 'not-natural'"):
        request_training(task=hate_task, rounds=[1], natural_dataset="not-natural", natural_share=0.2)
    with pytest.raises(TargetTrainingError, match="between 0 and 0.9"):
        request_training(task=hate_task, rounds=[1], natural_dataset="natural-set", natural_share=0.95)
    assert not TrainingJob.objects.exists()


def test_the_admin_form_offers_backbones_and_the_tasks_natural_sets(hate_task, hate_round, nli_task):
    natural_dataset(hate_task)
    form = TrainNextTargetForm(hate_task)
    assert [c for c, _ in form.fields["backbone"].choices] == ["minilm", "mpnet"]
    assert form.fields["natural_dataset"].choices == [("", "None"), ("natural-set", "Natural set (5 texts)")]
    data = {"rounds": ["1"], "recipe": "quick", "backbone": "mpnet", "natural_dataset": "natural-set"}
    form = TrainNextTargetForm(hate_task, {**data, "natural_share": "0", "promote": "none"})
    assert not form.is_valid()
    assert "Give the share of natural texts" in str(form.errors["natural_share"])
    form = TrainNextTargetForm(hate_task, {**data, "natural_share": "0.25", "promote": "none"})
    assert form.is_valid(), form.errors
    # A share out of range gets its own error only; a share without a dataset is refused, not ignored.
    form = TrainNextTargetForm(hate_task, {**data, "natural_share": "5", "promote": "none"})
    assert form.errors["natural_share"] == ["Ensure this value is less than or equal to 0.9."]
    no_dataset = {**data, "natural_dataset": "", "natural_share": "0.5", "promote": "none"}
    form = TrainNextTargetForm(hate_task, no_dataset)
    assert form.errors["natural_share"] == [
        "Choose the natural dataset this share is of, or leave the share blank."
    ]
    form = TrainNextTargetForm(hate_task, {**no_dataset, "natural_share": ""})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["natural_share"] == 0.0
    from tasks.services import ensure_round

    ensure_round(task=nli_task, number=1)
    form = TrainNextTargetForm(
        nli_task,
        {"rounds": ["1"], "recipe": "quick", "backbone": "mpnet", "natural_share": "", "promote": "none"},
    )
    assert not form.is_valid()
    assert "MPNet takes single texts only" in str(form.errors["backbone"])


# --- the shared natural sets (../shared/data) -------------------------------------------------------------

DATA = Path(django_settings.DYNABENCH_DATA_DIR)


def test_sst3_is_imported_with_the_three_labels(sentiment_task):
    report = import_natural_set(task=sentiment_task, data_dir=DATA)
    dataset = Dataset.objects.get(task=sentiment_task, slug="sst-3-validated")
    assert (dataset.kind, dataset.access, dataset.metadata["natural"]) == ("imported", "hidden", True)
    # The data README: positive 433, negative 421, neutral 75 (mixed 108 and null 64 left out), and one
    # duplicated sentence ("Hey Arnold!", neutral), kept once.
    assert report.breakdown == {"positive": 433, "negative": 421, "neutral": 74}
    assert sum("repeated sentence" in line for line in report.skipped) == 1
    assert dataset.items.count() == 928
    assert not dataset.items.filter(inputs__statement__contains="-LRB-").exists()
    again = import_natural_set(task=sentiment_task, data_dir=DATA)
    assert (again.created, again.already_present) == (0, 928)


def test_hatemoji_originals_are_the_train_splits_original_entries(hate_task):
    import csv

    with (DATA / "hatemoji_build" / "train.csv").open(encoding="utf-8", newline="") as handle:
        originals = [r for r in csv.DictReader(handle) if r["set"] == "original" and r["split"] == "train"]
    report = import_natural_set(task=hate_task, data_dir=DATA)
    dataset = Dataset.objects.get(task=hate_task, slug="hatemoji-build-originals")
    assert dataset.items.count() == len(originals) == report.created
    first = dataset.items.get(external_id=originals[0]["entry_id"])
    assert first.inputs == {"statement": originals[0]["text"]}


def test_a_task_without_a_natural_set_is_refused(nli_task):
    with pytest.raises(ValueError, match="no natural dataset is known for task 'nli'"):
        import_natural_set(task=nli_task, data_dir=DATA)
