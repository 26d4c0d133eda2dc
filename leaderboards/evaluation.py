"""Evaluate one registered model on one dataset: perf, per-tag accuracy, throughput, memory, fairness,
robustness (Dynaboard, Ma et al. 2021; docs/domain.md, "Fairness and robustness").

``evaluate_model_on_dataset(model, dataset)`` returns an ``Evaluation``; the job in
``leaderboards.jobs`` stores it on the ``Score``. Predictions come from ``models_registry.inference.predict``;
torch is imported (through ``engine.runtime.working_memory``) only to measure a local model's memory.

How each figure is measured:

* **perf**: the task's perf metric (``core.metrics``) of the predictions against the items'
  targets; ``accuracy`` and ``macro_f1`` are both kept for classification.
* **per_tag**: accuracy per item tag (``metrics.per_tag_breakdown``): ``{tag: {n, correct, accuracy}}``.
* **fooled**: the items the model gets wrong under the task's model-wrong rule (a label that differs;
  for QA a best F1 below the ``string_f1`` threshold), with ``n`` the cycle matrix's fooling rate
  (``cycle.matrix.selectors``).
* **span (QA) tasks**: the model's answer text stands for the label; ``metrics`` keeps SQuAD ``f1`` and
  ``exact_match`` (max over each item's reference answers, ``metrics.squad_f1``) instead of accuracy and
  macro-F1, the perf is the task's (``squad_f1`` or ``exact_match``), and per-tag "correct" means an
  exact match. Robustness compares the answers on perturbed questions with the original answers by F1.
* **throughput**: the median of ``DYNABENCH_THROUGHPUT_PASSES`` (default 5) timed passes of
  ``predict_batch(texts, batch_size)``, in items per second, wall-clock (``time.perf_counter``). Model
  loading happens before and is not counted; one warm-up batch (the first ``batch_size`` items) runs
  untimed first. Preprocessing and tokenisation are counted (they are part of serving the model).
  The predictions (perf and everything else) come from one pass over the whole dataset, timed as
  before (``seconds``, and ``throughput_full_pass`` = n / seconds). The timed passes run on a fixed
  sample so that their cost is bounded: ``throughput_sample_indices(n, size)``, items evenly spaced
  over the dataset in id order, the same for every model on it, where ``size`` is
  ``DYNABENCH_THROUGHPUT_SAMPLE`` (default 128) items, fewer on a dataset of long items: at most
  ``DYNABENCH_THROUGHPUT_SAMPLE_CHARS`` (default 16,000) characters of its average item, at least 16
  items (``throughput_sample_size``: 41 pairs of ANLI's round 1 test, 128 HateCheck statements). A
  dataset no larger than the sample is timed whole, and its prediction pass is the first timed pass
  (so it costs passes - 1 extra passes); a larger one gets ``passes`` passes of the sample. A model on
  an ONNX ``vectors`` graph reads its prediction pass's vectors from ``engine.runtime.vector_cache``
  where a model with the byte-identical graph (a quick-recipe target of the same task) already
  encoded the row, so that pass is never a timed pass; the warm-up and the timed passes run with the
  cache off (``vector_cache.uncached``) and always time the forward. The extra
  cost of an evaluation is therefore at most passes x sample predictions (640 short items or about
  80,000 characters by default, a few seconds for MiniLM on 2 cores), whatever the dataset's size. Stored: ``throughput`` (the median),
  ``throughput_passes`` (each pass's items/s, in the order run), ``throughput_spread`` (their
  relative range, ``throughput_summary``; None with one pass), ``throughput_sample`` (items per pass),
  ``throughput_extra_seconds`` (time of the passes beyond the prediction pass). The Dynascore's noise
  guard reads the spread (``leaderboards.dynascore``, "Measured spread"). The sample's items/s is not
  the full pass's: ``predict_batch`` sorts by length before batching, and a larger set gives batches
  of more even length (less padding), so a full pass over a large dataset runs faster (by about 10%
  for 512 HateCheck items against a sample of 128 in ``benchmarks/throughput_spread.py``). Every model
  is timed on the same sample, so these Scores compare with each other; a Score from before the
  passes (a full-pass figure) compares with them only after re-evaluation.
* **memory** (GiB): the model's weights (bytes of its parameters and buffers) plus its inference
  working memory: the peak of live tensor bytes during one ``predict_batch`` of the ``batch_size``
  longest texts of the dataset (by characters; the whole dataset when smaller), tracked operator by
  operator with a ``TorchDispatchMode`` (``engine.runtime.working_memory``). It is deterministic: two
  identical models on one dataset get the same figure, whatever ran before in the process. It runs
  after the timed run, so it does not slow the throughput. Kernel scratch space freed within one
  operator and the allocator's slack are not counted. ``metrics["working_memory"]`` keeps that peak
  (GiB) and ``metrics["memory_method"]`` names the method. ``metrics["peak_rss"]`` keeps, as an
  extra figure, the whole process's peak resident memory during the warm-up and timed run (Linux
  ``VmHWM`` after resetting it through ``/proc/self/clear_refs``, else ``ru_maxrss``; it includes
  the interpreter and Django and depends on the allocator's history, so it does not rank models).
* **fairness** / **robustness**: for the ``fairness`` / ``robustness`` perturbed copy of the dataset
  (``services.ensure_perturbed_dataset``), the perf metric of the model's predictions on the perturbed
  items scored against its own predictions on the matching original items
  (``metrics.consistency``); ``None`` when the task does not list the metric in ``delta_metrics`` or
  the perturbed copy has no items. ``fairness_n`` / ``robustness_n`` count the items used.
"""

