"""Pair pooling (u, v, |u - v|, u * v) of the classifier, its save/reload, and the single-text model kept as is.

All on the tiny random BERT of tests/helpers/tiny_models.py: values are checked against the formula computed by
hand on tiny tensors, or against the same model run piece by piece.
"""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, BertTokenizer

from engine.runtime.classifier import InferenceError, clear_cache, get_classifier
from engine.runtime.modeling import (
    MeanPoolClassifier,
    MeanPoolClassifierConfig,
    mean_pool,
    pair_features,
    split_pair,
)
from tests.helpers.tiny_models import build_tiny_classifier

NLI_LABELS = ("entailment", "neutral", "contradiction")
PAIRS = [
    ("the cat is on the mat", "a cat"),
    ("i love my dog", "they hate all dogs and cats"),
    ("hello world", "hello"),
]


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _pair_model_dir(tmp_path, seed: int = 0):
    """A tiny pair classifier saved with save_pretrained: the tiny mean model's layout, 4x wider head."""
    path = build_tiny_classifier(tmp_path / "tiny-mean", labels=NLI_LABELS, seed=seed)
    config = MeanPoolClassifierConfig.from_pretrained(path)
    config.pooling = "pair"
    torch.manual_seed(seed)
    model = MeanPoolClassifier(config)
    out = tmp_path / "tiny-pair"
    model.save_pretrained(out)
    BertTokenizer.from_pretrained(path).save_pretrained(out)
    return out


def test_pair_features_by_hand():
    u = torch.tensor([[1.0, 2.0]])
    v = torch.tensor([[3.0, -1.0]])
    # (u, v, |u - v|, u * v) = (1, 2), (3, -1), (2, 3), (3, -2)
    assert pair_features(u, v).tolist() == [[1.0, 2.0, 3.0, -1.0, 2.0, 3.0, 3.0, -2.0]]
    assert pair_features(torch.zeros(3, 5), torch.ones(3, 5)).shape == (3, 20)
    with pytest.raises(ValueError, match="differ in shape"):
        pair_features(torch.zeros(2, 3), torch.zeros(2, 4))


def test_split_pair_gives_the_two_texts_encoded_alone(tiny_model_dir):
    tokenizer = BertTokenizer.from_pretrained(tiny_model_dir)
    a = [p for p, _ in PAIRS]
    b = [h for _, h in PAIRS]
    joint = tokenizer(a, b, padding=True, return_tensors="pt")
    (ids_a, mask_a), (ids_b, mask_b) = split_pair(
        joint["input_ids"], joint["attention_mask"], joint["token_type_ids"]
    )
    alone_a = tokenizer(a, padding=True, return_tensors="pt")
    alone_b = tokenizer(b, padding=True, return_tensors="pt")
    assert ids_a.equal(alone_a["input_ids"]) and mask_a.equal(alone_a["attention_mask"])
    assert ids_b.equal(alone_b["input_ids"]) and mask_b.equal(alone_b["attention_mask"])

    single = tokenizer(["hello world"], return_tensors="pt")
    with pytest.raises(ValueError, match="no second text"):
        split_pair(single["input_ids"], single["attention_mask"], single["token_type_ids"])


def test_pair_logits_are_the_head_on_pair_features_of_separate_encodings(tmp_path):
    path = _pair_model_dir(tmp_path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    tokenizer = BertTokenizer.from_pretrained(path)
    assert model.config.pooling == "pair"
    assert model.classifier.weight.shape == (3, 4 * 32)

    def sentence_vectors(texts):
        encoded = tokenizer(texts, padding=True, return_tensors="pt")
        hidden = model.bert(**encoded).last_hidden_state
        return mean_pool(hidden, encoded["attention_mask"])

    with torch.no_grad():
        u = sentence_vectors([p for p, _ in PAIRS])
        v = sentence_vectors([h for _, h in PAIRS])
        expected = pair_features(u, v) @ model.classifier.weight.T + model.classifier.bias
        joint = tokenizer([p for p, _ in PAIRS], [h for _, h in PAIRS], padding=True, return_tensors="pt")
        logits = model(**joint).logits
    assert logits.shape == (3, 3)
    assert torch.allclose(logits, expected, atol=1e-5)


def test_pair_model_saves_reloads_and_predicts_the_same(tmp_path):
    path = _pair_model_dir(tmp_path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    tokenizer = BertTokenizer.from_pretrained(path)
    joint = tokenizer([p for p, _ in PAIRS], [h for _, h in PAIRS], padding=True, return_tensors="pt")
    with torch.no_grad():
        before = model(**joint).logits
    again_dir = tmp_path / "again"
    model.save_pretrained(again_dir)
    tokenizer.save_pretrained(again_dir)
    assert json.loads((again_dir / "config.json").read_text())["pooling"] == "pair"
    reloaded = AutoModelForSequenceClassification.from_pretrained(again_dir).eval()
    with torch.no_grad():
        after = reloaded(**joint).logits
    assert after.equal(before)

    # Served by the platform's classifier unchanged: same probabilities, whatever the batch.
    classifier = get_classifier(again_dir)
    served = classifier.predict_batch(PAIRS, batch_size=2)
    probabilities = torch.softmax(before, dim=-1)
    for row, out in zip(probabilities.tolist(), served, strict=True):
        assert [out["probabilities"][label] for label in NLI_LABELS] == pytest.approx(row, abs=1e-5)
    with pytest.raises(InferenceError, match="no second text"):
        classifier.predict_batch(["hello world"])


def test_single_text_model_is_unchanged_and_old_configs_load_as_mean(tmp_path):
    path = build_tiny_classifier(tmp_path / "tiny", seed=2)
    config = json.loads((path / "config.json").read_text())
    assert config["pooling"] == "mean"
    # A model saved before the key existed: the same config without it.
    del config["pooling"]
    (path / "config.json").write_text(json.dumps(config))
    assert AutoConfig.from_pretrained(path).pooling == "mean"
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    assert model.classifier.weight.shape == (2, 32)
    assert [name for name, _ in model.named_parameters()][-2:] == ["classifier.weight", "classifier.bias"]

    tokenizer = BertTokenizer.from_pretrained(path)
    texts = ["i love my dog", "hello world"]
    encoded = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model.bert(**encoded).last_hidden_state
        expected = mean_pool(hidden, encoded["attention_mask"]) @ model.classifier.weight.T
        expected = expected + model.classifier.bias
        assert torch.allclose(model(**encoded).logits, expected, atol=1e-6)


def test_unknown_pooling_is_refused():
    with pytest.raises(ValueError, match="unknown pooling 'max'"):
        MeanPoolClassifierConfig(pooling="max")
