"""Perturbations: deterministic given a seed, label-preserving datasets, unchanged items skipped."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from leaderboards.models import Dataset
from leaderboards.perturbations import FAIRNESS, ROBUSTNESS, perturb, sample_ids, stable_hash
from leaderboards.services import ensure_perturbed_dataset

SAMPLES = [
    "I hate all immigrants, they should go back home.",
    "She said her brother is not a nice man.",
    "Muslims are our friends and neighbours",
    "Mary and John do not like cats",
    "women are awful and terrible",
    "They are rats 🐀 and should die",
]


@pytest.mark.parametrize("kind", [ROBUSTNESS, FAIRNESS])
@pytest.mark.parametrize("text", SAMPLES)
def test_same_seed_same_text(kind, text):
    first = perturb(text, kind, seed=3, item_id="case-1")
    assert perturb(text, kind, seed=3, item_id="case-1") == first


def test_robustness_changes_every_sample_and_different_seeds_give_different_texts():
    for text in SAMPLES:
        outputs = {perturb(text, ROBUSTNESS, seed=seed, item_id="x").text for seed in range(6)}
        assert text not in outputs
        assert len(outputs) > 1, text


def test_different_seeds_differ_for_names_and_identity_terms():
    outputs = {perturb("Mary knows Muslims", FAIRNESS, seed=seed, item_id="x").text for seed in range(8)}
    assert len(outputs) > 1


def test_fairness_swaps_gendered_words_keeping_case():
    result = perturb("She said her brother is not a nice man.", FAIRNESS, seed=0, item_id="1")
    assert result.text == "He said his sister is not a nice woman."
    assert result.operation == "gender"
    assert perturb("Women deserve better", FAIRNESS, seed=0, item_id="1").text == "Men deserve better"
    assert perturb("I told HER", FAIRNESS, seed=0, item_id="1").text == "I told HIM"


def test_fairness_swaps_identity_terms_within_their_category():
    text = perturb("Muslims are muslims", FAIRNESS, seed=1, item_id="1").text
    first, _, second = text.split()
    assert first.lower() == second.lower() != "muslims"  # consistent within one text
    assert first.lower() in {"christians", "jews", "hindus", "buddhists", "sikhs"}
    assert first[0].isupper() and second[0].islower()


def test_nothing_to_swap_leaves_the_text_unchanged():
    result = perturb("what a nice day ☀️", FAIRNESS, seed=0, item_id="1")
    assert (result.text, result.changed) == ("what a nice day ☀️", False)


def test_emoji_and_non_latin_text_survive():
    text = "שלום עולם 🏳️\u200d⚧️ they are great"
    for seed in range(5):
        out = perturb(text, ROBUSTNESS, seed=seed, item_id="x").text
        assert "🏳️\u200d⚧️" in out and out.split()[0][0] == "ש" and out.split()[0][-1] == "ם"


def test_stable_hash_is_sha256_not_the_salted_builtin():
    expected = int.from_bytes(hashlib.sha256(b"case-1").digest()[:8], "big")
    assert stable_hash("case-1") == expected
    code = "from leaderboards.perturbations import perturb; print(perturb('Mary is here', 'fairness', seed=0, item_id='a').text)"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert outs == {perturb("Mary is here", FAIRNESS, seed=0, item_id="a").text + "\n"}


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown perturbation"):
        perturb("x", "sarcasm", seed=0, item_id="1")


def test_sample_ids_is_order_independent():
    ids = [f"id-{i}" for i in range(50)]
    assert sample_ids(ids, 10, seed=4) == sample_ids(list(reversed(ids)), 10, seed=4)
    assert sample_ids(ids, 10, seed=4) != sample_ids(ids, 10, seed=5)
    assert sample_ids(ids[:5], 10, seed=4) == sorted(ids[:5])


@pytest.mark.django_db
@pytest.mark.parametrize("kind", [ROBUSTNESS, FAIRNESS])
def test_perturbed_dataset_keeps_labels_links_items_and_skips_unchanged(toy_dataset, kind):
    perturbed = ensure_perturbed_dataset(toy_dataset, kind, seed=0)
    assert (perturbed.kind, perturbed.access, perturbed.slug) == (
        Dataset.Kind.PERTURBED,
        Dataset.Access.HIDDEN,
        f"toy--{kind}",
    )
    assert perturbed.metadata["source_dataset_id"] == toy_dataset.pk
    assert (perturbed.metadata["perturbation"], perturbed.metadata["seed"]) == (kind, 0)
    sources = {item.pk: item for item in toy_dataset.items.all()}
    items = list(perturbed.items.all())
    assert items
    for item in items:
        source = sources[item.metadata["source_item_id"]]
        assert item.target == source.target  # label kept
        assert item.tags == source.tags
        assert item.inputs["statement"] != source.inputs["statement"]  # unchanged ones skipped
    if kind == FAIRNESS:
        # "what a nice day" and other texts without demographic words have no fairness item.
        assert len(items) < len(sources)
        texts = {sources[i.metadata["source_item_id"]].inputs["statement"] for i in items}
        assert "what a nice day ☀️" not in texts
    else:
        assert len(items) == len(sources)


@pytest.mark.django_db
def test_perturbed_dataset_is_reused_then_rebuilt_when_the_source_grows(toy_dataset):
    from leaderboards.models import DatasetItem

    first = ensure_perturbed_dataset(toy_dataset, ROBUSTNESS, seed=0, sample_size=5)
    ids = sorted(first.items.values_list("pk", flat=True))
    assert len(ids) == 5
    again = ensure_perturbed_dataset(toy_dataset, ROBUSTNESS, seed=0, sample_size=5)
    assert (again.pk, sorted(again.items.values_list("pk", flat=True))) == (first.pk, ids)
    DatasetItem.objects.create(
        dataset=toy_dataset, external_id="new", inputs={"statement": "a new one"}, target="not-hateful"
    )
    rebuilt = ensure_perturbed_dataset(toy_dataset, ROBUSTNESS, seed=0, sample_size=5)
    assert rebuilt.pk == first.pk and rebuilt.metadata["source_items"] == len(ids) + 16
