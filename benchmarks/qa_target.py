"""Train the QA (span) target on SQuAD's training articles and score it on the held-apart articles.

Run:  .venv/bin/python benchmarks/qa_target.py [--recipe quick|finetune] [--seed 0]
          [--max-train N] [--dev N] [--test N] [--output DIR]

No database: the questions are read with the importer's own functions (``leaderboards.importers.squad``:
``squad_rows`` and the article split of ``docs/datasets.md``), the model is trained with
``models_registry.qa_training.train_qa_model`` exactly as the demo trains it (dev F1 / EM on a seeded
sample of ``--dev`` dev questions, 300 by default as in ``services_qa_training``), then served with the
platform's ``SpanPredictor`` on the test articles' questions and scored with the SQuAD v1.1 metrics
(max over every reference answer). Prints the training time, the CPU seconds it used (a figure that
other processes on the machine do not inflate), dev and test F1 / EM, and the test throughput.
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


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    import django

    django.setup()
    from django.conf import settings

    from annotation.importers.common import ImportReport
    from leaderboards.importers.squad import SQUAD_DIR, SQUAD_FILE, read_squad, squad_rows
    from models_registry.qa_inference import SpanPredictor
    from models_registry.qa_training import QAItem, score_predictions, train_qa_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="quick", choices=["quick", "finetune"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-train", type=int, default=None, help="override the recipe's question cap")
    parser.add_argument("--dev", type=int, default=300)
    parser.add_argument(
        "--test", type=int, default=None, help="score only a seeded sample of N test questions"
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    report = ImportReport(source="SQuAD")
    document = read_squad(Path(settings.DYNABENCH_DATA_DIR) / SQUAD_DIR / SQUAD_FILE)
    rows = squad_rows(document, report, max_question_length=1000)
    by_split: dict[str, list[QAItem]] = {"train": [], "dev": [], "test": []}
    for row in rows:
        answers = tuple(a["text"] for a in row.target["answers"])
        by_split[row.split].append(
            QAItem(
                row.inputs["question"],
                row.context["context"],
                row.target["answer"],
                row.target["answer_start"],
                answers,
            )
        )
    dev = by_split["dev"]
    if len(dev) > args.dev:
        dev = random.Random(args.seed).sample(dev, args.dev)
    test = by_split["test"]
    if args.test is not None and len(test) > args.test:
        test = random.Random(args.seed).sample(test, args.test)
    print(f"questions: {len(by_split['train'])} train, {len(dev)} dev (sampled), {len(test)} test")

    overrides = {"max_train_questions": args.max_train} if args.max_train else None
    output = args.output or Path(tempfile.mkdtemp(prefix="qa-target-"))
    cpu0 = _cpu_seconds()
    result = train_qa_model(
        train_items=by_split["train"],
        dev_items=dev,
        output_dir=output,
        recipe=args.recipe,
        seed=args.seed,
        overrides=overrides,
        progress=lambda line: print("  " + line, flush=True),
    )
    train_cpu = _cpu_seconds() - cpu0
    print(
        f"training ({args.recipe}): {result.details['training_seconds']:.0f} s wall to the saved model, "
        f"{result.seconds:.0f} s with the dev scoring; {train_cpu:.0f} CPU s in all; "
        f"{result.n_train} questions, {result.n_features} windows"
    )
    print(f"dev  ({result.n_dev} questions): F1 {result.dev_f1:.4f}  EM {result.dev_exact_match:.4f}")

    predictor = SpanPredictor(output)
    started = time.perf_counter()
    outputs = predictor.predict_batch([(i.passage, i.question) for i in test])
    seconds = time.perf_counter() - started
    f1, em = score_predictions(test, [o["answer"] for o in outputs])
    print(f"test ({len(test)} questions, held-apart articles): F1 {f1:.4f}  EM {em:.4f}")
    print(
        f"test throughput: {len(test) / seconds:.1f} questions/s ({seconds:.0f} s); torch threads "
        f"{__import__('torch').get_num_threads()}; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"model: {output}")


if __name__ == "__main__":
    main()
