"""Export a model directory to ONNX (fp32 and int8), check it against PyTorch, and choose its runtime.

``export_and_check(model_dir, texts)`` is what registration runs (``services``; a trained model is
registered too, so training runs it as well):

1. **Export** (``export_onnx``): the torch model, wrapped so the graph has plain tensor inputs and
   outputs (``onnx_graph`` names the kinds: ``vectors`` for this project's ``MeanPoolClassifier``,
   ``logits`` for any other classifier, ``span`` for a QA model), goes through ``torch.onnx.export``
   (the TorchScript exporter, opset ``OPSET``) with the batch and token axes dynamic, into
   ``<model dir>/onnx/model.fp32.onnx``. ONNX Runtime's ``quantize_dynamic`` writes
   ``model.int8.onnx`` from it (int8 weights, one scale per output channel, activations quantized per
   batch at run time; Jacob et al. 2018 give the affine scheme) with the MatMuls of an ``int8_plans``
   plan left in fp32. The files are written to a folder of their own, with ``export.json`` naming the
   kind, inputs, outputs, versions and int8 plan, checked there, and swapped in whole once the runtime
   is chosen: a ready model checked again goes on serving the graphs already judged until then.
   Whatever ``onnx/`` folder an upload carried is replaced: only graphs this platform exported are
   ever run.
2. **Check** (``agreement``): the held-apart ``texts`` go through the torch model and each graph. For a
   classifier: the share of texts whose label agrees and the largest absolute difference of any class
   probability. For a span model: the share of identical answers (text and offset) and the largest
   difference of the answer scores.
3. **Choose**: the preferred runtime (``DYNABENCH_MODEL_RUNTIME``) when its check passes: fp32 needs
   ``DYNABENCH_ONNX_FP32_MIN_AGREEMENT`` (1.0: identical labels). int8, on inputs with gold labels (a
   trained model's dev and test examples), may lose at most ``DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP``
   (0.005: half a point) of accuracy against torch; without labels it needs
   ``DYNABENCH_ONNX_INT8_MIN_AGREEMENT`` (0.995: at most 1 text in 200 changes its label, so no
   accuracy can move by more than half a point). Else the next one down (int8, fp32, torch), with a
   message saying why. An export that fails leaves the model on torch, with the reason.
   With int8 preferred, the int8 graph is tuned: the plans of ``DYNABENCH_ONNX_INT8_PLANS`` are tried
   fastest first (every MatMul in int8, then the feed-forward output in fp32, then the whole
   feed-forward block) and the first whose check passes is kept (``requantize`` rewrites the int8
   file); the card's int8 check names it (``plan``) and lists each one tried (``plans_tried``). When
   none passes, the most faithful stays on disk and the check that failed is the one shown.

The report is stored in the model card under ``"runtime"`` (``RuntimeReport.as_card``) and the chosen
runtime on ``RegisteredModel.runtime``. torch, onnx and onnxruntime are imported when used.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from engine.config import settings
from engine.runtime.int8_plans import FFN_FP32, Int8Plan, configured_plans, drop_points, quantize
from engine.runtime.model_files import InferenceError, swap_into_place, without_server_paths
from engine.runtime.onnx_graph import bulk
from engine.runtime.runtimes import (
    CHECK_FILE,
    CHECK_NAME,
    MANIFEST_NAME,
    ONNX_DIR,
    ONNX_FP32,
    ONNX_INT8,
    TORCH,
    check_runtime,
    graph_file,
)

logger = logging.getLogger(__name__)

OPSET = 17
#: Texts checked at most (the first ones given): enough for the int8 threshold to mean something.
MAX_CHECK_TEXTS = 400
#: Fallback order from the preferred runtime down.
ORDER = (ONNX_INT8, ONNX_FP32, TORCH)


class ExportError(Exception):
    """The model cannot be exported to ONNX; the message says why (kept on the model card)."""


@dataclass
class RuntimeReport:
    """What ``export_and_check`` found.

    Attributes:
        runtime: the chosen runtime (``runtimes.RUNTIMES``).
        preferred: the runtime asked for (``DYNABENCH_MODEL_RUNTIME``).
        checks: per ONNX runtime, ``{"n", "label_agreement", "max_probability_difference"}`` for a
            classifier or ``{"n", "answer_agreement", "max_score_difference"}`` for a span model;
            agreements are fractions in [0, 1]; ``"passed"`` says whether it met its threshold. The
            int8 check adds ``"plan"`` (the ``int8_plans`` plan of the graph on disk) and
            ``"plans_tried"`` (``[{"plan", "passed", and "accuracy_drop" or the agreement}]``, in the
            order tried).
        message: why the chosen runtime is not the preferred one ("" when it is).
        export_seconds: wall-clock of export, quantization and check.
        pinned: a task owner chose ``runtime`` (``services.set_runtime``), not the check.
    """

    runtime: str
    preferred: str
    checks: dict = field(default_factory=dict)
    message: str = ""
    export_seconds: float = 0.0
    pinned: bool = False

    def as_card(self) -> dict:
        """JSON-ready values for ``card["runtime"]``."""
        return asdict(self)


def _wrapped(model, kind: str, input_names: Sequence[str]):
    """A ``torch.nn.Module`` whose forward takes ``input_names`` tensors and returns plain tensors."""
    import torch

    from engine.runtime.modeling import mean_pool

    class Graph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *tensors):
            named = dict(zip(input_names, tensors, strict=True))
            if kind == "vectors":
                ids, mask = named["input_ids"], named["attention_mask"]
                # As the pooled classifiers encode each text (or each segment of a pair): type ids 0.
                states = self.inner.encoder_states(ids, mask, torch.zeros_like(ids))
                return mean_pool(states, mask)
            out = self.inner(**named)
            if kind == "span":
                return out.start_logits, out.end_logits
            return out.logits

    return Graph().eval()


def graph_kind(predictor) -> str:
    """``"span"`` for a QA predictor, ``"vectors"`` for this project's pooled classifiers (BERT or MPNet,
    ``modeling.PooledHead``), else ``"logits"``."""
    from engine.runtime.modeling import PooledHead

    if not predictor.labels and hasattr(predictor, "settings"):
        return "span"
    return "vectors" if isinstance(predictor.model, PooledHead) else "logits"


def export_onnx(model_dir: str | Path, predictor, plan: Int8Plan = FFN_FP32) -> dict:
    """Write ``<model_dir>/onnx/`` (fp32 graph, int8 graph quantized with ``plan``, manifest) from the
    loaded torch ``predictor`` (an ``inference.Classifier`` or ``qa_inference.SpanPredictor`` of that
    directory), in a folder of its own swapped in whole.

    Returns:
        The manifest written to ``onnx/export.json``.

    Raises:
        ExportError: the exporter or the quantizer failed (the old ``onnx/`` folder is then removed too,
            so no stale graph of other weights stays beside the new weights).
    """
    directory = Path(model_dir)
    work: Path | None = None
    try:
        work = _export_folder(directory)
        manifest = export_into(work, predictor, plan)
        _swap_in(work, directory)
    except ExportError:
        shutil.rmtree(directory / ONNX_DIR, ignore_errors=True)
        raise
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    return manifest


#: An export folder older than this was left by a worker killed in the middle (an export takes
#: seconds to minutes); the next export of the model removes it.
STALE_EXPORT_SECONDS = 24 * 3600


def _export_folder(model_dir: Path) -> Path:
    """A new empty folder inside ``model_dir`` (same file system, so it can be renamed into place).
    Export folders older than ``STALE_EXPORT_SECONDS`` are removed first: each holds a model's graphs
    (hundreds of MB) that a killed worker never swapped in nor removed.

    Raises:
        ExportError: the folder cannot be made (a read-only or missing model directory).
    """
    for old in model_dir.glob(f".{ONNX_DIR}-export-*"):
        try:
            stale = time.time() - old.stat().st_mtime > STALE_EXPORT_SECONDS
        except OSError:
            continue
        if stale:
            shutil.rmtree(old, ignore_errors=True)
    folder = model_dir / f".{ONNX_DIR}-export-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
    except OSError as exc:
        raise ExportError(f"could not export to ONNX: {type(exc).__name__}: {exc.strerror}") from exc
    return folder


def _swap_in(export_dir: Path, model_dir: Path) -> None:
    """Replace ``<model_dir>/onnx`` by the export folder, whole (``swap_into_place``).

    Raises:
        ExportError: a rename failed.
    """
    try:
        swap_into_place(export_dir, model_dir / ONNX_DIR)
    except OSError as exc:
        raise ExportError(f"could not export to ONNX: {type(exc).__name__}: {exc.strerror}") from exc


def export_into(export_dir: Path, predictor, plan: Int8Plan) -> dict:
    """Write the fp32 graph, the int8 graph quantized with ``plan`` and ``export.json`` into the empty
    folder ``export_dir`` from the loaded torch ``predictor``.

    Returns:
        The manifest written.

    Raises:
        ExportError: the exporter or the quantizer failed (files may be left in ``export_dir``).
    """
    import onnx
    import onnxruntime
    import torch

    kind = graph_kind(predictor)
    input_names = ["input_ids", "attention_mask"]
    if kind != "vectors":
        probe = predictor.tokenizer("a probe", "a second text", return_tensors="pt")
        input_names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in probe]
    output_names = {"vectors": ["vectors"], "logits": ["logits"], "span": ["start_logits", "end_logits"]}[
        kind
    ]
    dummy = predictor.tokenizer(
        ["an example sentence for the exporter", "a second, longer example sentence for the exporter"],
        ["a short one", "another text"],
        padding=True,
        return_tensors="pt",
    )
    tensors = tuple(dummy[name] for name in input_names)
    dynamic = {name: {0: "batch", 1: "tokens"} for name in input_names}
    for name in output_names:
        dynamic[name] = {0: "batch", 1: "tokens"} if kind == "span" else {0: "batch"}
    try:
        fp32 = graph_file(export_dir, ONNX_FP32)
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _wrapped(predictor.model, kind, input_names),
                tensors,
                str(fp32),
                input_names=input_names,
                output_names=output_names,
                dynamic_axes=dynamic,
                opset_version=OPSET,
                dynamo=False,
            )
        onnx.checker.check_model(str(fp32))
        quantize(fp32, graph_file(export_dir, ONNX_INT8), plan)
        manifest = {
            "kind": kind,
            "inputs": input_names,
            "outputs": output_names,
            "opset": OPSET,
            "torch": torch.__version__,
            "onnxruntime": onnxruntime.__version__,
            **_quantization_facts(plan),
        }
        (export_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    except Exception as exc:
        detail = without_server_paths(f"{type(exc).__name__}: {exc}", export_dir.parent)
        raise ExportError(f"could not export to ONNX: {detail}") from exc
    return manifest


def _quantization_facts(plan: Int8Plan) -> dict:
    """The manifest's record of how ``model.int8.onnx`` was made."""
    return {
        "quantization": "dynamic, int8 weights per channel (onnxruntime quantize_dynamic, QInt8)",
        "int8_plan": plan.name,
        "int8_fp32_parts": plan.description,
    }


