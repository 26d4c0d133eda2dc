"""Memory is reproducible: weights bytes plus the peak of live tensor bytes on the longest batch.

Hand values: float32 is 4 bytes, int64 8. The tiny classifier (tests/helpers/tiny_models.py) has hidden size
H = 32, intermediate size I = 64 and 2 layers; its tokenizer makes 3 int64 tensors (input ids, token
types, attention mask) of B x L for a batch of B texts padded to L tokens.
"""

from __future__ import annotations

import pytest
import torch

from engine.runtime.classifier import get_classifier
from engine.runtime.working_memory import LiveTensorBytes, peak_live_bytes
from leaderboards.evaluation import GIB, evaluate_model_on_dataset, longest_batch, working_memory_bytes
from models_registry.services import register_local_model
from tests.factories.leaderboards import make_toy_dataset
from tests.helpers.tiny_models import build_tiny_classifier

HIDDEN, INTER = 32, 64
SENTENCE = "i love all people and they are good friends"  # [CLS] + 9 words + [SEP] = 11 tokens


def test_tracker_counts_storages_created_and_freed():
    with LiveTensorBytes() as tracker:
        a = torch.ones(1000)  # 4,000 bytes live
        b = a * 2  # 8,000: the peak
        del a  # 4,000
        c = b + 1  # 8,000 again
        c.add_(1)  # in place: no new storage
        view = c[:10]  # a view: no new storage
        del b, c, view
    assert tracker.peak == 8000
    assert tracker.allocated == 12000 and tracker.storages == 3
    assert tracker.live == 0


def test_mlp_peak_by_hand():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.ones(4, 8)
    weights = list(mlp.parameters())
    with torch.inference_mode():
        peak = peak_live_bytes(lambda: mlp(x), exclude=weights)
    # x 4x8 (128 bytes, counted when first read) + linear 4x16 (256) + relu 4x16 (256) alive together
    # = 640; then the first 4x16 is dropped and the last linear adds 4x4 (64): 448 < 640.
    assert peak == 128 + 256 + 256


@pytest.fixture
def two_copies(tmp_path):
    a = get_classifier(build_tiny_classifier(tmp_path / "a"))
    b = get_classifier(build_tiny_classifier(tmp_path / "b"))
    return a, b


def test_identical_models_measure_identical_memory_whatever_ran_before(two_copies):
    a, b = two_copies
    texts = [SENTENCE] * 8
    first = working_memory_bytes(a, texts, 8)
    junk = [torch.randn(512, 512) for _ in range(8)]  # a different allocator history
    assert working_memory_bytes(b, texts, 8) == first
    del junk
    assert working_memory_bytes(a, texts, 8) == first


def test_larger_batch_or_longer_inputs_need_more(two_copies):
    a, _ = two_copies
    eight = working_memory_bytes(a, [SENTENCE] * 8, 8)
    # Every tensor of the forward pass has the batch dimension: twice the batch, exactly twice the bytes.
    assert working_memory_bytes(a, [SENTENCE] * 16, 16) == 2 * eight
    assert working_memory_bytes(a, ["hello"] * 8, 8) < eight  # 3 tokens instead of 11


def test_tiny_model_working_memory_within_hand_derived_bounds(two_copies):
    a, _ = two_copies
    B, L = 8, 11
    peak = working_memory_bytes(a, [SENTENCE] * B, B)
    tokens = 3 * 8 * B * L  # the tokenised batch, alive throughout
    # Lower bound: when GELU writes its output (B x L x I), its input (B x L x I) and the attention
    # block's output (B x L x H, needed by the residual add after the FFN) are alive too.
    lower = tokens + 4 * B * L * (2 * INTER + HIDDEN)
    # Upper bound: per layer at most h_in, q, k, v, context, attention out, add, layer norm, FFN out
    # (9 of B x L x H) and 2 of B x L x I, plus all 3 layers' outputs kept (embeddings + 2 layers),
    # plus the B x L x L attention mask (1 byte each).
    upper = tokens + 4 * B * L * (9 * HIDDEN + 2 * INTER + 3 * HIDDEN) + B * L * L
    assert lower <= peak <= upper, (lower, peak, upper)


def test_longest_batch_is_deterministic():
    texts = ["aa", "b", "cccc", "dd", "eee"]
    assert longest_batch(texts, 2) == ["cccc", "eee"]
    assert longest_batch(texts, 3) == ["aa", "cccc", "eee"]  # "aa" before "dd": the earlier of equals
    assert longest_batch(texts, 10) == texts
    assert longest_batch([("premise long", "h"), ("p", "hypothesis")], 1) == [("premise long", "h")]


@pytest.mark.django_db
def test_evaluation_memory_is_weights_plus_working_memory_and_reproducible(hate_task, tmp_path):
    dataset = make_toy_dataset(hate_task, "toy")
    models = [
        register_local_model(
            task=hate_task, name=name, path=str(build_tiny_classifier(tmp_path / name)), card={}
        )
        for name in ("copy-a", "copy-b")
    ]
    results = [evaluate_model_on_dataset(m, dataset, batch_size=8).metrics for m in models]
    assert results[0]["memory"] == results[1]["memory"]
    assert results[0]["working_memory"] == results[1]["working_memory"] > 0
    classifier = get_classifier(models[0].path)
    weights = sum(
        t.numel() * t.element_size() for t in [*classifier.model.parameters(), *classifier.model.buffers()]
    )
    texts = [item.inputs["statement"] for item in dataset.items.order_by("pk")]
    working = working_memory_bytes(classifier, texts, 8)
    assert results[0]["memory"] == pytest.approx((weights + working) / GIB, rel=1e-12)
    assert results[0]["working_memory"] == pytest.approx(working / GIB, rel=1e-12)
    assert "TorchDispatchMode" in results[0]["memory_method"]
    assert results[0]["peak_rss"] > 0 and results[0]["peak_rss_method"]
