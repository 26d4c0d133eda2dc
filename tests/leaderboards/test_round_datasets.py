"""Round datasets: the split rule, access per split, idempotence."""

from __future__ import annotations

import hashlib

import pytest

from annotation.models import Example
from leaderboards.models import Dataset, DatasetItem
from leaderboards.services import build_round_datasets, hash_split

pytestmark = pytest.mark.django_db


def _example(
    round_, i, *, split="", status=Example.Status.VALIDATED_CORRECT, source=Example.Source.CREATED, **kw
):
    return Example.objects.create(
        round=round_,
        inputs={"statement": f"statement {i}"},
        target="hateful" if i % 2 else "not-hateful",
        split=split,
        source=source,
        status=status,
        **kw,
    )


def test_hash_split_rule():
    # sha256("7") starts with bytes whose big-endian value mod 10 decides: 0-7 train, 8 dev, 9 test.
    for example_id in range(200):
        bucket = int.from_bytes(hashlib.sha256(str(example_id).encode()).digest()[:8], "big") % 10
        assert hash_split(example_id) == ("train" if bucket < 8 else "dev" if bucket == 8 else "test")
    counts = {s: 0 for s in ("train", "dev", "test")}
    for example_id in range(10000):
        counts[hash_split(example_id)] += 1
    assert 7800 < counts["train"] < 8200 and 850 < counts["dev"] < 1150 and 850 < counts["test"] < 1150


def test_round_datasets_from_settled_examples(hate_round):
    imported = [
        _example(hate_round, i, split=split, source=Example.Source.IMPORTED, external_id=f"imp-{i}")
        for i, split in enumerate(["train", "dev", "test", "test"])
    ]
    written = [_example(hate_round, 10 + i) for i in range(40)]
    _example(hate_round, 100, status=Example.Status.PENDING)
    _example(hate_round, 101, status=Example.Status.VALIDATED_INCORRECT)
    _example(hate_round, 102, status=Example.Status.FLAGGED)
    _example(hate_round, 103, is_retracted=True)

    report = build_round_datasets(hate_round)

    datasets = {d.split: d for d in Dataset.objects.filter(round=hate_round)}
    assert {s: (d.slug, d.access, d.kind) for s, d in datasets.items()} == {
        "train": ("round-1-train", Dataset.Access.HIDDEN, Dataset.Kind.ROUND),
        "dev": ("round-1-dev", Dataset.Access.STANDARD, Dataset.Kind.ROUND),
        "test": ("round-1-test", Dataset.Access.SCORING, Dataset.Kind.ROUND),
    }
    where = {item.example_id: item.dataset.split for item in DatasetItem.objects.select_related("dataset")}
    # imported: own split kept; written: hash of the id; unsettled/incorrect/flagged/retracted left out
    assert {e.pk: where[e.pk] for e in imported} == {e.pk: e.split for e in imported}
    assert {e.pk: where[e.pk] for e in written} == {e.pk: hash_split(e.pk) for e in written}
    assert len(where) == 44
    assert sum(report.added.values()) == 44
    item = DatasetItem.objects.get(example=written[0])
    assert (item.external_id, item.inputs, item.target) == (
        f"example-{written[0].pk}",
        written[0].inputs,
        written[0].target,
    )
    assert item.metadata["split_from"] == "hash"


def test_idempotent_and_adds_newly_settled_examples(hate_round):
    _example(hate_round, 1, split="test", source=Example.Source.IMPORTED, external_id="a")
    later = _example(
        hate_round, 2, split="dev", source=Example.Source.IMPORTED, external_id="b", status="pending"
    )
    build_round_datasets(hate_round)
    again = build_round_datasets(hate_round)
    assert sum(again.added.values()) == 0
    assert DatasetItem.objects.count() == 1
    # No dataset is created for a split without items.
    assert set(Dataset.objects.values_list("slug", flat=True)) == {"round-1-test"}
    later.status = Example.Status.VALIDATED_CORRECT
    later.save()
    third = build_round_datasets(hate_round)
    assert third.added == {"train": 0, "dev": 1, "test": 0}
    assert DatasetItem.objects.count() == 2
    assert set(Dataset.objects.values_list("slug", flat=True)) == {"round-1-test", "round-1-dev"}


def test_training_never_takes_an_example_of_the_round_dev_or_test_dataset(hate_task, hate_round):
    from cycle.training.examples import split_examples, training_examples

    written = [_example(hate_round, i) for i in range(60)]
    imported_test = _example(hate_round, 99, split="test", source=Example.Source.IMPORTED, external_id="t")
    build_round_datasets(hate_round)
    in_dataset = {
        split: set(
            DatasetItem.objects.filter(dataset__slug=f"round-1-{split}").values_list("example_id", flat=True)
        )
        for split in ("train", "dev", "test")
    }
    train = set(training_examples(hate_task, [hate_round]).values_list("pk", flat=True))
    assert train == in_dataset["train"]
    assert train == {e.pk for e in written if hash_split(e.pk) == "train"}
    for split in ("dev", "test"):
        assert (
            set(split_examples(hate_task, [hate_round], split).values_list("pk", flat=True))
            == in_dataset[split]
        )
    assert imported_test.pk in in_dataset["test"] and imported_test.pk not in train
    # 60 hashed ids: every split has some, so each comparison above is non-trivial.
    assert all(in_dataset[s] for s in ("train", "dev", "test"))