def requantize(model_dir: str | Path, plan: Int8Plan, export_dir: str | Path | None = None) -> None:
    """Replace the int8 graph by the fp32 graph quantized with ``plan`` and record the plan in the
    manifest (each file renamed into place whole), in the export folder ``export_dir`` (default the
    model's own ``onnx/``).

    Raises:
        ExportError: the quantizer failed or the folder has no exported fp32 graph.
    """
    directory = Path(model_dir)
    folder = directory / ONNX_DIR if export_dir is None else Path(export_dir)
    try:
        quantize(graph_file(folder, ONNX_FP32), graph_file(folder, ONNX_INT8), plan)
        manifest_path = folder / MANIFEST_NAME
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        manifest.update(_quantization_facts(plan))
        partial = manifest_path.with_name(f".{manifest_path.name}.{uuid.uuid4().hex[:8]}")
        partial.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        partial.replace(manifest_path)
    except Exception as exc:
        detail = without_server_paths(f"{type(exc).__name__}: {exc}", directory)
        raise ExportError(f"could not quantize to int8 ({plan.name}): {detail}") from exc


def agreement(reference: list[dict], candidate: list[dict]) -> dict:
    """How far a runtime's outputs are from the torch outputs on the same inputs.

    Args:
        reference / candidate: ``predict_batch`` outputs, one per input, in the same order: classifier
            dicts (``label``, ``probabilities``) or span dicts (``answer``, ``answer_start``, ``score``).

    Returns:
        Classifier: ``{"n", "label_agreement", "max_probability_difference"}``; span:
        ``{"n", "answer_agreement", "max_score_difference"}``. E.g. labels a, b vs a, c with
        probabilities {a: .9, b: .1} vs {a: .8, b: .2} on the first -> agreement 0.5, difference >= 0.1.

    Raises:
        ValueError: the two lists differ in length or are empty.
    """
    if len(reference) != len(candidate) or not reference:
        raise ValueError(f"cannot compare {len(reference)} outputs with {len(candidate)}")
    n = len(reference)
    if "label" in reference[0]:
        same = sum(r["label"] == c["label"] for r, c in zip(reference, candidate, strict=True))
        largest = max(
            abs(p - c["probabilities"].get(label, 0.0))
            for r, c in zip(reference, candidate, strict=True)
            for label, p in r["probabilities"].items()
        )
        return {"n": n, "label_agreement": same / n, "max_probability_difference": round(largest, 6)}
    same = sum(
        (r["answer"], r["answer_start"]) == (c["answer"], c["answer_start"])
        for r, c in zip(reference, candidate, strict=True)
    )
    largest = max(abs(r["score"] - c["score"]) for r, c in zip(reference, candidate, strict=True))
    return {"n": n, "answer_agreement": same / n, "max_score_difference": round(largest, 6)}


