"""Training recipes on the tiny backbone: quick and finetune, determinism, roundtrip, errors."""

from __future__ import annotations

import json

import pytest

from models_registry.inference import clear_cache, get_classifier
from models_registry.training import TrainingError, TrainingResult, train_classifier
from models_registry.weights import count_parameters

from .toy_data import LABELS, TEXTS

TASK_LABELS = ["hateful", "not-hateful"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _train(backbone, out, recipe, **kwargs) -> TrainingResult:
    return train_classifier(
        train_texts=TEXTS,
        train_labels=LABELS,
        dev_texts=TEXTS[::2],
        dev_labels=LABELS[::2],
        labels=TASK_LABELS,
        output_dir=out,
        recipe=recipe,
        backbone_path=backbone,
        **kwargs,
    )


def test_quick_recipe_trains_saves_and_predicts(tiny_backbone_dir, tmp_path):
    messages = []
    result = _train(tiny_backbone_dir, tmp_path / "quick", "quick", progress=messages.append)
    assert result.recipe == "quick"
    assert (result.n_train, result.n_dev) == (20, 10)
    assert 0.0 <= result.dev_accuracy <= 1.0
    assert result.parameter_count == count_parameters(result.path)
    assert result.details["l2"] > 0
    assert any("logistic head" in m for m in messages)
    config = json.loads((result.path / "config.json").read_text())
    assert config["model_type"] == "dynabench-mean-pool-classifier"
    assert config["preprocessing"]["emoji"] == "names"
    assert config["id2label"] == {"0": "hateful", "1": "not-hateful"}

    classifier = get_classifier(result.path)
    assert classifier.labels == TASK_LABELS
    predictions = classifier.predict_batch(TEXTS[::2])
    # The saved model reproduces the dev accuracy measured during training.
    accuracy = sum(p["label"] == y for p, y in zip(predictions, LABELS[::2], strict=True)) / 10
    assert accuracy == pytest.approx(result.dev_accuracy, abs=1e-6)


def test_quick_recipe_leaves_the_backbone_untouched(tiny_backbone_dir, tmp_path):
    from safetensors.torch import load_file

    result = _train(tiny_backbone_dir, tmp_path / "quick", "quick")
    before = load_file(tiny_backbone_dir / "model.safetensors")
    after = load_file(result.path / "model.safetensors")
    for key, tensor in before.items():
        assert after[f"bert.{key}"].equal(tensor), key


def test_finetune_recipe_one_epoch(tiny_backbone_dir, tmp_path):
    messages = []
    result = _train(
        tiny_backbone_dir,
        tmp_path / "ft",
        "finetune",
        epochs=1,
        batch_size=8,
        lr=1e-3,
        progress=messages.append,
    )
    assert result.recipe == "finetune"
    assert result.details["epochs"] == 1
    assert len(result.details["history"]) == 1
    assert any("epoch 1/1" in m for m in messages)
    outputs = get_classifier(result.path).predict_batch(["i hate 🐀", "i love 🌹"])
    assert all(o["label"] in TASK_LABELS for o in outputs)


@pytest.mark.parametrize("recipe", ["quick", "finetune"])
def test_deterministic_given_the_seed(tiny_backbone_dir, tmp_path, recipe):
    a = _train(tiny_backbone_dir, tmp_path / "a", recipe, epochs=1, seed=3)
    b = _train(tiny_backbone_dir, tmp_path / "b", recipe, epochs=1, seed=3)
    assert (a.path / "model.safetensors").read_bytes() == (b.path / "model.safetensors").read_bytes()
    assert a.dev_accuracy == b.dev_accuracy


def test_without_dev_texts(tiny_backbone_dir, tmp_path):
    result = train_classifier(
        train_texts=TEXTS,
        train_labels=LABELS,
        dev_texts=[],
        dev_labels=[],
        labels=TASK_LABELS,
        output_dir=tmp_path / "nodev",
        backbone_path=tiny_backbone_dir,
    )
    assert result.dev_accuracy is None
    assert result.n_dev == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"recipe": "magic"}, "unknown recipe"),
        ({"train_texts": [], "train_labels": []}, "no training texts"),
        ({"train_labels": ["hateful"] * 19 + ["offensive"]}, r"\['offensive'\] are not among"),
        ({"train_labels": ["hateful"] * 20}, "single class"),
        ({"train_labels": ["hateful"]}, "differ in length"),
    ],
)
def test_bad_input_is_refused(tiny_backbone_dir, tmp_path, kwargs, message):
    args = {
        "train_texts": TEXTS,
        "train_labels": LABELS,
        "dev_texts": [],
        "dev_labels": [],
        "labels": TASK_LABELS,
        "output_dir": tmp_path / "x",
        "backbone_path": tiny_backbone_dir,
        **kwargs,
    }
    with pytest.raises(TrainingError, match=message):
        train_classifier(**args)
