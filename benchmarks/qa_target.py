"""Train the QA (span) target on SQuAD's training articles and score it on the held-apart articles.

Run:  .venv/bin/python benchmarks/qa_target.py [--recipe quick|finetune] [--seed 0]
          [--max-train N] [--set KEY=VALUE ...] [--dev N] [--test N] [--output DIR] [--model DIR]

No database: the questions are read with the importer's own functions (``annotation.importers.squad``:
``squad_rows`` and the article split of ``docs/datasets.md``), the model is trained with
``engine.training.qa.train_qa_model`` exactly as the demo trains it (dev F1 / EM on a seeded
sample of ``--dev`` dev questions, 300 by default as in ``cycle.training.span``), then served with the
platform's ``SpanPredictor`` on the test articles' questions and scored with the SQuAD v1.1 metrics
(max over every reference answer). Prints the training time, the CPU seconds it used (less swayed by
other processes than wall time, though not immune: on this 2-core machine the same run's CPU seconds
rose with load, from contention for caches and memory bandwidth), dev and test F1 / EM, and the test throughput.

``--set KEY=VALUE`` overrides one recipe setting (a number, or ``none``), e.g. ``--set lr=1e-4``.
``--model DIR`` skips training and scores an already trained span model on the same dev sample and test
questions (to report test figures once for settings chosen on dev).
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


def _setting(text: str) -> tuple[str, int | float | None]:
    """``"lr=1e-4"`` -> ``("lr", 0.0001)``; ``none`` means None, digits an int, else a float."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    if value.lower() == "none":
        return key, None
    try:
        return key, int(value)
    except ValueError:
        try:
            return key, float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{key}: {value!r} is not a number or none") from None


def main() -> None:
    import django

    django.setup()
    from django.conf import settings

    from annotation.importers.common import ImportReport
    from annotation.importers.squad import SQUAD_DIR, SQUAD_FILE, read_squad, squad_rows
    from engine.runtime.qa_inference import SpanPredictor
    from engine.training.qa import QAItem, score_predictions, train_qa_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="quick", choices=["quick", "finetune"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-train", type=int, default=None, help="override the recipe's question cap")
    parser.add_argument(
        "--set", type=_setting, action="append", default=[], metavar="KEY=VALUE", help="recipe setting"
    )
    parser.add_argument("--dev", type=int, default=300)
    parser.add_argument(
        "--test", type=int, default=None, help="score only a seeded sample of N test questions"
    )
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--model", type=Path, default=None, help="score this trained model, no training")
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

    overrides = dict(args.set)
    if args.max_train:
        overrides["max_train_questions"] = args.max_train
    if args.model is not None:
        output = args.model
        predictor = SpanPredictor(output)
        dev_out = predictor.predict_batch([(i.passage, i.question) for i in dev])
        dev_f1, dev_em = score_predictions(dev, [o["answer"] for o in dev_out])
        print(f"model {output} (not trained here)")
        print(f"dev  ({len(dev)} questions): F1 {dev_f1:.4f}  EM {dev_em:.4f}")
    else:
        output = args.output or Path(tempfile.mkdtemp(prefix="qa-target-"))
        cpu0 = _cpu_seconds()
        result = train_qa_model(
            train_items=by_split["train"],
            dev_items=dev,
            output_dir=output,
            recipe=args.recipe,
            seed=args.seed,
            overrides=overrides or None,
            progress=lambda line: print("  " + line, flush=True),
        )
        train_cpu = _cpu_seconds() - cpu0
        print(
            f"training ({args.recipe} {overrides or ''}): {result.details['training_seconds']:.0f} s wall "
            f"to the saved model, {result.seconds:.0f} s with the dev scoring; {train_cpu:.0f} CPU s in "
            f"all; {result.n_train} questions, {result.n_features} windows"
        )
        print(f"dev  ({result.n_dev} questions): F1 {result.dev_f1:.4f}  EM {result.dev_exact_match:.4f}")

    predictor = SpanPredictor(output)
    started, cpu0 = time.perf_counter(), _cpu_seconds()
    outputs = predictor.predict_batch([(i.passage, i.question) for i in test])
    seconds, cpu_seconds = time.perf_counter() - started, _cpu_seconds() - cpu0
    f1, em = score_predictions(test, [o["answer"] for o in outputs])
    print(f"test ({len(test)} questions, held-apart articles): F1 {f1:.4f}  EM {em:.4f}")
    print(
        f"test throughput: {len(test) / seconds:.1f} questions/s ({seconds:.0f} s wall, "
        f"{cpu_seconds:.0f} CPU s, {cpu_seconds / len(test):.2f} CPU s per question); torch threads "
        f"{__import__('torch').get_num_threads()}; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"model: {output}")


if __name__ == "__main__":
    main()