def threshold(runtime: str) -> float:
    """The least agreement with torch that ``runtime`` needs to be chosen (module docstring, step 3)."""
    if runtime == ONNX_INT8:
        return float(getattr(settings, "DYNABENCH_ONNX_INT8_MIN_AGREEMENT", 0.995))
    return float(getattr(settings, "DYNABENCH_ONNX_FP32_MIN_AGREEMENT", 1.0))


def max_accuracy_drop() -> float:
    """``DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP`` (default 0.005: half a point)."""
    return float(getattr(settings, "DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP", 0.005))


def judge(
    runtime: str, check: dict, targets: Sequence | None, reference: list[dict], outputs: list[dict]
) -> dict:
    """``check`` with ``passed`` (and, for int8 on labelled inputs, the accuracies) filled in.

    int8 on inputs with gold labels (``targets``, a classifier's): passes when its accuracy is at most
    ``max_accuracy_drop()`` below torch's (``rule: "accuracy"``; keys ``accuracy``, ``torch_accuracy``,
    ``accuracy_drop``, fractions). Otherwise (fp32 always, int8 without labels): passes when the share
    of agreeing outputs is at least ``threshold(runtime)`` (``rule: "agreement"``).
    """
    check = dict(check)
    if runtime == ONNX_INT8 and targets and "label" in reference[0]:
        n = len(targets)
        torch_accuracy = sum(r["label"] == t for r, t in zip(reference, targets, strict=True)) / n
        accuracy = sum(o["label"] == t for o, t in zip(outputs, targets, strict=True)) / n
        drop = torch_accuracy - accuracy
        check.update(
            rule="accuracy",
            accuracy=round(accuracy, 6),
            torch_accuracy=round(torch_accuracy, 6),
            accuracy_drop=round(drop, 6),
            passed=drop <= max_accuracy_drop() + 1e-12,
        )
        return check
    share = check.get("label_agreement", check.get("answer_agreement", 0.0))
    check.update(rule="agreement", passed=share >= threshold(runtime))
    return check


