"""The input-only probe on HatemojiBuild's rounds with folds that split perturbation pairs and with folds
that keep them together (docs/datasets.md, "Artefact probes").

Run:  .venv/bin/python benchmarks/probe_folds.py

Reads every row of the shared copy of HatemojiBuild (``$DYNABENCH_DATA_DIR/hatemoji_build/*.csv``; all
splits) and, per round (``round.base`` 5, 6, 7: the demo's rounds 1, 2, 3), predicts the label from the
text with the probes' classifier (``core.text_probe``: bag of words, logistic regression, 5 folds,
seed 0): once with stratified folds that ignore the pairs, once with the pairs (``matched_id``) in one fold
(``cycle.probes.data.example_groups``). Prints accuracy, its Wilson 95% interval and chance.
"""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from core.text_probe import cross_validated_accuracy  # noqa: E402
from cycle.probes.data import example_groups  # noqa: E402


def main() -> None:
    folder = Path(settings.DYNABENCH_DATA_DIR) / "hatemoji_build"
    rows = []
    for path in sorted(folder.glob("*.csv")):
        with path.open(encoding="utf-8", newline="") as handle:
            rows += list(csv.DictReader(handle))
    print(f"{len(rows):,} rows of {folder}")
    print("| round | examples | pairs kept together? | accuracy [95% interval] | chance | groups |")
    print("|---:|---:|---|---|---:|---:|")
    for base, number in ((5, 1), (6, 2), (7, 3)):
        kept = [r for r in rows if r["round.base"].strip() == str(base) and r["text"].strip()]
        texts, labels = [r["text"] for r in kept], [r["label_gold"].strip() for r in kept]
        keys, _ = example_groups(
            [r["entry_id"].strip() for r in kept], [{"matched_id": r["matched_id"]} for r in kept]
        )
        for name, groups in (("no (stratified folds)", None), ("yes (pairs in one fold)", keys)):
            got = cross_validated_accuracy(texts, labels, groups=groups)
            low, high = got.interval
            print(f"| {number} | {got.n:,} | {name} | {got.accuracy:.1%} [{low:.1%}, {high:.1%}] | "
                  f"{got.chance:.1%} | {got.groups or '-'} |")  # fmt: skip


if __name__ == "__main__":
    main()
