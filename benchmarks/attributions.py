"""Time per explanation (integrated gradients, ``engine.explain.attributions.attribute``) on a MiniLM target.

Run:  .venv/bin/python benchmarks/attributions.py [--train 600] [--statements 20] [--seed 0]

No database. Trains a quick MiniLM hate-speech target (frozen backbone, logistic-regression head) on the
first ``--train`` rows of HatemojiBuild's train split (``$DYNABENCH_DATA_DIR/hatemoji_build``, default
``../shared/data``), then explains the first ``--statements`` statements of its test split one at a
time, uncached (the outcome page's first opening of "Why did the model decide?"), after one warm-up
call. Prints ms per explanation at p50 / p95 / max, the tokens per statement, the largest
``|convergence delta|`` and how many explanations needed the 200-step retry; then the cached path
(``explain`` of the same text again, Django's local-memory cache).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _rows(path: Path, n: int) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [row for _, row in zip(range(n), csv.DictReader(handle), strict=False)]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=600)
    parser.add_argument("--statements", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import django

    django.setup()
    import torch

    from engine.explain.attributions import attribute
    from engine.runtime.classifier import Classifier
    from engine.training.classifier import train_classifier

    data = Path(os.environ.get("DYNABENCH_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
    folder = data / "hatemoji_build"
    train = _rows(folder / "train.csv", args.train)
    dev = _rows(folder / "validation.csv", 200)
    test = _rows(folder / "test.csv", args.statements)
    label = {"1": "hateful", "0": "not-hateful"}
    with tempfile.TemporaryDirectory() as tmp:
        result = train_classifier(
            train_texts=[r["text"] for r in train],
            train_labels=[label[r["label_gold"]] for r in train],
            dev_texts=[r["text"] for r in dev],
            dev_labels=[label[r["label_gold"]] for r in dev],
            labels=["hateful", "not-hateful"],
            output_dir=Path(tmp) / "target",
            recipe="quick",
            seed=args.seed,
        )
        print(
            f"target: MiniLM quick head on {len(train)} rows, dev accuracy {result.dev_accuracy:.3f}, "
            f"{result.seconds:.1f} s; torch threads {torch.get_num_threads()}"
        )
        classifier = Classifier(result.path)
        attribute(classifier, "warm up the model 🔥")
        times, tokens, deltas, retries = [], [], [], 0
        for row in test:
            start = time.perf_counter()
            explanation = attribute(classifier, row["text"])
            times.append((time.perf_counter() - start) * 1000)
            tokens.append(sum(1 for p in explanation.positions if p.kind == "token"))
            deltas.append(abs(explanation.convergence_delta))
            retries += explanation.n_steps != 50
            assert explanation.within_tolerance, row["text"]
        print(
            f"{len(test)} statements, {statistics.mean(tokens):.1f} tokens each on average (max {max(tokens)})"
        )
        print(
            f"ms per explanation: p50 {_percentile(times, 0.5):.0f}, p95 {_percentile(times, 0.95):.0f}, "
            f"max {max(times):.0f}"
        )
        print(f"largest |convergence delta| {max(deltas):.2e} logits; retries with 200 steps: {retries}")

        from django.core.cache import cache

        from models_registry import explanations
        from models_registry.models import RegisteredModel
        from tasks.models import Task
        from tasks.services import BUILTIN_TASKS

        # Unsaved rows: explain() reads only the model's pk, source, path and its task's config.
        task = Task(slug="hate-speech", name="bench", config=BUILTIN_TASKS["hate-speech"]["config"])
        model = RegisteredModel(pk=10**9, task=task, name="bench", path=str(result.path))
        cache.clear()
        statement = [{"statement": test[0]["text"]}]
        first = time.perf_counter()
        explanations.explain(model, statement)  # loads the model through the process cache, computes
        first_ms = (time.perf_counter() - first) * 1000
        start = time.perf_counter()
        for _ in range(100):
            [again] = explanations.explain(model, statement)
        assert again.available
        print(
            f"explain(): first call {first_ms:.0f} ms (model load included), "
            f"then cached {(time.perf_counter() - start) * 10:.2f} ms each (100 calls)"
        )


if __name__ == "__main__":
    main()