def choose(preferred: str, checks: dict) -> tuple[str, str]:
    """The runtime to serve with and why it is not ``preferred`` ("" when it is).

    Walks ``ORDER`` from ``preferred`` down and takes the first runtime that is torch or whose check
    passed. E.g. preferred int8 with int8 at 0.97 and fp32 at 1.0 -> ``("onnx-fp32", "int8 weights
    agreed with PyTorch on 97.0% of labels (needs 99.5%); serving the fp32 graph")``.
    """
    check_runtime(preferred)
    reasons = []
    for runtime in ORDER[ORDER.index(preferred) :]:
        if runtime == TORCH:
            break
        check = checks.get(runtime)
        if check and check.get("passed"):
            return runtime, _because(reasons, runtime)
        if not check:
            continue
        name = "int8 weights" if runtime == ONNX_INT8 else "the fp32 graph"
        if check.get("rule") == "accuracy":
            reasons.append(
                f"{name} lost {drop_points(check['accuracy_drop'], max_accuracy_drop())} points of accuracy "
                f"against PyTorch on {check['n']} labelled held-apart inputs "
                f"(at most {max_accuracy_drop() * 100:.1f} allowed)"
            )
        else:
            share = check.get("label_agreement", check.get("answer_agreement", 0.0))
            what = "labels" if "label_agreement" in check else "answers"
            reasons.append(
                f"{name} agreed with PyTorch on {share:.1%} of {what} (needs {threshold(runtime):.1%})"
            )
    return TORCH, _because(reasons, TORCH)


