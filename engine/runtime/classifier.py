"""The one place that runs torch models: one cached classifier per model directory and process.

CONTRACT (other apps rely on exactly this; the implementation may change underneath):

    get_classifier(path, runtime="torch") -> Classifier
        Loads a ``save_pretrained`` directory (safetensors) once per process, path and runtime, and
        again whenever its files change on disk (see "Cache" below); thread-safe. ``runtime`` is
        ``"torch"`` or an ONNX runtime (``runtimes``: ``"onnx-fp32"``, ``"onnx-int8"``), whose forward
        runs the graph that ``onnx_export`` wrote into ``<path>/onnx/`` at registration.
    Classifier.labels -> list[str]
    Classifier.predict_batch(texts: list[str] | list[tuple[str, str]], batch_size=32) -> list[dict]
        Each dict: {"label": str, "probabilities": {label: float}} (probabilities sum to 1).
        Raises InferenceError when the model cannot produce an output.
    predict_local(path, allow_pickle, runtime, texts) -> list[dict]
        The same outputs for the model folder ``path``, through the batcher or the pool, within the
        inference timeout. The registry's ``models_registry.inference.predict`` builds the texts of a
        registered model's inputs and calls it (or an endpoint); this module reads no database row.

Span (extractive QA) models: a directory whose config names a ``*ForQuestionAnswering`` architecture
loads as a ``qa_inference.SpanPredictor`` instead (same cache). Its ``labels`` is empty and
``predict_batch`` takes ``(passage, question)`` pairs and returns
``{"answer": str, "answer_start": int (code points into the passage), "score": float}`` per pair;
``predict_local`` returns the same.

Cache: one classifier per directory and process, kept with the identity of the files it was loaded
from (``files_identity``: device, inode, size and ``mtime_ns`` of the directory, ``config.json``, the
weight files and the tokenizer files). Each ``get_classifier`` call compares that identity with the
files' current one (a few ``stat`` calls, microseconds) and reloads when they differ. So a model
retrained into the same directory (``train_target_for_rounds(..., replace=True)`` swaps a new
directory into place) is picked up by every process: the web server and the job cluster, not only the
process that trained it, on this machine or any other that mounts the same model folder
(docs/deployment.md). A round's targets themselves are rows in the database, read on every request,
so promoting another model needs no message to other processes. The cache is bounded by
``DYNABENCH_MODEL_CACHE_BYTES``, counted as the models' weight-file sizes (``weights_bytes``); past
it the least recently used models are dropped (never the one just asked for). ``clear_cache(path=None)``
forgets cached classifiers (all, or one directory), for tests.

Batching (``DYNABENCH_INFERENCE_BATCHING``, off by default: it did not raise throughput under load,
docs/deployment.md): concurrent local predictions for one model in one process are gathered and run as
one forward (``batching.py``: a window of ``DYNABENCH_INFERENCE_BATCH_WINDOW_MS``, at most
``DYNABENCH_INFERENCE_BATCH_MAX`` texts, errors isolated per request). Off, each call runs on its own in
the pool below.

Timeout: ``predict_local`` waits at most ``DYNABENCH_INFERENCE_TIMEOUT_SECONDS`` for a local model (load
included), then raises ``InferenceError``; the call goes on in its thread (a Python thread cannot be
stopped) and its model stays cached for the next call. A model that hangs holds its own batcher's
thread (a fresh one starts for the next request once the timeout has passed: ``batching.batcher_for``);
without batching, the pool's ``INFERENCE_THREADS`` threads. The examples of calls that timed out are
stored with a failed prediction, scored again by ``retry_failed_predictions``.

torch and transformers are imported lazily, on the first load, so importing this module is cheap.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from engine.config import settings
from engine.runtime import batching, vector_cache
from engine.runtime.model_files import (
    FileIdentity,
    InferenceError,
    check_loading_info,
    check_model_dir,
    files_identity,
    labels_from_id2label,
    weights_bytes,
    without_server_paths,
)
from engine.runtime.onnx_graph import ServedOnRuntime, batch_size_for, map_batches
from engine.runtime.preprocessing import preprocess_all
from engine.runtime.qa_inference import SpanPredictor
from engine.runtime.qa_modeling import is_qa_model_dir
from engine.runtime.runtimes import RUNTIMES, TORCH, check_runtime, onnx_file

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32

Text = str | tuple[str, str]

# key -> (identity of the files when loaded, weight bytes, classifier), least recently used first
_cache: OrderedDict[str, tuple[FileIdentity, int, Classifier]] = OrderedDict()
_cache_lock = threading.Lock()
# One lock per path so that two different models can load at the same time, while concurrent first
# calls for the same path wait for the one load instead of loading twice.
_path_locks: dict[str, threading.Lock] = {}


def _key(path: str | Path) -> str:
    return str(Path(path).expanduser().resolve())


class Classifier(ServedOnRuntime):
    """A loaded sequence classifier with its tokenizer and preprocessing. Build with ``get_classifier``.

    Attributes:
        path: the directory it was loaded from.
        labels: label strings in output-index order.
        preprocessing: the preprocessing spec from the model config, applied to every text.
        max_length: tokens per input; longer inputs are truncated.
        runtime: ``runtimes.TORCH`` or an ONNX runtime; with ONNX, ``graph`` is the ``OnnxGraph`` that
            runs the forward (the torch ``model`` stays loaded: its head weights, the attributions and
            the working-memory measurement use it).
    """

    def __init__(self, path: str | Path, *, allow_pickle: bool = False, runtime: str = TORCH) -> None:
        directory = check_model_dir(path, allow_pickle=allow_pickle)
        try:
            import torch  # noqa: F401  (fail here with a clear message if torch is missing)
            from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
            from transformers.utils import logging as hf_logging

            from engine.runtime import modeling  # noqa: F401  (registers our model type with the Auto classes)

            hf_logging.disable_progress_bar()
            config = AutoConfig.from_pretrained(str(directory), local_files_only=True)
            self.tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
            self.model, loading_info = AutoModelForSequenceClassification.from_pretrained(
                str(directory),
                config=config,
                local_files_only=True,
                use_safetensors=None if allow_pickle else True,
                output_loading_info=True,
            )
        except InferenceError:
            raise
        except Exception as exc:
            logger.warning("could not load the model in %s", directory, exc_info=True)
            detail = without_server_paths(f"{type(exc).__name__}: {exc}", directory)
            raise InferenceError(f"could not load the model: {detail}") from exc
        check_loading_info(loading_info, type(self.model).__name__)
        self.model.eval()
        self.path = directory
        self.labels: list[str] = labels_from_id2label(self.model.config.id2label)
        self.preprocessing: dict[str, Any] = dict(getattr(self.model.config, "preprocessing", None) or {})
        self.max_length: int = int(getattr(self.model.config, "max_input_tokens", 128) or 128)
        self.max_length = min(self.max_length, 128)
        self._lock = threading.Lock()
        # token_count's own tokenizer copy and lock (made on first use): counting must not wait for a
        # forward that holds _lock, nor share the tokenizer's truncation state with it.
        self._counting = threading.Lock()
        self._counter = None
        self._attach_graph(runtime)

    def _attach_graph(self, runtime: str, export_dir: str | Path | None = None) -> None:
        super()._attach_graph(runtime, export_dir)
        if self.graph is not None and self.graph.kind == "vectors":
            # The head runs outside the graph (onnx_graph): its weights as numpy, once.
            head = self.model.classifier
            self._head = (head.weight.detach().float().numpy().T.copy(), head.bias.detach().float().numpy())

    def _logits(self, encoded, torch):
        """(batch, labels) float logits of one tokenised batch, by torch or by the ONNX graph."""
        if self.graph is None:
            return self.model(**encoded).logits
        arrays = {name: tensor.numpy() for name, tensor in encoded.items()}
        if self.graph.kind == "logits":
            return torch.from_numpy(self.graph.run(arrays)[0])
        from engine.runtime.modeling import pair_features, split_pair

        if getattr(self.model.config, "pooling", "mean") == "pair":
            # Both segments of every pair in one run: padded to one width (masked, so it changes nothing).
            (ids_a, mask_a), (ids_b, mask_b) = split_pair(
                encoded["input_ids"],
                encoded["attention_mask"],
                encoded["token_type_ids"],
                self.model.config.pad_token_id or 0,
            )
            width = max(ids_a.shape[1], ids_b.shape[1])
            pad = torch.nn.functional.pad
            ids = torch.cat(
                [pad(ids_a, (0, width - ids_a.shape[1])), pad(ids_b, (0, width - ids_b.shape[1]))]
            )
            mask = torch.cat(
                [pad(mask_a, (0, width - mask_a.shape[1])), pad(mask_b, (0, width - mask_b.shape[1]))]
            )
            vectors = self._graph_vectors(ids, mask)
            half = ids_a.shape[0]
            vectors = pair_features(vectors[:half], vectors[half:])
        else:
            vectors = self._graph_vectors(encoded["input_ids"], encoded["attention_mask"])
        weight, bias = self._head
        return torch.from_numpy(vectors.numpy() @ weight + bias)

    def _graph_vectors(self, ids, mask):
        """(rows, hidden) vectors of the ``vectors`` graph for right-padded (rows, width) token ids and
        mask, rows already encoded by a byte-identical graph read from ``vector_cache``."""
        graph = self.graph

        def run(ids_array, mask_array):
            return graph.run({"input_ids": ids_array, "attention_mask": mask_array})[0]

        return vector_cache.cached_vectors(run, graph.digest, ids, mask)

    def predict_batch(self, texts: list[Text], batch_size: int = DEFAULT_BATCH_SIZE) -> list[dict]:
        """Classify texts (or (a, b) text pairs) in batches.

        Args:
            texts: strings, or 2-tuples for pair tasks; preprocessed with the model's spec, truncated to
                ``max_length`` tokens.
            batch_size: inputs per forward pass.

        Returns:
            One dict per input, in order: ``{"label": str, "probabilities": {label: float}}``; the
            probabilities (softmax) sum to 1.

        Raises:
            InferenceError: if preprocessing, tokenising or the forward pass fails.
        """
        if not texts:
            return []
        try:
            import torch

            prepared = preprocess_all(texts, self.preprocessing)
            probs = self._probabilities(prepared, batch_size, torch)
        except InferenceError:
            raise
        except Exception as exc:
            logger.warning("the model in %s failed to predict", self.path, exc_info=True)
            detail = without_server_paths(f"{type(exc).__name__}: {exc}", self.path)
            raise InferenceError(f"the model failed to predict: {detail}") from exc
        results = []
        for row in probs:
            scores = {label: float(p) for label, p in zip(self.labels, row, strict=True)}
            best = max(range(len(row)), key=row.__getitem__)
            results.append({"label": self.labels[best], "probabilities": scores})
        return results

    def _probabilities(self, prepared: list, batch_size: int, torch) -> list[list[float]]:
        # Sort by length so padded batches are short; restore the order at the end.
        order = sorted(range(len(prepared)), key=lambda i: len(str(prepared[i])))
        # In bulk, an ONNX model's batches are split among the workers that run them side by side.
        step = batch_size_for(batch_size) if self.graph is not None else max(1, batch_size)
        chunks = [order[start : start + step] for start in range(0, len(order), step)]
        out: list[list[float] | None] = [None] * len(prepared)

        def probabilities(encoded) -> list[list[float]]:
            with torch.inference_mode():  # per thread: map_batches may run this on a worker
                logits = self._logits(encoded, torch)
                if not torch.isfinite(logits).all():
                    raise InferenceError("the model produced non-finite scores (NaN or infinity)")
                return torch.softmax(logits.float(), dim=-1).tolist()

        # One call at a time per model: torch already uses every core, and the tokenizer object is not
        # guaranteed to be safe under concurrent calls, so every batch is tokenised here, by this thread.
        with self._lock, torch.inference_mode():
            if self.graph is None:
                results = [probabilities(self._encode([prepared[i] for i in idx])) for idx in chunks]
            else:  # ONNX: in bulk (the evaluation), the batches run side by side (onnx_graph.map_batches)
                encoded = [self._encode([prepared[i] for i in idx]) for idx in chunks]
                results = map_batches(probabilities, encoded)
        for idx, rows in zip(chunks, results, strict=True):
            for i, row in zip(idx, rows, strict=True):
                out[i] = row
        return out  # type: ignore[return-value]

    def token_count(self, text: Text) -> int:
        """Tokens (word pieces, special tokens included) that ``text`` (a string or an (a, b) pair) makes
        after the model's preprocessing, untruncated: above ``max_length`` the model reads only the
        beginning (``_encode`` truncates).

        Raises:
            InferenceError: preprocessing failed (``preprocess_all``).
        """
        (prepared,) = preprocess_all([text], self.preprocessing)
        pair = prepared if isinstance(prepared, tuple) else (prepared,)
        with self._counting:  # a tokenizer object is not guaranteed safe under concurrent calls
            if self._counter is None:
                self._counter = copy.deepcopy(self.tokenizer)
            encoded = self._counter(*pair, truncation=False, verbose=False)
        return len(encoded["input_ids"])

    def _encode(self, batch: list):
        """The tokenizer's padded torch tensors of one batch of texts or (a, b) pairs."""
        if isinstance(batch[0], tuple):
            return self.tokenizer(
                [a for a, _ in batch],
                [b for _, b in batch],
                truncation=True,
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            )
        return self.tokenizer(
            batch, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
        )


