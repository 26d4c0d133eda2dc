"""Which MatMuls of an exported graph int8 quantizes: the plans, tried fastest first, and the quantizer.

Dynamic quantization (ONNX Runtime's ``quantize_dynamic``: int8 weights with one scale per output
channel, activations quantized per batch at run time) halves a BERT forward's cost on a CPU without
VNNI only when the feed-forward blocks are quantized too, and those carry the activation outliers that
one per-tensor int8 range holds worst (Bondarenko et al. 2021, "Understanding and Overcoming the
Challenges of Efficient Transformer Quantization"). How much that costs depends on the model: a
confident classifier keeps its labels, one whose inputs sit near its decision boundary flips some.
So each model gets the fastest plan that passes its own held-apart check (``onnx_export.judge``),
trying them in ``PLANS`` order and falling back operator by operator, as accuracy-aware tuning does
(Intel Neural Compressor's "accuracy-driven tuning" falls back ops to fp32 until the criterion holds).

Measured on all-MiniLM-L6-v2 with a head fitted on HatemojiBuild, HateCheck's 3,425 cases in sorted
batches of 32, 2 cores (AVX2, no VNNI), bare ONNX Runtime: fp32 585-626 examples/s; ``all`` 1,236-1,302
(mean cosine of the sentence vectors with fp32's 0.9913, labels equal to fp32's on 3,242 cases);
``ffn-output-fp32`` 903-929 (0.9948, 3,300); ``ffn-fp32`` 695-703 (0.9978, 3,349).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.config import settings


def _is_feed_forward_input(name: str) -> bool:
    return "/intermediate/dense/" in name


def _is_feed_forward_output(name: str) -> bool:
    # BERT names both the feed-forward output and the attention output ``.../output/dense``.
    return "/output/dense/" in name and "/attention/" not in name


@dataclass(frozen=True)
class Int8Plan:
    """One choice of MatMuls kept in fp32.

    Attributes:
        name: its key in ``DYNABENCH_ONNX_INT8_PLANS`` and on the model card.
        description: what stays in fp32, for people (the model card, the export manifest).
        keeps_fp32: node name -> whether that MatMul stays fp32.
    """

    name: str
    description: str
    keeps_fp32: Callable[[str], bool]

    def excluded(self, graph) -> list[str]:
        """Names of ``graph``'s MatMul nodes this plan leaves in fp32 (an ``onnx.ModelProto``). A graph
        without BERT's node names gets ``[]``: everything quantized, whatever the plan."""
        return [n.name for n in graph.graph.node if n.op_type == "MatMul" and self.keeps_fp32(n.name)]


ALL = Int8Plan("all", "every MatMul in int8", lambda name: False)
FFN_OUTPUT_FP32 = Int8Plan("ffn-output-fp32", "feed-forward output MatMuls in fp32", _is_feed_forward_output)
FFN_FP32 = Int8Plan(
    "ffn-fp32",
    "feed-forward MatMuls in fp32",
    lambda name: _is_feed_forward_input(name) or _is_feed_forward_output(name),
)
#: Fastest first; each keeps more of the graph in fp32 than the one before.
PLANS: tuple[Int8Plan, ...] = (ALL, FFN_OUTPUT_FP32, FFN_FP32)
BY_NAME = {plan.name: plan for plan in PLANS}


def check_plan_names(names) -> list[str]:
    """``names`` (a sequence of plan names) checked and put in ``PLANS`` order, duplicates dropped.

    Raises:
        ValueError: a name is not a plan, or none is given.
    """
    names = [str(n).strip() for n in names if str(n).strip()]
    unknown = sorted(set(names) - set(BY_NAME))
    if unknown:
        raise ValueError(f"unknown int8 plan(s) {unknown}; choose from {[p.name for p in PLANS]}")
    if not names:
        raise ValueError(f"name at least one int8 plan of {[p.name for p in PLANS]}")
    return [plan.name for plan in PLANS if plan.name in names]


def drop_points(drop: float, allowed: float) -> str:
    """The size of an accuracy change ``drop`` (a fraction; negative is a gain) in points, as people
    read it beside the ``allowed`` drop and beside accuracies given to two decimals: two decimals, one
    where the second is 0 (a change on up to 400 inputs is a multiple of 0.25 points, so this is exact);
    three where that would print 0.0 for a change, or the allowed figure for a drop that exceeds it (2 of
    399 is "0.501", not "0.5" beside "at most 0.5"). E.g. (0.012, 0.005) -> "1.2"; (-0.0075, 0.005) ->
    "0.75"; (-0.0004, 0.005) -> "0.04"."""
    size = abs(drop) * 100
    text = f"{size:.2f}"
    if text.endswith("0"):
        text = text[:-1]
    if (drop > allowed and float(text) <= allowed * 100) or (drop and float(text) == 0):
        return f"{size:.3f}"
    return text


def configured_plans() -> list[Int8Plan]:
    """The plans ``DYNABENCH_ONNX_INT8_PLANS`` allows (default all three), fastest first."""
    names = getattr(settings, "DYNABENCH_ONNX_INT8_PLANS", None) or [p.name for p in PLANS]
    return [BY_NAME[name] for name in check_plan_names(names)]


def quantize(fp32_path: str | Path, int8_path: str | Path, plan: Int8Plan) -> None:
    """Write ``int8_path`` from the fp32 graph at ``fp32_path`` with ``plan``'s MatMuls left in fp32.
    The file is written beside its destination and renamed over it, so a reader sees the old graph or
    the new one, never half of one. About 1.4 s for MiniLM on one core.

    Raises:
        Exception: whatever ``onnx`` or the quantizer raises (``onnx_export`` turns it into an
            ``ExportError``).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    destination = Path(int8_path)
    partial = destination.with_name(f".{destination.name}.{uuid.uuid4().hex[:8]}.partial")
    quantizer_log = logging.getLogger()
    level = quantizer_log.level
    # The quantizer reports every MatMul it skips (INFO) and suggests its pre-processing (WARNING).
    quantizer_log.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            str(fp32_path),
            str(partial),
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_exclude=plan.excluded(onnx.load(str(fp32_path), load_external_data=False)),
        )
        os.replace(partial, destination)
    finally:
        quantizer_log.setLevel(level)
        partial.unlink(missing_ok=True)