def _tried(plan: Int8Plan, check: dict) -> dict:
    """One line of an int8 check's ``plans_tried``: the plan, whether it passed and the figure judged."""
    keys = ("accuracy_drop",) if check.get("rule") == "accuracy" else ("label_agreement", "answer_agreement")
    return {
        "plan": plan.name,
        "passed": bool(check.get("passed")),
        **{k: check[k] for k in keys if k in check},
    }


def _because(reasons: list[str], runtime: str) -> str:
    if not reasons:
        return ""
    serving = {ONNX_FP32: "serving the fp32 graph", TORCH: "serving with PyTorch"}.get(runtime, runtime)
    return "; ".join(reasons) + f"; {serving}"


def save_check_inputs(export_dir: str | Path, texts: Sequence, targets: Sequence | None) -> None:
    """Keep the inputs an export was checked on in its folder's ``check-inputs.json`` (``{"texts",
    "targets"}``; a pair as a 2-list), so that checking the model again (admin "Check again") repeats
    the same check instead of falling back to the probe sentences. Server-side only: never shown or
    served."""
    data = {"texts": [list(t) if isinstance(t, tuple) else t for t in texts], "targets": targets}
    file = Path(export_dir) / CHECK_NAME
    file.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def saved_check_inputs(model_dir: str | Path) -> tuple[list, list | None] | None:
    """``(texts, targets)`` that ``save_check_inputs`` kept, pairs as tuples; None when there is no
    readable file (never exported here, or exported before the file existed)."""
    try:
        data = json.loads((Path(model_dir) / CHECK_FILE).read_text(encoding="utf-8"))
        texts = [tuple(t) if isinstance(t, list) else t for t in data["texts"]]
        targets = data.get("targets")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not texts or not all(isinstance(t, str) or (isinstance(t, tuple) and len(t) == 2) for t in texts):
        return None
    return texts, targets if isinstance(targets, list) else None


