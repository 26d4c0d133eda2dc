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
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

from django.conf import settings

from .model_files import InferenceError, without_server_paths
from .runtimes import MANIFEST_FILE, TORCH, onnx_file

KINDS = ("vectors", "logits", "span")


def read_manifest(path: str | Path) -> dict:
    """The export manifest of model directory ``path``: ``{"kind", "inputs", "outputs", ...}``.

    Raises:
        InferenceError: no manifest (the model was never exported) or an unreadable one.
    """
    file = Path(path) / MANIFEST_FILE
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InferenceError("the model has no ONNX export (onnx/export.json is missing)") from None
    except (OSError, ValueError) as exc:
        raise InferenceError(f"the ONNX export manifest cannot be read: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("kind") not in KINDS:
        raise InferenceError("the ONNX export manifest names no known graph kind")
    return manifest


def session_options():
    """ONNX Runtime session options for this process: ``DYNABENCH_ONNX_THREADS`` intra-op threads (0:
    ONNX Runtime's default, one per core), one inter-op thread, all graph optimisations, no spinning."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = int(getattr(settings, "DYNABENCH_ONNX_THREADS", 0) or 0)
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

    Raises (constructor):
        InferenceError: the manifest or graph is missing or ONNX Runtime cannot open it.
    """

    def __init__(self, model_dir: str | Path, runtime: str) -> None:
        manifest = read_manifest(model_dir)
        file = onnx_file(model_dir, runtime)
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

    def run(self, arrays: dict) -> list:
        """Run the graph on ``arrays`` (input name -> (batch, tokens) integer array; extra names are
        ignored, missing ones raise).

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
            outputs = self._session.run(None, feeds)  # ONNX Runtime's run is thread-safe
        except Exception as exc:
            raise InferenceError(f"ONNX Runtime failed: {type(exc).__name__}: {exc}") from exc
        return [np.asarray(out, dtype=np.float32) for out in outputs]


class ServedOnRuntime:
    """What ``inference.Classifier`` and ``qa_inference.SpanPredictor`` share about their runtime.

    Needs the attributes ``model`` (the torch module), ``graph`` (an ``OnnxGraph`` or None) and
    ``runtime``.
    """

    model: object
    graph: OnnxGraph | None
    runtime: str

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
