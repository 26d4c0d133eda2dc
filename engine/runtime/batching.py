"""Batched live inference: concurrent predictions for one model in one process share a forward pass.

Why: a web process serving several annotators at once (gunicorn's threaded workers, the demo's
threaded server) used to run one forward per request, each on its own torch threads, so concurrent
requests fought over the cores instead of sharing one batch. A forward of 32 statements costs little
more than a forward of one on a CPU (the bare MiniLM forward: about 95 examples/s one at a time, about
200 examples/s in batches of 32, on 2 cores).

How: one ``Batcher`` per model directory and process, with one worker thread. A request puts its texts
on the batcher's queue and waits for its own future. The worker takes the first request, then every
request already queued, then waits up to ``DYNABENCH_INFERENCE_BATCH_WINDOW_MS`` for more while the
batch holds fewer than ``DYNABENCH_INFERENCE_BATCH_MAX`` texts, and runs the whole batch as one
``predict_batch`` call. An idle model therefore answers a lone request after the window at most (0 ms
takes only what is already queued: no added wait at all), and a busy one batches whatever arrived during
the previous forward.

Errors stay with their request: when a batch of several requests fails, each request is run again on
its own, so one bad input (a text the tokenizer or the model chokes on) fails alone and the others get
their answers.

A model that hangs holds its own worker only (other models have theirs). The caller stops waiting after
its timeout (``classifier.predict_local``); when the worker has been busy on one batch for longer than
that timeout, the next request starts a fresh batcher for that directory and the stuck one is retired
(its thread ends if its call ever returns), so a model fixed on disk serves again without a restart.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from engine.config import settings

logger = logging.getLogger(__name__)

Run = Callable[[list], list[dict]]


def batch_window_seconds() -> float:
    """The gathering window (``DYNABENCH_INFERENCE_BATCH_WINDOW_MS``, default 2) in seconds."""
    return max(0.0, float(settings.DYNABENCH_INFERENCE_BATCH_WINDOW_MS) / 1000.0)


def batch_max() -> int:
    """Most texts in one gathered batch (``DYNABENCH_INFERENCE_BATCH_MAX``, default 32); a single
    request larger than this still runs whole."""
    return max(1, int(settings.DYNABENCH_INFERENCE_BATCH_MAX))


class Batcher:
    """Gathers concurrent requests for one model into batches run by one worker thread.

    Args:
        name: what the worker thread and the log call it (the model directory).
        run: ``run(texts) -> outputs``, one output per text in order (``Classifier.predict_batch``,
            looked up again per batch, so a retrained model is picked up); may raise.
        window: seconds to wait for more requests after the first (``batch_window_seconds()``).
        max_items: texts per gathered batch (``batch_max()``).
    """

    def __init__(self, name: str, run: Run, *, window: float, max_items: int) -> None:
        self.name = name
        self._run = run
        self._window = window
        self._max_items = max_items
        self._queue: queue.SimpleQueue[tuple[list, Future]] = queue.SimpleQueue()
        self.busy_since: float | None = None  # time.monotonic() when the running batch started
        self.retired = False
        self.batches = 0  # forwards run, for tests and benchmarks
        self._thread = threading.Thread(target=self._work, name=f"batcher {name}", daemon=True)
        self._thread.start()

    def submit(self, texts: list) -> Future:
        """Queue ``texts`` (a list of model texts); the future gets their outputs, in order, or the
        exception their run raised."""
        future: Future = Future()
        self._queue.put((texts, future))
        return future

    def _gather(self) -> list[tuple[list, Future]]:
        first = self._queue.get()
        batch = [first]
        size = len(first[0])
        deadline = time.monotonic() + self._window
        while size < self._max_items:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
            batch.append(item)
            size += len(item[0])
        return batch

    def _work(self) -> None:
        while not self.retired:
            batch = self._gather()
            live = [(texts, future) for texts, future in batch if future.set_running_or_notify_cancel()]
            if not live:
                continue
            self.busy_since = time.monotonic()
            try:
                self._run_batch(live)
            finally:
                self.busy_since = None
        # Retired while a call hung: whatever is still queued goes to a fresh batcher's callers' timeouts.

    def _run_batch(self, batch: list[tuple[list, Future]]) -> None:
        texts = [text for request, _ in batch for text in request]
        try:
            outputs = self._run(texts)
        except BaseException as exc:  # noqa: BLE001  (handed to the waiting request, never lost)
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            # One request's bad input must not fail the others: run each alone.
            for request, future in batch:
                try:
                    future.set_result(self._run(request))
                except BaseException as alone:  # noqa: BLE001
                    future.set_exception(alone)
            return
        self.batches += 1
        start = 0
        for request, future in batch:
            future.set_result(outputs[start : start + len(request)])
            start += len(request)


_batchers: dict[str, Batcher] = {}
_lock = threading.Lock()


def batcher_for(key: str, run: Run, *, stuck_after: float) -> Batcher:
    """The process's batcher for model directory ``key``, started on first use; a batcher whose worker
    has been busy on one batch for more than ``stuck_after`` seconds (> 0) is retired and replaced."""
    with _lock:
        current = _batchers.get(key)
        if current is not None and stuck_after > 0:
            since = current.busy_since
            if since is not None and time.monotonic() - since > stuck_after:
                logger.warning(
                    "model %s has been busy for over %s s: starting a fresh batcher", key, stuck_after
                )
                current.retired = True
                current = None
        if current is None:
            current = Batcher(key, run, window=batch_window_seconds(), max_items=batch_max())
            _batchers[key] = current
        return current


def reset() -> None:
    """Forget every batcher (their threads end after their current wait), for tests."""
    with _lock:
        for batcher in _batchers.values():
            batcher.retired = True
            batcher.submit([])  # wake the worker so it sees ``retired``
        _batchers.clear()