def preferred_runtime() -> str:
    """``DYNABENCH_MODEL_RUNTIME`` (default ``onnx-int8``), checked."""
    return check_runtime(str(getattr(settings, "DYNABENCH_MODEL_RUNTIME", ONNX_INT8)))


def export_and_check(
    model_dir: str | Path,
    texts: Sequence,
    *,
    targets: Sequence | None = None,
    allow_pickle: bool = False,
    preferred: str | None = None,
) -> RuntimeReport:
    """Export, check and choose (module docstring). Never raises for a model that cannot be exported:
    the report then says ``torch`` and why.

    Args:
        model_dir: a directory that already passed ``checks.check_model_folder``.
        texts: held-apart model inputs (strings, or (a, b) pairs; (passage, question) for span models),
            at most ``MAX_CHECK_TEXTS`` are used; none means no export (torch, with a message).
        targets: their gold labels, when known (a trained model's dev and test examples), aligned with
            ``texts``: int8 is then judged on accuracy (``judge``).
        preferred: the runtime asked for; default ``preferred_runtime()``. ``torch`` skips the export.
    """
    from engine.runtime.classifier import get_classifier

    preferred = check_runtime(preferred or preferred_runtime())
    if preferred == TORCH:
        shutil.rmtree(Path(model_dir) / ONNX_DIR, ignore_errors=True)
        return RuntimeReport(runtime=TORCH, preferred=TORCH)
    texts = list(texts)[:MAX_CHECK_TEXTS]
    if targets is not None:
        targets = list(targets)[: len(texts)]
        if len(targets) != len(texts) or not all(isinstance(t, str) for t in targets):
            targets = None  # not labels for every text: judge on agreement instead
    if not texts:
        return RuntimeReport(runtime=TORCH, preferred=preferred, message="no inputs to check an export on")
    started = time.perf_counter()
    # int8 preferred: the fastest plan that passes. Otherwise int8 is not served unless a task owner
    # pins it, so the most faithful plan is made once.
    plans = configured_plans() if preferred == ONNX_INT8 else configured_plans()[-1:]

    directory = Path(model_dir)
    # The new graphs are written and checked in a folder of their own and replace the served ``onnx/``
    # only once chosen: while a ready model is checked again, live requests keep the judged graphs.
    staged: Path | None = None

    def check(runtime: str) -> dict:
        with bulk():  # the held-apart inputs in batches side by side (onnx_graph.map_batches)
            outputs = reference_model.on_graph(runtime, staged).predict_batch(texts)
        return judge(runtime, agreement(reference, outputs), targets, reference, outputs)

    try:
        reference_model = get_classifier(model_dir, allow_pickle=allow_pickle)
        reference = reference_model.predict_batch(texts)
        staged = _export_folder(directory)
        export_into(staged, reference_model, plans[0])
        checks = {ONNX_FP32: check(ONNX_FP32)}
        tried = []
        for index, plan in enumerate(plans):
            if index:
                requantize(model_dir, plan, staged)
            int8 = check(ONNX_INT8)
            tried.append(_tried(plan, int8))
            if int8["passed"]:
                break
        checks[ONNX_INT8] = {**int8, "plan": plan.name, "plans_tried": tried}
        save_check_inputs(staged, texts, targets)
        _swap_in(staged, directory)
    except (ExportError, InferenceError) as exc:
        logger.warning("ONNX export of %s failed: %s", model_dir, exc)
        # As export_onnx: no graph of other weights may stay beside these (the model is on torch now).
        shutil.rmtree(directory / ONNX_DIR, ignore_errors=True)
        return RuntimeReport(
            runtime=TORCH,
            preferred=preferred,
            message=f"{exc}; serving with PyTorch",
            export_seconds=round(time.perf_counter() - started, 2),
        )
    finally:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
    runtime, message = choose(preferred, checks)
    return RuntimeReport(
        runtime=runtime,
        preferred=preferred,
        checks=checks,
        message=message,
        export_seconds=round(time.perf_counter() - started, 2),
    )