from __future__ import annotations

import hashlib
import math
import re
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from core.metrics import (
    accuracy,
    consistency,
    macro_f1,
    per_tag_breakdown,
    perf_function,
    squad_answer_texts,
    squad_exact_match,
    squad_f1,
)
from leaderboards.kinds import rules_for
from models_registry.models import RegisteredModel
from models_registry.serving import (
    InferenceError,
    get_classifier,
    onnx_graph,
    predict,
    texts_for_inputs,
    vector_cache,
)
from tasks.rules import fooled_items

from .generative.evaluation import NotMultipleChoice, evaluate_generative_on_dataset
from .models import Dataset
from .perturbations import KINDS
from .services import ensure_perturbed_dataset

DEFAULT_BATCH_SIZE = 64
GIB = 1024**3

Progress = Callable[[str], None]


class EvaluationError(Exception):
    """The model cannot be evaluated on the dataset; the message says why (kept on the Score)."""


@dataclass
class Evaluation:
    """The figures of one evaluation; ``metrics`` is what ``Score.metrics`` stores."""

    perf: float
    metrics: dict = field(default_factory=dict)
    per_tag: dict = field(default_factory=dict)


# --- memory -----------------------------------------------------------------------------------------


def _status_kib(name: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(rf"^{name}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _maxrss_bytes() -> int:
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return value if sys.platform == "darwin" else value * 1024


class PeakMemory:
    """Peak resident memory of this process between ``start()`` and ``stop()`` (``peak``, bytes) and
    its growth. Kept as the extra ``peak_rss`` figure: it is not reproducible (module docstring)."""

    def __init__(self) -> None:
        self.method = ""
        self.baseline = 0
        self.peak = 0

    def start(self) -> None:
        rss = _status_kib("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as handle:  # noqa: PTH123 - a /proc control file
                handle.write("5")  # resets VmHWM to the current VmRSS (Linux >= 4.0)
            reset = _status_kib("VmHWM") is not None and rss is not None
        except OSError:
            reset = False
        if reset:
            self.method = "VmHWM after clear_refs"
            self.baseline = (_status_kib("VmRSS") or rss or 0) * 1024
        else:
            self.method = "ru_maxrss growth"
            self.baseline = _maxrss_bytes()

    def stop(self) -> int:
        """The growth in bytes (never negative); ``self.peak`` is the process's peak in bytes."""
        if self.method.startswith("VmHWM"):
            self.peak = (_status_kib("VmHWM") or 0) * 1024
        else:
            self.peak = _maxrss_bytes()
        return max(0, self.peak - self.baseline)


MEMORY_METHOD = "weights + peak live tensor bytes of the longest batch (TorchDispatchMode)"
#: An ONNX runtime's working memory is traced on the torch model of the same graph (same activations:
#: dynamic int8 quantizes weights, and activations only inside each MatMul).
ONNX_MEMORY_METHOD = (
    "ONNX graph file + peak live tensor bytes of the longest batch on the torch model (TorchDispatchMode)"
)


def longest_batch(texts: list, batch_size: int) -> list:
    """The ``batch_size`` longest texts (characters of ``str(text)``; pairs count both parts), in their
    dataset order; all of them when there are fewer. Ties keep the earlier text, so the choice is
    deterministic."""
    order = sorted(range(len(texts)), key=lambda i: (-len(str(texts[i])), i))[: max(1, batch_size)]
    return [texts[i] for i in sorted(order)]


def working_memory_bytes(classifier, texts: list, batch_size: int) -> int:
    """Peak live tensor bytes of ``classifier.predict_batch`` on ``longest_batch(texts, batch_size)``.

    Deterministic for a given model, texts and batch size (``engine.runtime.working_memory``).
    """
    # Imported here, not at the top: it loads torch, which a web process that only reads scores never needs.
    from models_registry.serving import peak_live_bytes

    batch = longest_batch(texts, batch_size)
    if getattr(classifier, "graph", None) is not None:
        classifier = classifier.on_torch()  # ONNX_MEMORY_METHOD: the same activations, traced on torch
    weights = [*classifier.model.parameters(), *classifier.model.buffers()]
    return peak_live_bytes(lambda: classifier.predict_batch(batch, batch_size=batch_size), exclude=weights)


# --- throughput -------------------------------------------------------------------------------------

#: The clock of every timed pass (seconds, monotonic); tests replace it with a scripted one.
_clock: Callable[[], float] = time.perf_counter


def throughput_sample_indices(n: int, size: int) -> list[int]:
    """Indices (into the dataset's items in id order) of the items each timed pass predicts:
    ``floor(i * n / size)`` for i in 0..size-1, evenly spaced from the first item, so the sample's text
    lengths follow the dataset's; ``range(n)`` when ``n <= size``. Deterministic: every model on one
    dataset is timed on the same items. E.g. ``(10, 4) -> [0, 2, 5, 7]``, ``(3, 4) -> [0, 1, 2]``."""
    size = max(1, size)
    if n <= size:
        return list(range(n))
    return [i * n // size for i in range(size)]


#: The fewest items a timed pass predicts when ``DYNABENCH_THROUGHPUT_SAMPLE_CHARS`` shrinks its sample.
MIN_SAMPLE_ITEMS = 16


def throughput_sample_size(texts: list, max_items: int, max_chars: int) -> int:
    """Items of each timed pass over ``texts`` (strings or (a, b) pairs, the whole dataset): at most
    ``max_items``, and at most about ``max_chars`` characters of the dataset's average item
    (``floor(max_chars / mean characters)``, a pair counting both texts), never below
    ``MIN_SAMPLE_ITEMS`` nor above ``len(texts)``; ``max_chars`` 0 sets no character bound.

    The characters bound the pass's cost on datasets of long items (NLI premises, QA passages) as the
    item count bounds it on short ones; it depends on the dataset only, so every model on one dataset
    is timed on the same items. E.g. 1,000 pairs of 470 characters, (128, 16000) -> 34; 3,000
    statements of 60 characters -> 128.
    """
    n = len(texts)
    size = max(1, max_items)
    if max_chars > 0 and n:
        total = sum(sum(map(len, t)) if isinstance(t, tuple) else len(str(t)) for t in texts)
        if total:
            size = min(size, max(MIN_SAMPLE_ITEMS, int(max_chars * n // total)))
    return min(size, n) if n else size


def throughput_summary(passes: list[float]) -> tuple[float | None, float | None]:
    """``(median, spread)`` of the passes' items/s.

    The spread is the relative range, (max - min) / median: the range, the plainest measure of
    dispersion (e.g. NIST/SEMATECH e-Handbook of Statistical Methods, "Measures of scale"), divided by
    the median so that it is a fraction comparable across models and datasets (0.03 is 3%). With 5
    passes it is preferred to the interquartile range, whose quartiles would be interpolated between
    neighbouring passes, and it is conservative: it covers every pass. None with fewer than two
    passes (one pass says nothing about its spread) or a median of 0; ``(None, None)`` for no passes.
    E.g. ``[100, 104, 98, 101, 99] -> (100, 0.06)``.
    """
    if not passes:
        return None, None
    median = statistics.median(passes)
    if len(passes) < 2 or median <= 0:
        return median, None
    return median, (max(passes) - min(passes)) / median


@dataclass
class ThroughputMeasure:
    """The timed passes of one evaluation (``time_passes``).

    Attributes:
        passes: items/s of each pass, in the order run (passes that took no measurable time are left out).
        sample: items per timed pass.
        extra_seconds: seconds of the passes run beyond the prediction pass.
    """

    passes: list[float]
    sample: int
    extra_seconds: float

    def metrics(self) -> dict:
        """The ``Score.metrics`` entries: throughput (median), its passes, spread, sample, extra time."""
        median, spread = throughput_summary(self.passes)
        return {
            "throughput": median,
            "throughput_passes": list(self.passes),
            "throughput_spread": spread,
            "throughput_sample": self.sample,
            "throughput_extra_seconds": round(self.extra_seconds, 4),
        }


def time_passes(
    run: Callable[[list, list], object],
    texts: list,
    inputs: list,
    *,
    full_seconds: float | None,
    passes: int,
    sample_size: int,
) -> ThroughputMeasure:
    """Time ``passes`` passes of ``run(texts, inputs)`` on ``throughput_sample_indices`` (module
    docstring, throughput).

    Args:
        run: predicts a list of texts with their inputs (the evaluation's ``_Predictor.labels``).
        texts, inputs: the whole dataset, in id order, of equal length.
        full_seconds: the time of the prediction pass over the whole dataset, already run; it is the
            first pass when the sample is the whole dataset. None when that pass cannot count (it
            read cached vectors): every pass is then run here.
        passes: how many timed passes (at least 1).
        sample_size: items of each pass (``DYNABENCH_THROUGHPUT_SAMPLE``).

    Returns:
        A ``ThroughputMeasure``; each pass's items/s is its items over its ``_clock()`` seconds.
    """
    n = len(texts)
    index = throughput_sample_indices(n, sample_size)
    timings: list[tuple[int, float]] = []
    if len(index) == n:
        if full_seconds is not None:
            timings.append((n, full_seconds))  # the prediction pass is the first timed pass
        sample_texts, sample_inputs = texts, inputs
    else:
        sample_texts, sample_inputs = [texts[i] for i in index], [inputs[i] for i in index]
    extra = 0.0
    while len(timings) < max(1, passes):
        started = _clock()
        run(sample_texts, sample_inputs)
        seconds = _clock() - started
        extra += seconds
        timings.append((len(sample_texts), seconds))
    rates = [items / seconds for items, seconds in timings if seconds > 0 and math.isfinite(seconds)]
    return ThroughputMeasure(passes=rates, sample=len(index), extra_seconds=extra)


# --- predictions ------------------------------------------------------------------------------------


class _Predictor:
    """Predict labels for texts with a registered model; loads it on construction (not timed)."""

    def __init__(self, model: RegisteredModel, batch_size: int) -> None:
        self.model = model
        self.batch_size = batch_size
        self.classifier = None
        if model.source != RegisteredModel.Source.ENDPOINT:  # weights on disk: local, upload, hub
            # The model as it is served: its runtime is part of the system (engine.runtime.runtimes).
            self.classifier = get_classifier(
                model.path, allow_pickle=model.allow_pickle, runtime=model.runtime
            )

    def labels(self, texts: list, inputs: list[dict]) -> list[str]:
        if self.classifier is not None:
            # The evaluation predicts in bulk: an ONNX model runs its batches side by side.
            with onnx_graph.bulk():
                outputs = self.classifier.predict_batch(texts, batch_size=self.batch_size)
        else:  # a remote endpoint: through the registry's predict, a batch at a time
            outputs = []
            for start in range(0, len(inputs), self.batch_size):
                outputs += predict(self.model, inputs[start : start + self.batch_size])
        if len(outputs) != len(texts):
            raise EvaluationError(f"the model answered {len(outputs)} outputs for {len(texts)} inputs")
        # A span (QA) model answers with text: its answer plays the part of the label.
        return [str(o["label"]) if "label" in o else str(o.get("answer", "")) for o in outputs]


def _per_tag(items: list, gold: list, predicted: list[str], spans: bool) -> dict:
    """Accuracy per tag; for span tasks the per-item "correct" is SQuAD exact match."""
    tags = [t for *_, t in items]
    if not spans:
        return per_tag_breakdown(tags, gold, predicted)
    hits = ["1" if squad_exact_match([g], [p]) == 1.0 else "0" for g, p in zip(gold, predicted, strict=True)]
    return per_tag_breakdown(tags, ["1"] * len(hits), hits)


def items_digest(item_ids: list[int]) -> str:
    """The sha256 (hex, first 16 characters) of the dataset items' ids in order: two scores with the same
    digest were made on the same items, so their ``fooled_items`` can be compared pairwise."""
    return hashlib.sha256(",".join(map(str, item_ids)).encode()).hexdigest()[:16]


def _fooled_metrics(cfg, item_ids: list[int], gold: list, predicted: list) -> dict:
    """``fooled`` (count), ``fooled_rule`` (in words), ``fooled_items`` (the ids of the items wrong,
    ascending) and ``items_digest`` (``items_digest``) of one evaluation."""
    wrong, rule = fooled_items(cfg, gold, predicted)
    return {
        "fooled": sum(wrong),
        "fooled_rule": rule,
        "fooled_items": [item_id for item_id, w in zip(item_ids, wrong, strict=True) if w],
        "items_digest": items_digest(item_ids),
    }


def _items(dataset: Dataset) -> list[tuple[int, dict, object, list]]:
    return list(dataset.items.order_by("pk").values_list("pk", "inputs", "target", "tags"))


def evaluate_model_on_dataset(
    model: RegisteredModel,
    dataset: Dataset,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
    passes: int | None = None,
    sample_size: int | None = None,
    sample_chars: int | None = None,
) -> Evaluation:
    """Evaluate ``model`` on ``dataset`` (see the module docstring for how each figure is measured).

    ``passes``, ``sample_size`` and ``sample_chars`` default to ``settings.DYNABENCH_THROUGHPUT_PASSES``,
    ``DYNABENCH_THROUGHPUT_SAMPLE`` and ``DYNABENCH_THROUGHPUT_SAMPLE_CHARS`` (``throughput_sample_size``).

    Returns:
        ``Evaluation(perf, metrics, per_tag)`` where ``metrics`` has ``accuracy``, ``macro_f1``
        (fractions in [0, 1]), ``throughput`` (items/s, the median of the timed passes), ``memory``
        (GiB), ``fairness`` and ``robustness`` (consistencies in [0, 1] or ``None``), ``n`` (items),
        ``fooled`` (items wrong under the task's model-wrong rule, ``tasks.rules.fooled_items``),
        ``fooled_rule`` (that rule in words), ``fooled_items`` (their item ids) and ``items_digest`` (of
        the items scored; ``items_digest``), plus ``perf_metric``, ``seconds`` (the prediction pass), ``throughput_full_pass`` (items/s of
        it), ``throughput_passes``, ``throughput_spread``, ``throughput_sample``,
        ``throughput_extra_seconds``, ``batch_size``, ``memory_method``, ``working_memory`` (GiB),
        ``peak_rss`` (GiB), ``peak_rss_method``, ``fairness_n``, ``robustness_n``.

    Raises:
        EvaluationError: the dataset is of another task, has no items, or has a target the task's
            perf metric cannot score.
        InferenceError: the model cannot be loaded or fails to predict.
    """
    if model.task_id != dataset.task_id:
        raise EvaluationError(f"model {model.name} and dataset {dataset.slug} belong to different tasks")
    task = dataset.task
    cfg = task.cfg
    if rules_for(cfg).generative:  # a generative model on multiple-choice items (generative_eval.py)
        try:
            perf, metrics, per_tag = evaluate_generative_on_dataset(model, dataset, progress=progress)
        except NotMultipleChoice as exc:
            raise EvaluationError(str(exc)) from None
        return Evaluation(perf=perf, metrics=metrics, per_tag=per_tag)
    try:
        perf_of = perf_function(cfg.perf_metric, cfg.labels)
    except ValueError as exc:
        raise EvaluationError(str(exc)) from exc
    items = _items(dataset)
    if not items:
        raise EvaluationError(f"dataset {dataset.slug} has no items")
    inputs = [inp for _, inp, _, _ in items]
    gold = [target for _, _, target, _ in items]
    spans = rules_for(cfg).span_answers
    try:
        for g in gold:
            if spans:
                squad_answer_texts(g)
            elif not isinstance(g, str):
                raise ValueError(g)
    except ValueError:
        kind = "span answers" if spans else "labels"
        raise EvaluationError(f"dataset {dataset.slug} has targets that are not {kind}") from None
    texts = texts_for_inputs(cfg.model_input_fields, inputs)

    predictor = _Predictor(model, batch_size)  # loading: not measured
    memory = PeakMemory()
    memory.start()
    with vector_cache.uncached():  # warms the graph itself, not the cache
        predictor.labels(texts[:batch_size], inputs[:batch_size])  # warm-up, untimed
    # The predictions may read vectors another model with the same graph computed (vector_cache);
    # then their pass does not time the forward and cannot be a timed pass.
    cached = vector_cache.may_read(predictor.classifier)
    started = _clock()
    predicted = predictor.labels(texts, inputs)
    seconds = _clock() - started
    memory.stop()
    with vector_cache.uncached():  # items/s measures the forward, never the cache
        timed = time_passes(
            predictor.labels,
            texts,
            inputs,
            full_seconds=None if cached else seconds,
            passes=settings.DYNABENCH_THROUGHPUT_PASSES if passes is None else passes,
            sample_size=throughput_sample_size(
                texts,
                settings.DYNABENCH_THROUGHPUT_SAMPLE if sample_size is None else sample_size,
                settings.DYNABENCH_THROUGHPUT_SAMPLE_CHARS if sample_chars is None else sample_chars,
            ),
        )
    throughput = timed.metrics()
    if progress is not None:
        spread = throughput["throughput_spread"]
        progress(
            f"{model.name} on {dataset.slug}: {len(items)} items in {seconds:.1f} s; "
            f"throughput {throughput['throughput'] or 0:.1f} items/s, median of {len(timed.passes)} "
            f"passes of {timed.sample} items" + (f", spread {spread:.1%}" if spread is not None else "")
        )

    weights = working = None
    if predictor.classifier is not None:  # after the timed run: the tracking slows the forward pass
        weights = predictor.classifier.weight_bytes()  # the graph file on ONNX, else the torch tensors
        working = working_memory_bytes(predictor.classifier, texts, batch_size)
    metrics: dict = {
        "perf_metric": cfg.perf_metric,
        **(
            {"f1": squad_f1(gold, predicted), "exact_match": squad_exact_match(gold, predicted)}
            if spans
            else {"accuracy": accuracy(gold, predicted), "macro_f1": macro_f1(gold, predicted, cfg.labels)}
        ),
        "n": len(items),
        # The items the model gets wrong under the task's model-wrong rule: the cycle matrix's count,
        # and which they are, so that two models on the same items are compared pairwise.
        **_fooled_metrics(cfg, [item_id for item_id, _, _, _ in items], gold, predicted),
        "seconds": round(seconds, 4),
        "throughput_full_pass": len(items) / seconds if seconds > 0 else None,
        **throughput,
        "batch_size": batch_size,
        "memory": (weights + working) / GIB if weights is not None else None,
        "working_memory": working / GIB if working is not None else None,
        "memory_method": (
            (MEMORY_METHOD if predictor.classifier.graph is None else ONNX_MEMORY_METHOD)
            if weights is not None
            else "not measured (remote model)"
        ),
        "runtime": model.runtime if predictor.classifier is not None else "endpoint",
        "peak_rss": memory.peak / GIB if weights is not None else None,
        "peak_rss_method": memory.method if weights is not None else None,
    }
    perf = perf_of(gold, predicted)

    by_item = {pk: label for (pk, _, _, _), label in zip(items, predicted, strict=True)}
    delta = set(cfg.raw.get("delta_metrics", []))
    for kind in KINDS:
        metrics[kind], metrics[f"{kind}_n"] = None, 0
        if kind not in delta:
            continue
        perturbed = ensure_perturbed_dataset(dataset, kind)
        p_items = list(perturbed.items.order_by("pk").values_list("inputs", "metadata"))
        p_items = [(inp, meta) for inp, meta in p_items if meta.get("source_item_id") in by_item]
        if not p_items:
            continue
        p_inputs = [inp for inp, _ in p_items]
        original = [by_item[meta["source_item_id"]] for _, meta in p_items]
        after = predictor.labels(texts_for_inputs(cfg.model_input_fields, p_inputs), p_inputs)
        metrics[kind] = consistency(original, after, perf_of)
        metrics[f"{kind}_n"] = len(p_items)
        if progress is not None:
            progress(f"{model.name} on {dataset.slug}: {kind} {metrics[kind]:.4f} on {len(p_items)} items")

    return Evaluation(perf=perf, metrics=metrics, per_tag=_per_tag(items, gold, predicted, spans))


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "Evaluation",
    "EvaluationError",
    "InferenceError",
    "evaluate_model_on_dataset",
]
