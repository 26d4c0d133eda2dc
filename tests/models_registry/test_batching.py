"""Batched live inference (engine/runtime/batching.py): requests that arrive while a forward runs are
gathered into the next one, each gets its own outputs, one bad input fails alone, a stuck model's batcher
is replaced, and concurrent predictions through ``inference.predict`` equal the one-at-a-time answers."""

from __future__ import annotations

import threading
import time

import pytest

from engine.runtime import batching, classifier
from engine.runtime.model_files import InferenceError
from models_registry import inference


class Gate:
    """A run function that records each call's texts; the first call waits until ``open()``."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[list[str]] = []
        self.first_started = threading.Event()
        self._open = threading.Event()
        self.fail_on = fail_on

    def open(self):
        self._open.set()

    def __call__(self, texts):
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            self.first_started.set()
            assert self._open.wait(5)
        if self.fail_on is not None and self.fail_on in texts:
            raise InferenceError(f"cannot read {self.fail_on!r}")
        return [{"label": text.upper()} for text in texts]


def test_requests_queued_during_a_forward_share_the_next_one():
    gate = Gate()
    batcher = batching.Batcher("m", gate, window=0.0, max_items=32)
    first = batcher.submit(["a"])
    assert gate.first_started.wait(5)
    waiting = [batcher.submit([f"b{n}", f"c{n}"]) for n in range(5)]
    gate.open()
    assert first.result(5) == [{"label": "A"}]
    for n, future in enumerate(waiting):
        assert future.result(5) == [{"label": f"B{n}"}, {"label": f"C{n}"}]
    # One forward for the lone first request, then one for the five that queued behind it (10 texts).
    assert gate.calls == [["a"], ["b0", "c0", "b1", "c1", "b2", "c2", "b3", "c3", "b4", "c4"]]


def test_a_batch_holds_at_most_max_items_texts():
    gate = Gate()
    batcher = batching.Batcher("m", gate, window=0.0, max_items=4)
    batcher.submit(["a"])
    assert gate.first_started.wait(5)
    waiting = [batcher.submit([f"t{n}"]) for n in range(6)]
    gate.open()
    for future in waiting:
        future.result(5)
    assert [len(call) for call in gate.calls] == [1, 4, 2]


def test_the_window_waits_for_a_request_that_comes_just_after():
    gate = Gate()
    gate.open()
    batcher = batching.Batcher("m", gate, window=0.5, max_items=32)
    one = batcher.submit(["a"])
    time.sleep(0.05)  # well inside the 0.5 s window
    two = batcher.submit(["b"])
    assert one.result(5) == [{"label": "A"}] and two.result(5) == [{"label": "B"}]
    assert gate.calls == [["a", "b"]]


def test_one_bad_input_fails_alone():
    gate = Gate(fail_on="bad")
    batcher = batching.Batcher("m", gate, window=0.0, max_items=32)
    first = batcher.submit(["warm"])
    assert gate.first_started.wait(5)
    good, bad, other = batcher.submit(["good"]), batcher.submit(["bad"]), batcher.submit(["other"])
    gate.open()
    assert first.result(5) == [{"label": "WARM"}]
    assert good.result(5) == [{"label": "GOOD"}]
    assert other.result(5) == [{"label": "OTHER"}]
    with pytest.raises(InferenceError, match="cannot read 'bad'"):
        bad.result(5)
    # The gathered batch failed, then each of its requests ran alone.
    assert gate.calls == [["warm"], ["good", "bad", "other"], ["good"], ["bad"], ["other"]]


def test_a_batcher_stuck_past_the_timeout_is_replaced():
    gate = Gate()
    stuck = batching.batcher_for("m", gate, stuck_after=0.05)
    stuck.submit(["hangs"])
    assert gate.first_started.wait(5)
    assert batching.batcher_for("m", gate, stuck_after=10) is stuck  # not stuck for 10 s yet
    time.sleep(0.1)
    fresh = batching.batcher_for("m", gate, stuck_after=0.05)
    assert fresh is not stuck and stuck.retired
    assert fresh.submit(["next"]).result(5) == [{"label": "NEXT"}]
    gate.open()


def test_concurrent_predictions_equal_one_at_a_time(settings, tiny_registered_model):
    settings.DYNABENCH_INFERENCE_BATCHING = True
    settings.DYNABENCH_INFERENCE_BATCH_WINDOW_MS = 50
    statements = [f"statement number {n} " + "word " * n for n in range(12)]
    alone = [
        classifier.get_classifier(tiny_registered_model.path).predict_batch([text])[0] for text in statements
    ]
    results: dict[int, dict] = {}
    start = threading.Barrier(len(statements))

    def ask(n):
        start.wait()
        results[n] = inference.predict(tiny_registered_model, [{"statement": statements[n]}])[0]

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(statements))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for n, expected in enumerate(alone):
        assert results[n]["label"] == expected["label"]
        for label, p in expected["probabilities"].items():
            assert results[n]["probabilities"][label] == pytest.approx(p, abs=1e-5)
    (batcher,) = batching._batchers.values()
    assert batcher.batches < len(statements)  # 12 requests arriving within 50 ms share forwards