def _load(path: str, allow_pickle: bool, runtime: str = TORCH):
    """A ``Classifier``, or a ``qa_inference.SpanPredictor`` for a ``*ForQuestionAnswering`` directory."""

    if is_qa_model_dir(path):
        return SpanPredictor(path, allow_pickle=allow_pickle, runtime=runtime)
    return Classifier(path, allow_pickle=allow_pickle, runtime=runtime)


def _cache_key(path: str, runtime: str) -> str:
    # A torch model is cached under its path alone; an ONNX one beside it under "<path>|<runtime>".
    return path if runtime == TORCH else f"{path}|{runtime}"


def _identity(path: str, runtime: str) -> FileIdentity:
    identity = files_identity(path)
    if runtime != TORCH and identity:
        try:
            st = onnx_file(path, runtime).stat()
        except OSError:
            return identity
        identity = (*identity, (runtime, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return identity


def _cached(key: str, identity: FileIdentity):
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None or cached[0] != identity:
            return None
        _cache.move_to_end(key)
        return cached[2]


def _store(key: str, path: str, identity: FileIdentity, classifier) -> None:
    """Cache ``classifier``, then drop least recently used entries while over the byte bound."""
    bound = int(getattr(settings, "DYNABENCH_MODEL_CACHE_BYTES", 0) or 0)
    with _cache_lock:
        _cache[key] = (identity, weights_bytes(path), classifier)
        _cache.move_to_end(key)
        while bound and len(_cache) > 1 and sum(entry[1] for entry in _cache.values()) > bound:
            dropped, _ = _cache.popitem(last=False)
            logger.info("model cache over %s bytes: dropped %s", bound, dropped)


def cached_paths() -> list[str]:
    """The cache keys of the models this process holds, least recently used first: a torch model's
    directory, an ONNX one's ``"<directory>|<runtime>"``."""
    with _cache_lock:
        return list(_cache)


def get_classifier(path: str | Path, *, allow_pickle: bool = False, runtime: str = TORCH) -> Classifier:
    """The process-wide classifier for a ``save_pretrained`` directory and runtime, loading it on first
    use and again whenever the directory's files (or the runtime's ONNX graph) changed since
    (``files_identity``; module docstring, "Cache").

    Thread-safe: concurrent first calls for one path load it once and all get the same instance.

    Raises:
        InferenceError: if the directory is missing, incomplete or cannot be loaded, or an ONNX runtime
            has no graph (not cached, so a fixed directory is picked up on the next call).
        ValueError: an unknown runtime.
    """
    path = _key(path)
    check_runtime(runtime)
    key = _cache_key(path, runtime)
    classifier = _cached(key, _identity(path, runtime))
    if classifier is not None:
        return classifier
    with _cache_lock:
        path_lock = _path_locks.setdefault(key, threading.Lock())
    with path_lock:
        # Looked up again under the lock: another thread may have loaded these very files meanwhile.
        identity = _identity(path, runtime)
        classifier = _cached(key, identity)
        if classifier is not None:
            return classifier
        # The identity is taken before loading: files changed during the load are loaded again next time.
        classifier = _load(path, allow_pickle, runtime)
        _store(key, path, identity, classifier)
    return classifier


def clear_cache(path: str | Path | None = None, *, runtime: str | None = None) -> None:
    """Forget cached classifiers: all of them, or those loaded from ``path`` (every runtime, or only
    ``runtime``)."""
    with _cache_lock:
        if path is None:
            _cache.clear()
            return
        directory = _key(path)
        runtimes = [runtime] if runtime else RUNTIMES
        for name in runtimes:
            _cache.pop(_cache_key(directory, name), None)


# Local model calls run here so that ``predict`` can stop waiting (module docstring, "Timeout").
INFERENCE_THREADS = 4
_calls = ThreadPoolExecutor(max_workers=INFERENCE_THREADS, thread_name_prefix="inference")


def served_classifier(path: str, allow_pickle: bool, runtime: str):
    """``get_classifier(path, runtime=runtime)``, or the torch one while the runtime's graph file is
    missing: a target retrained into its directory has new weights and no graph until its registration
    has exported them (seconds), and annotators are served meanwhile. Any other failure raises.
    """
    try:
        return get_classifier(path, allow_pickle=allow_pickle, runtime=runtime)
    except InferenceError:
        if runtime == TORCH or onnx_file(path, runtime).exists():
            raise
        logger.warning("no %s graph in %s (being exported?): serving with torch", runtime, path)
        return get_classifier(path, allow_pickle=allow_pickle)


def predict_local(path: str, allow_pickle: bool, runtime: str, texts: list[Text]) -> list[dict]:
    """Run the model folder ``path`` on ``runtime`` over ``texts``, through the batcher or the pool, waiting at
    most ``DYNABENCH_INFERENCE_TIMEOUT_SECONDS`` (0: no limit).

    Returns ``Classifier.predict_batch``'s outputs (or a ``SpanPredictor``'s), one per text, in order.

    Raises:
        InferenceError: the model does not load or fails, or gives no answer within the timeout.
    """
    timeout = float(settings.DYNABENCH_INFERENCE_TIMEOUT_SECONDS)

    def run(batch: list[Text]) -> list[dict]:
        return served_classifier(path, allow_pickle, runtime).predict_batch(batch)

    if settings.DYNABENCH_INFERENCE_BATCHING:
        # Concurrent requests for this model share one forward (batching.py).
        key = f"{_key(path)}|pickle={allow_pickle}|{runtime}"
        future = batching.batcher_for(key, run, stuck_after=timeout).submit(texts)
    else:
        future = _calls.submit(run, texts)
    try:
        return future.result(timeout=timeout if timeout > 0 else None)
    except FutureTimeout:
        future.cancel()
        logger.warning("model folder %s gave no answer within %s s", path, timeout)
        raise InferenceError(f"no answer within {timeout:g} s (the inference timeout)") from None


def token_counts(
    path: str, allow_pickle: bool, runtime: str, texts: list[Text]
) -> tuple[list[int], int] | None:
    """``(tokens, limit)``: the word pieces (special tokens included, untruncated) that each of ``texts``
    makes for the classifier in ``path``, in order, and the ``limit`` it reads of one; None for a span
    (QA) model, which reads a long passage in windows.

    Raises:
        InferenceError: the model does not load, or preprocessing fails.
    """
    predictor = served_classifier(path, allow_pickle, runtime)
    if not isinstance(predictor, Classifier):
        return None
    return [predictor.token_count(text) for text in texts], predictor.max_length


def unread_token_count(path: str, allow_pickle: bool, runtime: str, text: Text) -> tuple[int, int] | None:
    """``(tokens, limit)`` when the classifier in ``path`` would read only the first ``limit`` of the
    ``tokens`` that ``text`` makes; None when it reads it all or is a span (QA) model (``token_counts``).

    Raises:
        InferenceError: the model does not load.
    """
    counted = token_counts(path, allow_pickle, runtime, [text])
    if counted is None:
        return None
    (tokens,), limit = counted
    return (tokens, limit) if tokens > limit else None


def texts_for_inputs(model_input_fields: list[str], inputs: list[dict]) -> list[Text]:
    """Build model texts from input dicts: one field gives a string, two give an (a, b) pair.

    Raises:
        InferenceError: if an input lacks a field or a value is not a string.
    """
    texts: list[Text] = []
    for n, item in enumerate(inputs):
        values = []
        for field in model_input_fields:
            if not isinstance(item, dict) or field not in item:
                raise InferenceError(
                    f"input {n} has no field {field!r} (the model reads {model_input_fields})"
                )
            value = item[field]
            if not isinstance(value, str):
                raise InferenceError(f"input {n} field {field!r} is not text")
            values.append(value)
        texts.append(values[0] if len(values) == 1 else (values[0], values[1]))
    return texts
