"""Throughput and accuracy of the platform's evaluator, per runtime, vs a plain ``transformers`` loop.

Run:  .venv/bin/python benchmarks/evaluator_throughput.py [--n 3425] [--repeats 3]
          [--runtimes torch,onnx-fp32,onnx-int8] [--database-url URL]

A throwaway test database is created (``setup_databases``) and dropped at the end. HateCheck is
imported into it from ``settings.DYNABENCH_DATA_DIR`` (``leaderboards.importers.static_sets``), cut to
its first ``--n`` items, and an all-MiniLM-L6-v2 classifier with its head fitted on HatemojiBuild's
training split (``benchmarks.minilm_model``; its forward costs what any MiniLM target's costs) is
registered with ``register_local_model`` (which exports it to ONNX). Then, for each runtime of
``--runtimes`` (the model's ``runtime`` set to it, whatever its registration chose), alternating,
``--repeats`` times each in ABBA order (the median is reported):

  * platform: ``leaderboards.jobs.run_evaluation_job(score_id)``, the code path of the evaluation job
    (claim the Score, read the items, ``evaluate_model_on_dataset``, store the figures). Reported:
    ``Score.metrics["throughput"]`` as the platform measured it (items/s of ``predict_batch`` over the
    dataset after one untimed warm-up batch; model loading excluded), and our own wall-clock of the
    whole job (the model is already loaded and cached in the process, so loading is excluded too).
    The job's wall-clock also covers reading items, the metrics, the fairness and robustness
    predictions on the perturbed copies (up to 500 items each) and the Score write, so its items/s
    (n / wall) is not like-for-like; the ratio uses the platform's own figure.
  * plain: ``AutoTokenizer`` + ``AutoModelForSequenceClassification`` loaded from the same directory,
    the same texts in dataset order, the same batch size and max length, padding and truncation,
    ``torch.inference_mode()``, softmax, argmax; one untimed warm-up batch, then every item timed.
    The platform additionally preprocesses each text (emoji -> names, NFKC, whitespace) and sorts
    by length before batching; the ratio includes both.

The perturbed copies are built before the first run (the job would build them on its first run);
each run has its own untimed warm-up batch and the model is warmed by its registration probe. Prints,
per runtime, examples/s for both, the ratio of the medians platform/plain (aim: at least 2 on ONNX)
and, as a check on load from other processes, the ratio within each alternating pair; the accuracy of
both on HateCheck's labels and how many of the runtime's labels equal the torch runtime's (aims: int8
within 0.5 points of torch, fp32 identical); torch threads, items, batch size.
About 75 s on 2 idle cores with all 3,425 items; other CPU-heavy processes on the machine slow both
sides (up to 5x) and make single runs swing, so read the per-pair ratios too, or lower ``--n``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.minilm_model import register_fitted_minilm  # noqa: E402
from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402

HATECHECK_ITEMS = 3425


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--n", type=int, default=HATECHECK_ITEMS, help=f"HateCheck items (default all, {HATECHECK_ITEMS})"
    )
    parser.add_argument("--repeats", type=int, default=3, help="measured runs of each (default 3)")
    parser.add_argument(
        "--runtimes", default="torch,onnx-fp32,onnx-int8", help="comma-separated runtimes to measure"
    )
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_bench2")
    args = parser.parse_args()

    def go() -> None:
        from django.conf import settings

        run(args, settings)

    # Registering must not run the evaluation inline.
    run_on_throwaway_database(args.database_url, go, DYNABENCH_JOBS_SYNC="0")


def build_model(task, model_dir: Path):
    """Write ``benchmarks.minilm_model``'s classifier to ``model_dir`` and register it ready (exported to
    ONNX when ``DYNABENCH_MODEL_RUNTIME`` asks for it)."""
    from django.conf import settings

    return register_fitted_minilm(task, "bench-minilm", model_dir, Path(settings.DYNABENCH_DATA_DIR))


def run(args, settings) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from engine.runtime import modeling  # noqa: F401  (registers the classifier with the Auto classes)
    from engine.runtime.classifier import get_classifier
    from leaderboards.evaluation import DEFAULT_BATCH_SIZE
    from leaderboards.importers.static_sets import HATECHECK_SET, import_static_set
    from leaderboards.jobs import run_evaluation_job
    from leaderboards.models import Dataset, DatasetItem, Score
    from leaderboards.perturbations import KINDS
    from leaderboards.scheduling import request_evaluations
    from leaderboards.services import ensure_perturbed_dataset
    from models_registry.models import RegisteredModel
    from tasks.services import ensure_builtin_task

    task = ensure_builtin_task("hate-speech")
    report = import_static_set(task=task, spec=HATECHECK_SET, data_dir=Path(settings.DYNABENCH_DATA_DIR))
    dataset = Dataset.objects.get(task=task, slug=HATECHECK_SET.slug)
    keep = list(dataset.items.order_by("pk").values_list("pk", flat=True)[: args.n])
    DatasetItem.objects.filter(dataset=dataset).exclude(pk__in=keep).delete()

    model_dir = Path(tempfile.mkdtemp(prefix="bench-eval-model-"))
    model = build_model(task, model_dir)
    print(
        f"registered with runtime {model.runtime}: {model.card.get('runtime', {}).get('message') or 'as asked'}"
    )
    for runtime, check in (model.card.get("runtime", {}).get("checks") or {}).items():
        print(f"  export check {runtime}: {check}")
    request_evaluations(model=model, queue=False)
    score = Score.objects.get(model=model, dataset=dataset)

    rows = list(dataset.items.order_by("pk").values_list("inputs", "target"))
    texts = [inp["statement"] for inp, _ in rows]
    gold = [target for _, target in rows]
    n = len(texts)
    batch_size = DEFAULT_BATCH_SIZE
    max_length = get_classifier(model.path).max_length

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    plain_model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), local_files_only=True
    ).eval()
    names = [plain_model.config.id2label[i] for i in range(plain_model.config.num_labels)]

    def plain_labels(batch_texts: list[str]) -> list[str]:
        labels: list[str] = []
        with torch.inference_mode():
            for start in range(0, len(batch_texts), batch_size):
                encoded = tokenizer(
                    batch_texts[start : start + batch_size],
                    padding=True,
                    truncation=True,
                    max_length=max_length,
                    return_tensors="pt",
                )
                probs = torch.softmax(plain_model(**encoded).logits, dim=-1)
                labels += [names[i] for i in probs.argmax(dim=-1).tolist()]
        return labels

    def plain() -> float:
        plain_labels(texts[:batch_size])  # warm-up batch, untimed
        started = time.perf_counter()
        plain_labels(texts)
        return n / (time.perf_counter() - started)

    def platform() -> tuple[float, float]:
        Score.objects.filter(pk=score.pk).update(status=Score.Status.PENDING)
        started = time.perf_counter()
        status = run_evaluation_job(score.pk)
        wall = time.perf_counter() - started
        row = Score.objects.get(pk=score.pk)
        if status != Score.Status.DONE:
            raise SystemExit(f"evaluation job ended {status}: {row.error_message}")
        if row.metrics["n"] != n:
            raise SystemExit(f"the job evaluated {row.metrics['n']} items, expected {n}")
        return row.metrics["throughput"], wall

    def accuracy(labels: list[str]) -> float:
        return sum(a == b for a, b in zip(labels, gold, strict=True)) / n

    # The job builds the perturbed copies on its first run; build them now so no run pays for it.
    for kind in KINDS:
        ensure_perturbed_dataset(dataset, kind)
    plain_accuracy = accuracy(plain_labels(texts))
    torch_labels = [o["label"] for o in get_classifier(model.path).predict_batch(texts)]
    print(
        f"HateCheck items: {n} (imported {report.created}), batch size: {batch_size}, "
        f"max length: {max_length}, torch threads: {torch.get_num_threads()}, "
        f"repeats: {args.repeats} (alternating ABBA, median)"
    )
    print(
        "the platform also preprocesses (emoji -> names, normalisation) and sorts by length; the plain "
        "loop does neither, so their accuracies differ a little even on torch"
    )
    print(f"plain transformers loop accuracy: {plain_accuracy:.4f}")
    header = (
        f"{'runtime':12}{'platform ex/s':>15}{'plain ex/s':>12}{'ratio':>8}{'accuracy':>10}{'vs torch':>10}"
    )
    lines = []
    for runtime in [r.strip() for r in args.runtimes.split(",") if r.strip()]:
        RegisteredModel.objects.filter(pk=model.pk).update(runtime=runtime)
        served = get_classifier(model.path, runtime=runtime)  # loaded once; the job reuses it
        labels = [o["label"] for o in served.predict_batch(texts)]
        same = sum(a == b for a, b in zip(labels, torch_labels, strict=True))
        measured, walls, plains = [], [], []
        for repeat in range(args.repeats):
            # ABBA order (platform first, then plain first, ...) so a drift in machine load is shared.
            if repeat % 2:
                plains.append(plain())
            throughput, wall = platform()
            measured.append(throughput)
            walls.append(wall)
            if not repeat % 2:
                plains.append(plain())
        metrics = Score.objects.get(pk=score.pk).metrics
        p_med, plain_med = statistics.median(measured), statistics.median(plains)
        pairs = [a / b for a, b in zip(measured, plains, strict=True)]
        lines.append(
            f"{runtime:12}{p_med:15.1f}{plain_med:12.1f}{p_med / plain_med:8.2f}"
            f"{metrics['accuracy']:10.4f}{same:>6}/{n} same labels"
        )
        print(
            f"{runtime}: platform runs {', '.join(f'{v:.1f}' for v in measured)}; plain runs "
            f"{', '.join(f'{v:.1f}' for v in plains)}; per-pair ratios {', '.join(f'{r:.2f}' for r in pairs)}; "
            f"job wall {', '.join(f'{w:.2f} s' for w in walls)}; memory {metrics['memory']:.3f} GiB"
        )
    print(header)
    for line in lines:
        print(line)
    print(
        "aims: ratio at least 2 on ONNX; int8 accuracy within 0.005 of torch; fp32 labels identical to torch"
    )


if __name__ == "__main__":
    main()
