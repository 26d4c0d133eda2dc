"""Run an exported ONNX graph of a model directory with ONNX Runtime (``runtimes.ONNX_RUNTIMES``).

``OnnxGraph(path, runtime)`` opens ``<path>/onnx/model.<fp32|int8>.onnx`` with the names its export
manifest (``onnx/export.json``) recorded; ``run(arrays)`` feeds int64 arrays by input name and returns
the outputs as float32 numpy arrays. Three graph kinds (``onnx_export``):

``vectors``
    ``(input_ids, attention_mask) -> vectors`` (batch, hidden): the encoder and masked mean pooling of
    this project's ``MeanPoolClassifier``. Its head (one ``nn.Linear``) and, for pair pooling, the
    split into two segments and the pair features stay outside the graph (``inference.Classifier``).
``logits``
    Any other sequence classifier: the tokenizer's inputs -> ``logits`` (batch, labels).
``span``
    A question-answering model: the tokenizer's inputs -> ``start_logits``, ``end_logits`` (batch, tokens).

onnxruntime is imported when a graph is opened, so importing this module is cheap.

Bulk prediction (``bulk()``): on these CPUs a MiniLM batch of short texts does not keep two intra-op
threads busy (one session with 2 threads ran 270-320 HateCheck texts/s, the same graph as two 1-thread
runs at once 340-390), so within ``bulk()`` (the evaluation's predictions and timed passes) a
classifier runs the batches of one call side by side (``map_batches``) on ``bulk_workers()`` threads,
each on the graph's single-threaded bulk session. A lone request (the create page, the predict API)
keeps the latency session, whose intra-op threads share each forward.

An int8 graph runs **one row at a time**, each without its padding (``OnnxGraph.run``). Its
activations are quantized at run time with one scale per tensor, so in a batch a text's output would
depend on the other texts and on the padding beside it: the same text, alone or beside another, came
out at P(hateful) 0.3732, 0.3666 and 0.3617, and an export check of 399 texts lost 0.25 or 1.25 points
depending on which batches the vector cache had seen. Row by row it is a function of the text alone,
as on torch and fp32. In bulk this costs nothing on these CPUs: MiniLM int8 ran 1,282 HateCheck texts/s
in batches of 32 on one 2-thread session and 1,329 one row at a time on two 1-thread runs at once.
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from engine.config import settings
from engine.runtime.model_files import InferenceError, without_server_paths
from engine.runtime.runtimes import (
    MANIFEST_NAME,
    ONNX_DIR,
    ONNX_INT8,
    ONNX_RUNTIMES,
    TORCH,
    graph_file,
)

KINDS = ("vectors", "logits", "span")
#: A span graph's logit at a padded position of a row run alone (never read: decoding stops at the row's
#: length); finite, so the non-finite check does not trip on it.
PADDED_LOGIT = -1e4


def read_manifest(export_dir: str | Path) -> dict:
    """The manifest of the export folder ``export_dir`` (a model directory's ``onnx/``):
    ``{"kind", "inputs", "outputs", ...}``.

    Raises:
        InferenceError: no manifest (the model was never exported) or an unreadable one.
    """
    file = Path(export_dir) / MANIFEST_NAME
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InferenceError("the model has no ONNX export (onnx/export.json is missing)") from None
    except (OSError, ValueError) as exc:
        raise InferenceError(f"the ONNX export manifest cannot be read: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("kind") not in KINDS:
        raise InferenceError("the ONNX export manifest names no known graph kind")
    return manifest


_bulk: contextvars.ContextVar[bool] = contextvars.ContextVar("onnx_bulk", default=False)
_bulk_worker: contextvars.ContextVar[bool] = contextvars.ContextVar("onnx_bulk_worker", default=False)

T = TypeVar("T")
R = TypeVar("R")


@contextmanager
def bulk() -> Iterator[None]:
    """Within this block (this thread or task), ``map_batches`` runs a call's batches side by side."""
    token = _bulk.set(True)
    try:
        yield
    finally:
        _bulk.reset(token)


def bulk_workers() -> int:
    """Batches run at once in ``bulk()``: ``DYNABENCH_ONNX_BULK_WORKERS``, 0 (the default) for one per
    core; 1 runs them one after the other on the latency session."""
    workers = int(getattr(settings, "DYNABENCH_ONNX_BULK_WORKERS", 0) or 0)
    return workers if workers > 0 else (os.cpu_count() or 1)


def _workers_now() -> int:
    """The workers a call made now runs its batches on: ``bulk_workers()`` inside ``bulk()``, else 1."""
    return bulk_workers() if _bulk.get() else 1


def batch_size_for(batch_size: int) -> int:
    """The batch size a call of ``batch_size`` runs with: inside ``bulk()`` with ``bulk_workers()`` above
    1, each worker's share (at least 1), so that a call's items are spread over every worker even when
    they fill only a batch or two (a timed pass of 128 items in batches of 64 gave one of two workers
    the longer half); else ``batch_size``."""
    return max(1, batch_size // _workers_now())


def map_batches(run: Callable[[T], R], batches: Sequence[T]) -> list[R]:
    """``[run(b) for b in batches]``, in order. Inside ``bulk()``, with more than one batch and
    ``bulk_workers()`` above 1, the batches run on that many threads at once, each in a copy of the
    caller's context (so ``vector_cache.uncached`` and the like hold there too) and marked as a bulk
    worker, whose ``OnnxGraph.run`` uses the graph's single-threaded bulk session. The first exception
    raised by a batch is raised here."""
    workers = min(_workers_now(), len(batches))
    if workers <= 1:
        return [run(batch) for batch in batches]

    def in_worker(batch: T) -> R:
        _bulk_worker.set(True)
        return run(batch)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="onnx-bulk") as pool:
        futures = [pool.submit(contextvars.copy_context().run, in_worker, batch) for batch in batches]
        return [future.result() for future in futures]


def session_options(threads: int | None = None):
    """ONNX Runtime session options for this process: ``threads`` intra-op threads, by default
    ``DYNABENCH_ONNX_THREADS`` (0: ONNX Runtime's default, one per core), one inter-op thread, all graph
    optimisations, no spinning."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads is None:
        threads = int(getattr(settings, "DYNABENCH_ONNX_THREADS", 0) or 0)
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: the optimiser's notes are not the operator's business
    # Idle pool threads sleep instead of spinning: the request goes on with Django's own work (and a
    # torch model may run next) on the same cores, which spinning threads would take from it.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


class OnnxGraph:
    """One ONNX Runtime session on a model directory's exported graph.

    Attributes:
        path: the graph file.
        kind: ``"vectors"``, ``"logits"`` or ``"span"`` (module docstring).
        inputs / outputs: the graph's input and output names, in order.
        nbytes: the graph file's size in bytes (its weights, near enough).
        digest: sha256 (hex) of the graph this session runs (``vector_cache`` keys on it; about 0.2 s
            for MiniLM's 90 MB fp32 graph, once per load).

    Args (constructor):
        model_dir: the model directory (its tokenizer and weights are the predictor's business).
        runtime: ``onnx-fp32`` or ``onnx-int8``.
        export_dir: the export folder the graph and manifest are read from; default the one served,
            ``<model_dir>/onnx`` (``onnx_export`` checks a new export in a folder of its own).

    Raises (constructor):
        InferenceError: the manifest or graph is missing or ONNX Runtime cannot open it.
    """

    def __init__(self, model_dir: str | Path, runtime: str, export_dir: str | Path | None = None) -> None:
        export_dir = Path(model_dir) / ONNX_DIR if export_dir is None else Path(export_dir)
        manifest = read_manifest(export_dir)
        file = graph_file(export_dir, runtime)
        try:
            import onnxruntime as ort

            # Read once: the session and the digest see the same bytes, even if the file is replaced.
            graph = file.read_bytes()
            self.digest = hashlib.sha256(graph).hexdigest()
            self._session = ort.InferenceSession(graph, session_options(), providers=["CPUExecutionProvider"])
        except Exception as exc:
            detail = without_server_paths(f"{type(exc).__name__}: {exc}", model_dir)
            raise InferenceError(f"ONNX Runtime cannot open the {runtime} graph: {detail}") from exc
        self.path = file
        self.kind: str = manifest["kind"]
        self.inputs: list[str] = [i.name for i in self._session.get_inputs()]
        self.outputs: list[str] = [o.name for o in self._session.get_outputs()]
        self.nbytes = len(graph)
        #: One row at a time (module docstring): the int8 graph's outputs depend on the whole batch.
        self.row_by_row = runtime == ONNX_INT8
        self._bulk_session = None
        self._bulk_lock = threading.Lock()

    def _session_for_this_thread(self):
        """The bulk session in a ``map_batches`` worker (opened on first use, one intra-op thread), else
        the latency session. The bulk session is opened from the file only when its bytes still have
        this session's digest; a graph replaced on disk meanwhile keeps every batch on the latency
        session (the classifier is reloaded for the new file anyway)."""
        if not _bulk_worker.get():
            return self._session
        with self._bulk_lock:
            if self._bulk_session is None:
                import onnxruntime as ort

                try:
                    graph = self.path.read_bytes()
                except OSError:
                    graph = b""
                if hashlib.sha256(graph).hexdigest() != self.digest:
                    self._bulk_session = self._session
                else:
                    self._bulk_session = ort.InferenceSession(
                        graph, session_options(threads=1), providers=["CPUExecutionProvider"]
                    )
            return self._bulk_session

    def run(self, arrays: dict) -> list:
        """Run the graph on ``arrays`` (input name -> (batch, tokens) integer array; extra names are
        ignored, missing ones raise), on the bulk session in a ``map_batches`` worker.

        Returns:
            The outputs in ``self.outputs`` order, as float32 numpy arrays.

        Raises:
            InferenceError: an input the graph needs is missing, or ONNX Runtime fails.
        """
        import numpy as np

        missing = [name for name in self.inputs if name not in arrays]
        if missing:
            raise InferenceError(f"the ONNX graph needs inputs {missing}")
        feeds = {name: np.asarray(arrays[name], dtype=np.int64) for name in self.inputs}
        try:
            session = self._session_for_this_thread()
            # ONNX Runtime's run is thread-safe.
            if self.row_by_row and len(feeds[self.inputs[0]]) > 1:
                outputs = self._rows(session, feeds)
            else:
                outputs = session.run(None, feeds)
        except Exception as exc:
            raise InferenceError(f"ONNX Runtime failed: {type(exc).__name__}: {exc}") from exc
        return [np.asarray(out, dtype=np.float32) for out in outputs]

    def _rows(self, session, feeds: dict) -> list:
        """``session.run`` on each row of ``feeds`` alone, cut to its own tokens (the leading run of
        ones of its ``attention_mask``; the full width when there is no mask or it is not right-padded),
        the outputs stacked. A span graph's (1, tokens) outputs are padded back to the batch's width
        with ``PADDED_LOGIT``: decoding reads only each row's own tokens."""
        import numpy as np

        mask = feeds.get("attention_mask")
        width = feeds[self.inputs[0]].shape[1]
        per_row: list[list] = []
        for row in range(len(feeds[self.inputs[0]])):
            length = width
            if mask is not None:
                ones = int(mask[row].sum())
                if ones and bool(mask[row, :ones].all()):
                    length = ones
            per_row.append(session.run(None, {k: v[row : row + 1, :length] for k, v in feeds.items()}))
        stacked = []
        for index in range(len(per_row[0])):
            parts = [outputs[index] for outputs in per_row]
            if self.kind == "span":
                parts = [
                    np.pad(p, ((0, 0), (0, width - p.shape[1])), constant_values=PADDED_LOGIT) for p in parts
                ]
            stacked.append(np.concatenate(parts))
        return stacked


class ServedOnRuntime:
    """What ``inference.Classifier`` and ``qa_inference.SpanPredictor`` share about their runtime.

    Needs the attributes ``path`` (the model directory), ``model`` (the torch module), ``graph`` (an
    ``OnnxGraph`` or None) and ``runtime``.
    """

    path: Path
    model: object
    graph: OnnxGraph | None
    runtime: str

    def _attach_graph(self, runtime: str, export_dir: str | Path | None = None) -> None:
        """Set ``runtime`` and its ``graph`` (None on torch), read from ``export_dir`` (default the
        model's own ``onnx/``).

        Raises:
            InferenceError: the graph cannot be opened.
        """
        self.runtime = runtime
        self.graph = OnnxGraph(self.path, runtime, export_dir) if runtime in ONNX_RUNTIMES else None

    def on_graph(self, runtime: str, export_dir: str | Path):
        """This model on ``runtime``'s graph from the export folder ``export_dir``: a shallow copy sharing
        tokenizer, torch model and lock. ``onnx_export`` checks a new export with it before that export
        replaces the graphs served.

        Raises:
            InferenceError: the graph cannot be opened.
        """
        twin = copy.copy(self)
        twin._attach_graph(runtime, export_dir)
        return twin

    def on_torch(self):
        """This model on PyTorch: a shallow copy sharing tokenizer, torch model and lock, with no graph
        (the working-memory measurement traces the torch forward of an ONNX-served model)."""
        twin = copy.copy(self)
        twin.graph, twin.runtime = None, TORCH
        return twin

    def weight_bytes(self) -> int:
        """Bytes of the weights the forward runs on: the ONNX graph file, or the torch parameters and
        buffers."""
        if self.graph is not None:
            return self.graph.nbytes
        tensors = list(self.model.parameters()) + list(self.model.buffers())
        return sum(t.numel() * t.element_size() for t in tensors)
