"""The ONNX vector cache: models whose ``vectors`` graphs are byte-identical (one frozen encoder, their
own heads) share the encoder's output per row of token ids; each model's answers are its own head's;
pair segments are keyed by their tokens (cut by the pair's truncation), and the evaluation's timed
passes always run the forward."""

from __future__ import annotations

import shutil

import pytest
import torch

from engine.runtime import vector_cache
from engine.runtime.classifier import get_classifier
from engine.runtime.onnx_export import export_onnx
from engine.runtime.onnx_graph import OnnxGraph
from engine.runtime.runtimes import ONNX_FP32, onnx_file

pytestmark = pytest.mark.onnx

TEXTS = ["I loved it", "this is awful 😡", "مرحبا بكم", "a much longer sentence that goes on for a while"]


def _other_head(path, to):
    """A copy of the classifier at ``path`` with the same encoder and another head, exported."""
    from transformers import AutoModelForSequenceClassification

    from engine.runtime import modeling  # noqa: F401  (registers the model type)

    shutil.copytree(path, to, ignore=shutil.ignore_patterns("onnx"))
    model = AutoModelForSequenceClassification.from_pretrained(str(to))
    with torch.no_grad():
        model.classifier.weight.mul_(-3.0)
        model.classifier.bias.add_(0.5)
    model.save_pretrained(str(to))
    export_onnx(to, get_classifier(to))
    return to


@pytest.fixture
def rows_run(monkeypatch):
    """Counts the rows every ONNX graph run encodes."""
    counted = {"rows": 0}
    real = OnnxGraph.run

    def run(self, arrays):
        counted["rows"] += len(arrays["input_ids"])
        return real(self, arrays)

    monkeypatch.setattr(OnnxGraph, "run", run)
    return counted


@pytest.fixture
def two_heads(tiny_model_dir, tmp_path):
    export_onnx(tiny_model_dir, get_classifier(tiny_model_dir))
    other = _other_head(tiny_model_dir, tmp_path / "other-head")
    a, b = onnx_file(tiny_model_dir, ONNX_FP32), onnx_file(other, ONNX_FP32)
    assert a.read_bytes() == b.read_bytes()  # the same encoder exports the same graph, byte for byte
    return tiny_model_dir, other


def test_a_second_head_on_the_same_graph_reads_the_vectors_and_answers_with_its_own_head(two_heads, rows_run):
    first, second = two_heads
    served_first = get_classifier(first, runtime=ONNX_FP32).predict_batch(TEXTS)
    assert rows_run["rows"] == 4 and vector_cache.stats()["misses"] == 4
    served_second = get_classifier(second, runtime=ONNX_FP32).predict_batch(TEXTS)
    assert rows_run["rows"] == 4  # no row encoded again
    assert vector_cache.stats()["hits"] == 4
    # Each answer is its own head's: the same as the model's torch forward, and not the first head's.
    reference = get_classifier(second).predict_batch(TEXTS)
    for ours, ref, theirs in zip(served_second, reference, served_first, strict=True):
        for label, p in ref["probabilities"].items():
            assert ours["probabilities"][label] == pytest.approx(p, abs=1e-5)
        assert ours["probabilities"] != theirs["probabilities"]


def test_uncached_runs_every_row_and_stores_nothing(two_heads, rows_run):
    first, _ = two_heads
    classifier = get_classifier(first, runtime=ONNX_FP32)
    with vector_cache.uncached():
        classifier.predict_batch(TEXTS)
        classifier.predict_batch(TEXTS)
    assert rows_run["rows"] == 8
    assert vector_cache.stats() == {"hits": 0, "misses": 0, "entries": 0, "bytes": 0}
    classifier.predict_batch(TEXTS)
    classifier.predict_batch(TEXTS)
    assert rows_run["rows"] == 12  # cached again outside the block


def test_a_bound_of_zero_turns_the_cache_off(two_heads, rows_run, settings):
    settings.DYNABENCH_VECTOR_CACHE_BYTES = 0
    classifier = get_classifier(two_heads[0], runtime=ONNX_FP32)
    classifier.predict_batch(TEXTS)
    classifier.predict_batch(TEXTS)
    assert rows_run["rows"] == 8


