"""Training recipes on the tiny backbone: quick and finetune, determinism, roundtrip, errors."""

from __future__ import annotations

import json

import pytest

from engine.runtime.classifier import clear_cache, get_classifier
from engine.runtime.weights import count_parameters
from engine.training.classifier import TrainingError, TrainingResult, train_classifier
from tests.helpers.toy_data import LABELS, TEXTS

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


PAIR_TEXTS = [(t, "they are our friends") for t in TEXTS]


def test_pair_texts_train_a_pair_model_that_serves_its_dev_accuracy(tiny_backbone_dir, tmp_path):
    result = train_classifier(
        train_texts=PAIR_TEXTS,
        train_labels=LABELS,
        dev_texts=PAIR_TEXTS[::2],
        dev_labels=LABELS[::2],
        labels=TASK_LABELS,
        output_dir=tmp_path / "pair",
        backbone_path=tiny_backbone_dir,
    )
    config = json.loads((result.path / "config.json").read_text())
    assert config["pooling"] == "pair" and result.details["pooling"] == "pair"
    # Tiny backbone hidden size 32: the head reads 4 * 32 features; the encoder is the backbone's.
    assert result.parameter_count == count_parameters(tiny_backbone_dir) + 2 * 4 * 32 + 2
    predictions = get_classifier(result.path).predict_batch(PAIR_TEXTS[::2])
    accuracy = sum(p["label"] == y for p, y in zip(predictions, LABELS[::2], strict=True)) / 10
    assert accuracy == pytest.approx(result.dev_accuracy, abs=1e-6)


def test_single_texts_keep_mean_pooling_and_its_head(tiny_backbone_dir, tmp_path):
    result = _train(tiny_backbone_dir, tmp_path / "mean", "quick")
    assert json.loads((result.path / "config.json").read_text())["pooling"] == "mean"
    assert result.parameter_count == count_parameters(tiny_backbone_dir) + 2 * 32 + 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"pooling": "pair"}, "needs \\(a, b\\) text pairs"), ({"pooling": "max"}, "unknown pooling 'max'")],
)
def test_bad_pooling_is_refused(tiny_backbone_dir, tmp_path, kwargs, message):
    with pytest.raises(TrainingError, match=message):
        _train(tiny_backbone_dir, tmp_path / "x", "quick", **kwargs)


def test_embedding_cache_is_lru_within_its_byte_bound():
    import torch

    from engine.runtime.embeddings import EmbeddingCache

    # Each entry: 4 float32 (16 bytes) + 1 character + 256 overhead = 273 bytes; room for two.
    cache = EmbeddingCache(max_bytes=2 * 273 + 100)
    scope = ("backbone",)
    cache.put(scope, "a", torch.ones(4))
    cache.put(scope, ("b", ""), torch.full((4,), 2.0))
    assert cache.nbytes == 546 and len(cache) == 2
    assert cache.get(scope, "a").tolist() == [1.0] * 4  # "a" is now the most recently used
    cache.put(scope, "c", torch.full((4,), 3.0))  # evicts ("b", "")
    assert cache.get(scope, ("b", "")) is None
    assert cache.get(scope, "a") is not None and cache.get(scope, "c") is not None
    assert cache.get(("other backbone",), "a") is None
    assert (cache.hits, cache.misses, len(cache), cache.nbytes) == (3, 2, 2, 546)
    EmbeddingCache(max_bytes=0).put(scope, "a", torch.ones(4))  # too big for the bound: not stored
    cache.clear()
    assert (len(cache), cache.nbytes, cache.hits) == (0, 0, 0)


def test_a_second_quick_training_reuses_the_embeddings(tiny_backbone_dir, tmp_path):
    from engine.runtime.embeddings import EMBEDDING_CACHE

    EMBEDDING_CACHE.clear()
    first = _train(tiny_backbone_dir, tmp_path / "first", "quick")
    # 20 train texts embedded; the 10 dev texts are train texts: found in the cache.
    assert (EMBEDDING_CACHE.hits, EMBEDDING_CACHE.misses, len(EMBEDDING_CACHE)) == (10, 20, 20)
    messages = []
    second = _train(tiny_backbone_dir, tmp_path / "second", "quick", progress=messages.append)
    assert (EMBEDDING_CACHE.hits, EMBEDDING_CACHE.misses) == (40, 20)
    assert any("train: 20 of 20 vectors from the cache" in m for m in messages)
    assert (first.path / "model.safetensors").read_bytes() == (second.path / "model.safetensors").read_bytes()
    # Another preprocessing (or backbone, pooling) is another scope: the train texts are embedded again.
    _train(tiny_backbone_dir, tmp_path / "no-emoji", "quick", preprocessing={"emoji": "keep"})
    assert (EMBEDDING_CACHE.misses, len(EMBEDDING_CACHE)) == (40, 40)
    EMBEDDING_CACHE.clear()
