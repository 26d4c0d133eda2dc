"""Does training the next target on examples that made the current one unsure change its calibration?
A simulated uncertainty-mode round on hate speech (docs/domain.md, "Uncertainty mode").

Run:  .venv/bin/python benchmarks/uncertainty_calibration.py [--base 800] [--added 400] [--threshold 0.7]
                                                             [--seed 0] [--data ../shared/data]

What it does (HatemojiBuild from ``../shared/data``, read in place; MiniLM with the platform's "quick"
recipe, ``engine.training.classifier.train_classifier``: the encoder frozen, a logistic head):
  1. the round-1 target is trained on ``--base`` training rows drawn at random (seeded);
  2. it scores the rest of the training split (the pool). The round's uncertainty-mode examples are
     simulated by the pool rows on which it is unsure (top probability under ``--threshold``, the
     owner's setting), with their gold labels standing for the validators' agreed label: ``--added`` of
     them, drawn at random. The control is ``--added`` pool rows drawn at random whatever the target's
     confidence (a fooling-agnostic round of the same size);
  3. two round-2 targets are trained: on the base rows plus the unsure rows, and on the base rows plus
     the control rows;
  4. each target is measured on the held-out rows (the test split and the validation split less the
     300 rows used as the recipe's dev set): accuracy, ECE (15 bins) with its 95% bootstrap interval,
     and the paired differences of ECE between targets on the same rows (``core.calibration``).
Prints the figures quoted in docs/domain.md. Nothing is stored in a database.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LABELS = ["hateful", "not-hateful"]


def rows_of(data_dir: Path, split: str) -> list[tuple[str, str]]:
    with open(data_dir / "hatemoji_build" / f"{split}.csv", encoding="utf-8-sig", newline="") as handle:
        return [
            (row["text"], "hateful" if row["label_gold"] == "1" else "not-hateful")
            for row in csv.DictReader(handle)
            if row["text"].strip()
        ]


def train(rows, dev, out: Path):
    from engine.training.classifier import train_classifier

    return train_classifier(
        train_texts=[t for t, _ in rows],
        train_labels=[label for _, label in rows],
        dev_texts=[t for t, _ in dev],
        dev_labels=[label for _, label in dev],
        labels=LABELS,
        output_dir=out,
        recipe="quick",
        seed=0,
    )


def top(path: Path, texts: list[str]) -> list[tuple[str, float]]:
    """(top label, top probability) of the model in ``path`` on each text."""
    from engine.runtime.classifier import Classifier

    outputs = Classifier(path).predict_batch(texts)
    return [(o["label"], max(o["probabilities"].values())) for o in outputs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=int, default=800)
    parser.add_argument("--added", type=int, default=400)
    parser.add_argument("--threshold", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()

    from core.calibration import calibration, paired_difference

    started = time.perf_counter()
    rng = random.Random(args.seed)
    train_rows = rows_of(args.data, "train")
    rng.shuffle(train_rows)
    base, pool = train_rows[: args.base], train_rows[args.base :]
    validation = rows_of(args.data, "validation")
    dev, held_out = validation[:300], validation[300:] + rows_of(args.data, "test")
    texts = [t for t, _ in held_out]
    gold = [label for _, label in held_out]

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        train(base, dev, work / "round1")
        scored = top(work / "round1", [t for t, _ in pool])
        unsure = [row for row, (_, p) in zip(pool, scored, strict=True) if p < args.threshold]
        print(
            f"round-1 target: trained on {len(base)} rows; unsure (top probability < {args.threshold:g}) on "
            f"{len(unsure)} of {len(pool)} pool rows ({len(unsure) / len(pool):.1%})"
        )
        added = rng.sample(unsure, min(args.added, len(unsure)))
        control = rng.sample(pool, len(added))
        train(base + added, dev, work / "unsure")
        train(base + control, dev, work / "control")
        results = {}
        for name in ("round1", "control", "unsure"):
            answers = top(work / name, texts)
            results[name] = (
                [p for _, p in answers],
                [label == g for (label, _), g in zip(answers, gold, strict=True)],
            )

    print(f"held-out rows: {len(held_out)} (HatemojiBuild test + validation less the 300 dev rows)")
    print(f"{'target':<44} {'accuracy':>8}  ECE [95% interval]")
    names = {
        "round1": f"round 1 ({len(base)} rows)",
        "control": f"round 2, + {len(added)} random pool rows",
        "unsure": f"round 2, + {len(added)} rows the round-1 target was unsure of",
    }
    for name, (conf, correct) in results.items():
        c = calibration(conf, correct, seed=args.seed)
        print(f"{names[name]:<44} {c.accuracy:8.1%}  {c.ece:.4f} [{c.interval[0]:.4f}, {c.interval[1]:.4f}]")
    for before, after in (("round1", "unsure"), ("round1", "control"), ("control", "unsure")):
        diff, (low, high) = paired_difference(results[before], results[after], seed=args.seed)
        print(f"ECE({after}) - ECE({before}): {diff:+.4f} [{low:+.4f}, {high:+.4f}] (paired, same rows)")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