def test_a_premise_cut_by_the_pairs_truncation_is_keyed_by_its_tokens(nli_task, tmp_path, rows_run):
    from tests.models_registry.test_pair_model import _pair_model_dir

    path = _pair_model_dir(tmp_path)
    export_onnx(path, get_classifier(path))
    # A premise longer than the 128-token limit: beside a long hypothesis it is cut shorter.
    premise = " ".join(["the cat sat on the mat"] * 30)
    pairs = [(premise, "ok"), (premise, " ".join(["a dog runs"] * 15)), ("a man sleeps", "ok")]
    served = get_classifier(path, runtime=ONNX_FP32)
    first = served.predict_batch(pairs)
    # 6 segments; "ok" twice with the same tokens: 5 distinct rows, encoded in one run
    assert vector_cache.stats()["entries"] == 5
    again = served.predict_batch(pairs)
    assert rows_run["rows"] == 6  # the second call encoded nothing
    with vector_cache.uncached():
        fresh = served.predict_batch(pairs)
    reference = get_classifier(path).predict_batch(pairs)
    for out in (first, again, fresh):
        for ours, ref in zip(out, reference, strict=True):
            for label, p in ref["probabilities"].items():
                assert ours["probabilities"][label] == pytest.approx(p, abs=1e-5)


def test_cached_vectors_run_the_misses_only_trimmed_to_their_width():
    calls = []

    def run(ids, mask):
        calls.append(ids.shape)
        return ids.sum(axis=1, keepdims=True).astype("float32").repeat(3, axis=1)

    ids = torch.tensor([[5, 6, 7, 0], [5, 6, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    out = vector_cache.cached_vectors(run, "digest-a", ids, mask)
    assert out.tolist() == [[18.0] * 3, [11.0] * 3]
    assert calls == [(2, 3)]  # both rows missing: padded to the longer one (3), not to 4
    ids2 = torch.tensor([[5, 6, 0, 0, 0], [9, 9, 9, 9, 9]])
    mask2 = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]])
    out = vector_cache.cached_vectors(run, "digest-a", ids2, mask2)
    assert out.tolist() == [[11.0] * 3, [45.0] * 3]
    assert calls == [(2, 3), (1, 5)]  # only the new row ran
    vector_cache.cached_vectors(run, "digest-b", ids2, mask2)  # another graph shares nothing
    assert calls[-1] == (2, 5)
    # A row padded on the left cannot be keyed by its tokens alone: the batch runs as it is.
    left = torch.tensor([[0, 0, 5, 6], [5, 6, 7, 8]])
    vector_cache.cached_vectors(run, "digest-a", left, torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]]))
    assert calls[-1] == (2, 4)


@pytest.mark.django_db
def test_the_second_models_evaluation_reads_its_predictions_but_times_the_forward(
    hate_task, two_heads, rows_run, settings
):
    from leaderboards.evaluation import evaluate_model_on_dataset
    from leaderboards.models import Dataset, DatasetItem
    from models_registry.models import RegisteredModel

    dataset = Dataset.objects.create(task=hate_task, slug="shared-graph", name="Shared graph")
    for n, text in enumerate(TEXTS):
        DatasetItem.objects.create(
            dataset=dataset, external_id=f"i{n}", inputs={"statement": text}, target="hateful"
        )
    models = [
        RegisteredModel.objects.create(
            task=hate_task, name=f"head-{n}", path=str(path), status="ready", runtime=ONNX_FP32
        )
        for n, path in enumerate(two_heads)
    ]
    first = evaluate_model_on_dataset(models[0], dataset, passes=3)
    after_first = rows_run["rows"]
    second = evaluate_model_on_dataset(models[1], dataset, passes=3)
    # The second model encodes the warm-up and its three timed passes of the 4 items (the cache is
    # off for them), not its prediction pass, which read the first model's vectors.
    assert rows_run["rows"] - after_first == 4 + 3 * 4
    for evaluation in (first, second):
        # the prediction pass is never a timed pass when it may read the cache: 3 passes were run
        assert len(evaluation.metrics["throughput_passes"]) == 3
        assert evaluation.metrics["throughput_extra_seconds"] > 0
