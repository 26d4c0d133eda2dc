"""Bulk prediction on ONNX Runtime (``onnx_graph.bulk`` / ``map_batches``): the batches of one call run
side by side on a single-threaded session, with the same outputs, in order, in the caller's context."""

from __future__ import annotations

import threading

import pytest

from engine.runtime import onnx_export, onnx_graph, vector_cache
from engine.runtime.classifier import clear_cache, get_classifier
from engine.runtime.runtimes import ONNX_FP32, onnx_file

pytestmark = pytest.mark.onnx

TEXTS = [f"statement number {i} {'with more words ' * (i % 5)}😀" for i in range(40)] + ["مرحبا", "ok"]


@pytest.fixture
def two_workers(settings):
    settings.DYNABENCH_ONNX_BULK_WORKERS = 2


@pytest.fixture
def exported(tiny_model_dir):
    onnx_export.export_onnx(tiny_model_dir, get_classifier(tiny_model_dir))
    clear_cache(tiny_model_dir)
    yield tiny_model_dir
    clear_cache(tiny_model_dir)


def test_outside_bulk_batches_run_in_the_callers_thread(two_workers):
    caller = threading.current_thread().name
    assert onnx_graph.map_batches(lambda b: (b, threading.current_thread().name), [1, 2, 3]) == [
        (1, caller),
        (2, caller),
        (3, caller),
    ]


def test_in_bulk_batches_run_side_by_side_in_order_in_the_callers_context(two_workers):
    def seen(batch):
        return batch * 10, threading.current_thread().name, vector_cache.active() is None

    with onnx_graph.bulk(), vector_cache.uncached():
        results = onnx_graph.map_batches(seen, [1, 2, 3, 4, 5])
    assert [value for value, _, _ in results] == [10, 20, 30, 40, 50]
    assert all(name.startswith("onnx-bulk") for _, name, _ in results)
    assert all(off for _, _, off in results)  # uncached() holds in the workers too
    with onnx_graph.bulk():  # one batch, or one worker: no pool
        assert onnx_graph.map_batches(lambda b: threading.current_thread().name, [1]) == [
            threading.current_thread().name
        ]


def test_the_first_failing_batch_raises_to_the_caller(two_workers):
    def fail_on_three(batch):
        if batch == 3:
            raise ValueError("batch 3 is bad")
        return batch

    with onnx_graph.bulk(), pytest.raises(ValueError, match="batch 3 is bad"):
        onnx_graph.map_batches(fail_on_three, [1, 2, 3, 4])


def test_a_classifier_in_bulk_gives_the_same_outputs_on_a_single_threaded_session(exported, two_workers):
    served = get_classifier(exported, runtime=ONNX_FP32)
    with vector_cache.uncached():
        one_by_one = served.predict_batch(TEXTS, batch_size=4)
        assert served.graph._bulk_session is None  # a lone call never opens it
        with onnx_graph.bulk():
            side_by_side = served.predict_batch(TEXTS, batch_size=4)
    bulk_session = served.graph._bulk_session
    assert bulk_session is not None and bulk_session is not served.graph._session
    assert bulk_session.get_session_options().intra_op_num_threads == 1
    assert [o["label"] for o in side_by_side] == [o["label"] for o in one_by_one]
    for a, b in zip(one_by_one, side_by_side, strict=True):
        for label, p in a["probabilities"].items():
            assert b["probabilities"][label] == pytest.approx(p, abs=1e-6)


def test_a_graph_replaced_on_disk_is_never_opened_as_the_bulk_session(exported, two_workers):
    served = get_classifier(exported, runtime=ONNX_FP32)
    with vector_cache.uncached():
        expected = served.predict_batch(TEXTS, batch_size=4)
        graph_file = onnx_file(exported, ONNX_FP32)
        graph_file.write_bytes(graph_file.read_bytes() + b"\0")  # other bytes, another digest
        with onnx_graph.bulk():
            outputs = served.predict_batch(TEXTS, batch_size=4)
    assert served.graph._bulk_session is served.graph._session  # the bytes it was opened from
    assert [o["label"] for o in outputs] == [o["label"] for o in expected]


def test_in_bulk_the_batch_size_is_split_among_the_workers(two_workers, settings):
    assert onnx_graph.batch_size_for(64) == 64  # outside bulk: as asked
    with onnx_graph.bulk():
        assert onnx_graph.batch_size_for(64) == 32
        assert onnx_graph.batch_size_for(1) == 1
        settings.DYNABENCH_ONNX_BULK_WORKERS = 1
        assert onnx_graph.batch_size_for(64) == 64
