"""A text's prediction depends on the text alone, not on the texts or the padding beside it in a batch:
int8 graphs (activations quantized with one scale per run) run row by row, and a span model's answer
probability is taken over its window's own tokens."""

from __future__ import annotations

import numpy as np
import pytest

from engine.runtime import onnx_export, onnx_graph, vector_cache
from engine.runtime.classifier import clear_cache, get_classifier
from engine.runtime.int8_plans import ALL
from engine.runtime.runtimes import ONNX_INT8, TORCH

pytestmark = pytest.mark.onnx

TEXT = "you people are all the same 😡"
# Longer (more padding for TEXT) and with larger activations than TEXT alone.
NEIGHBOURS = ["ok", "WHAT " * 60 + "!!! ☠️☠️☠️ " * 20, "مرحبا بكم " * 15]


@pytest.fixture
def int8_classifier(tiny_model_dir):
    onnx_export.export_onnx(tiny_model_dir, get_classifier(tiny_model_dir), ALL)
    clear_cache(tiny_model_dir)
    yield get_classifier(tiny_model_dir, runtime=ONNX_INT8)
    clear_cache(tiny_model_dir)


def test_an_int8_label_is_the_same_alone_and_in_any_batch(int8_classifier, settings):
    settings.DYNABENCH_ONNX_BULK_WORKERS = 2
    with vector_cache.uncached():
        alone = int8_classifier.predict_batch([TEXT])[0]["probabilities"]
        for neighbour in NEIGHBOURS:
            in_batch = int8_classifier.predict_batch([TEXT, neighbour])[0]["probabilities"]
            # The same run on the same tokens; ONNX Runtime's threads may sum in another order (a few 1e-8
            # apart, seen under load), far under what a batch-wide int8 scale changes (the next test).
            assert in_batch == pytest.approx(alone, abs=1e-6)
        with onnx_graph.bulk():
            batched = int8_classifier.predict_batch([TEXT, *NEIGHBOURS] * 3, batch_size=4)
    assert all(
        out["probabilities"] == pytest.approx(alone, abs=1e-6) for out in batched[:: len(NEIGHBOURS) + 1]
    )


def test_an_int8_graph_in_one_batch_would_not_be(int8_classifier):
    """Why rows run alone: the same graph fed the whole padded batch at once gives TEXT other vectors
    (if this ever stops failing, ONNX Runtime quantizes per row and row-by-row could go)."""
    encoded = int8_classifier.tokenizer(
        [TEXT, NEIGHBOURS[1]], padding=True, truncation=True, max_length=128, return_tensors="np"
    )
    feeds = {k: encoded[k].astype(np.int64) for k in ("input_ids", "attention_mask")}
    graph = int8_classifier.graph
    together = graph._session.run(None, feeds)[0][0]
    row_by_row = graph.run(feeds)[0][0]
    alone = graph.run({k: v[:1, : int(feeds["attention_mask"][0].sum())] for k, v in feeds.items()})[0][0]
    assert np.array_equal(row_by_row, alone)
    assert not np.allclose(together, alone, atol=1e-6)


def test_a_span_graph_row_by_row_keeps_the_batch_width(tiny_qa_model_dir):
    from engine.runtime.qa_inference import SpanPredictor

    predictor = SpanPredictor(tiny_qa_model_dir)
    onnx_export.export_onnx(tiny_qa_model_dir, predictor, ALL)
    graph = onnx_graph.OnnxGraph(tiny_qa_model_dir, ONNX_INT8)
    encoded = predictor.tokenizer(
        ["Who?", "What happened there in the end?"],
        ["Ada wrote it.", "A long passage that goes on " * 5],
        padding=True,
        return_tensors="np",
    )
    feeds = {k: encoded[k].astype(np.int64) for k in graph.inputs}
    start, end = graph.run(feeds)
    width = feeds["input_ids"].shape[1]
    short = int(feeds["attention_mask"][0].sum())
    assert start.shape == end.shape == (2, width) and short < width
    assert (start[0, short:] == onnx_graph.PADDED_LOGIT).all()
    alone = graph.run({k: v[:1, :short] for k, v in feeds.items()})
    assert np.array_equal(start[0, :short], alone[0][0]) and np.array_equal(end[0, :short], alone[1][0])


@pytest.mark.parametrize("runtime", [TORCH])
def test_a_span_answer_and_its_score_are_the_same_alone_and_beside_a_longer_window(
    tiny_qa_model_dir, runtime
):
    predictor = get_classifier(tiny_qa_model_dir, runtime=runtime)
    pair = ("Ada Lovelace wrote the first program in 1843.", "Who wrote the first program?")
    longer = ("A much longer passage about engines, notes and numbers. " * 8, "What is it about?")
    alone = predictor.predict_batch([pair])[0]
    beside = predictor.predict_batch([pair, longer])[0]
    assert (beside["answer"], beside["answer_start"]) == (alone["answer"], alone["answer_start"])
    # Before, the softmax ran over the padded width too and the score moved with the neighbour.
    assert beside["score"] == pytest.approx(alone["score"], abs=1e-6)
