"""The runtimes a registered model can be served and evaluated with, and where their files live.

A runtime is part of the submitted system, like its size: the leaderboard measures and ranks the model
as it is served (docs/onnx.md). Three runtimes:

``torch``
    The ``save_pretrained`` weights run by PyTorch (the reference).
``onnx-fp32``
    The same weights exported to ONNX (``torch.onnx.export``) and run by ONNX Runtime on the CPU.
``onnx-int8``
    That graph with its weights quantized to int8 (ONNX Runtime's dynamic quantization: int8 weights,
    activations quantized on the fly per batch).

The ONNX files are written by ``onnx_export.export_and_check`` into ``<model dir>/onnx/`` when a model is
trained or registered; this module has no heavy imports, so models, settings and forms can use it.
"""

from __future__ import annotations

from pathlib import Path

TORCH = "torch"
ONNX_FP32 = "onnx-fp32"
ONNX_INT8 = "onnx-int8"
RUNTIMES = (TORCH, ONNX_FP32, ONNX_INT8)
ONNX_RUNTIMES = (ONNX_FP32, ONNX_INT8)

CHOICES = [
    (TORCH, "PyTorch"),
    (ONNX_FP32, "ONNX Runtime, fp32"),
    (ONNX_INT8, "ONNX Runtime, int8 weights"),
]

#: Short names for tables (the leaderboard's runtime badge).
SHORT = {TORCH: "PyTorch", ONNX_FP32: "ONNX fp32", ONNX_INT8: "ONNX int8"}

#: Folder of the exported graphs inside a model directory.
ONNX_DIR = "onnx"
#: The files of an export folder (``onnx/``, or the folder a new export is checked in), by name: the
#: graph of each ONNX runtime; what the export wrote (graph kind, input and output names, versions,
#: ``onnx_export``); the held-apart inputs (and gold targets) it was checked on, for "Check again".
GRAPH_NAMES = {ONNX_FP32: "model.fp32.onnx", ONNX_INT8: "model.int8.onnx"}
MANIFEST_NAME = "export.json"
CHECK_NAME = "check-inputs.json"
#: The same, relative to the model directory.
ONNX_FILES = {runtime: f"{ONNX_DIR}/{name}" for runtime, name in GRAPH_NAMES.items()}
MANIFEST_FILE = f"{ONNX_DIR}/{MANIFEST_NAME}"
CHECK_FILE = f"{ONNX_DIR}/{CHECK_NAME}"


def label(runtime: str) -> str:
    """The runtime's display name, e.g. ``"ONNX Runtime, int8 weights"``; the raw value if unknown."""
    return dict(CHOICES).get(runtime, runtime)


def short_label(runtime: str) -> str:
    """E.g. ``"ONNX int8"``; the raw value if unknown."""
    return SHORT.get(runtime, runtime)


def onnx_file(path: str | Path, runtime: str) -> Path:
    """The graph file of ``runtime`` in model directory ``path`` (the graph served).

    Raises:
        ValueError: ``runtime`` is not an ONNX runtime.
    """
    return graph_file(Path(path) / ONNX_DIR, runtime)


def graph_file(export_dir: str | Path, runtime: str) -> Path:
    """The graph file of ``runtime`` in an export folder: a model directory's ``onnx/``, or the folder
    an export is checked in before it replaces that one (``onnx_export.export_and_check``).

    Raises:
        ValueError: ``runtime`` is not an ONNX runtime.
    """
    if runtime not in GRAPH_NAMES:
        raise ValueError(f"{runtime!r} is not an ONNX runtime; expected one of {list(GRAPH_NAMES)}")
    return Path(export_dir) / GRAPH_NAMES[runtime]


def check_runtime(runtime: str) -> str:
    """``runtime`` when it is one of ``RUNTIMES``.

    Raises:
        ValueError: any other value, naming the allowed ones.
    """
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; expected one of {list(RUNTIMES)}")
    return runtime
