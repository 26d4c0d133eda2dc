"""Train the NLI targets as the demo does (ANLI rounds (1), (1, 2), (1, 2, 3)) and score each on every round's test split.

Run:  .venv/bin/python benchmarks/nli_target.py [--recipe quick|finetune] [--pooling pair|mean]
          [--seed 0] [--check N] [--output DIR]

No database: the pairs are read with the importer's own functions (``annotation.importers.anli``:
``read_anli`` and the split rule of ``docs/datasets.md``: rounds 1-2 dev files 90% train / 10% dev with
the test files as test, round 3's dev file 60/10/30), and each target is trained with
``engine.training.classifier.train_classifier`` on the union of its rounds' train splits with the union of
their dev splits for model selection, as ``cycle.training.targets.train_target_for_rounds``
does. Test accuracy is measured on rounds 1, 2 and 3's test splits (1,000 / 1,000 / 307 pairs; round 3's
is 30% of its dev file).

Quick targets share one frozen backbone, so the test pairs are embedded once and each saved head is
applied to those vectors; ``--check N`` (default 100) also serves N test pairs per round through the
platform's ``inference.Classifier`` and reports how many predictions agree with the shortcut. Fine-tuned
targets are scored through the ``Classifier`` only. Prints per target the dev accuracy, the chosen L2,
the test accuracies, the wall and CPU seconds of training and the embedding-cache hits.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

LABELS = ["entailment", "neutral", "contradiction"]
#: The demo's NLI targets (``demo/demo_tasks/nli.py``): rounds trained on.
TARGETS = ((1,), (1, 2), (1, 2, 3))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    import django

    django.setup()
    import torch
    from django.conf import settings
    from transformers import AutoTokenizer

    from annotation.importers.anli import read_anli
    from annotation.importers.common import ImportReport
    from engine.runtime.classifier import get_classifier
    from engine.runtime.embeddings import EMBEDDING_CACHE, embed_texts
    from engine.runtime.modeling import MeanPoolClassifier
    from engine.runtime.preprocessing import preprocess_all
    from engine.training.classifier import train_classifier

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="quick", choices=["quick", "finetune"])
    parser.add_argument("--pooling", default=None, choices=["pair", "mean"], help="default: pair")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", type=int, default=100, help="test pairs per round served for real")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    report = ImportReport(source="ANLI")
    big = 10**9  # no length limit: the task's limits only skip rows, none of these files hit them
    rows = read_anli(Path(settings.DYNABENCH_DATA_DIR) / "anli", report, (big, big))
    data: dict[tuple[int, str], list[tuple[tuple[str, str], str]]] = {}
    for row in rows:
        pair = (row.context["premise"], row.inputs["hypothesis"])
        data.setdefault((row.round_number, str(row.split)), []).append((pair, row.target))
    for number in (1, 2, 3):
        counts = ", ".join(f"{len(data.get((number, s), []))} {s}" for s in ("train", "dev", "test"))
        print(f"round {number}: {counts}")

    output = args.output or Path(tempfile.mkdtemp(prefix="nli-target-"))
    tests = {n: data[(n, "test")] for n in (1, 2, 3)}
    test_vectors: dict[int, torch.Tensor] = {}
    for rounds in TARGETS:
        train = [item for n in rounds for item in data[(n, "train")]]
        dev = [item for n in rounds for item in data[(n, "dev")]]
        name = "r" + "-".join(map(str, rounds))
        cpu0, hits0 = _cpu_seconds(), EMBEDDING_CACHE.hits
        result = train_classifier(
            train_texts=[x for x, _ in train],
            train_labels=[y for _, y in train],
            dev_texts=[x for x, _ in dev],
            dev_labels=[y for _, y in dev],
            labels=LABELS,
            output_dir=output / name,
            recipe=args.recipe,
            seed=args.seed,
            pooling=args.pooling,
        )
        train_cpu = _cpu_seconds() - cpu0
        print(
            f"target rounds {rounds} ({args.recipe}, {result.details['pooling']}): {result.n_train} train, "
            f"{result.n_dev} dev; dev accuracy {result.dev_accuracy:.4f}; l2 {result.details.get('l2')}; "
            f"{result.seconds:.0f} s wall, {train_cpu:.0f} CPU s; "
            f"{EMBEDDING_CACHE.hits - hits0} vectors from the embedding cache",
            flush=True,
        )
        classifier = get_classifier(result.path)
        line = []
        for number, items in tests.items():
            texts = [x for x, _ in items]
            gold = [y for _, y in items]
            check = random.Random(args.seed).sample(range(len(items)), min(args.check, len(items)))
            served = classifier.predict_batch([texts[i] for i in check]) if check else []
            if args.recipe == "quick":
                model: MeanPoolClassifier = classifier.model
                if number not in test_vectors:
                    tokenizer = AutoTokenizer.from_pretrained(str(result.path))
                    prepared = preprocess_all(texts, classifier.preprocessing)
                    test_vectors[number] = embed_texts(model, tokenizer, prepared)
                with torch.inference_mode():
                    logits = model.classifier(test_vectors[number])
                predicted = [LABELS[i] for i in logits.argmax(dim=-1).tolist()]
                agree = sum(predicted[i] == s["label"] for i, s in zip(check, served, strict=True))
                note = f" (served check {agree}/{len(check)} agree)"
            else:
                predicted = [o["label"] for o in classifier.predict_batch(texts)]
                note = ""
            accuracy = sum(p == y for p, y in zip(predicted, gold, strict=True)) / len(gold)
            line.append(f"round {number} test {accuracy:.4f} (n={len(gold)}){note}")
        print("  " + "; ".join(line), flush=True)
    print(
        f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.1f}; "
        f"time {time.strftime('%Y-%m-%d %H:%M')}; models: {output}"
    )


if __name__ == "__main__":
    main()
