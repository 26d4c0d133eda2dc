"""Import natural (non-adversarial) labelled texts as training-only datasets of a task, to mix into a
target's training set (``cycle.training.natural``).

* sentiment: ``sst-3-validated``, the SST-3 dev sentences DynaSent's authors re-validated
  (``dynasent/sst-dev-validated.jsonl.gz``; Potts et al. 2021): movie-review sentences written with
  no model in view, keeping the three task labels (``mixed`` and ``null`` are left out), with the
  treebank's ``-LRB-`` / ``-RRB-`` written as brackets.
* hate speech: ``hatemoji-build-originals``, HatemojiBuild's original entries (``set == original``,
  not their perturbations) of its train split (Kirk et al. 2022). These were written on Dynabench
  against a model, so they are "natural" only beside the contrast perturbations; no natural hate-speech
  corpus is among the shared data (docs/measurements.md says what that means for the figures).

Each becomes a ``Dataset`` of kind ``imported``, access ``hidden`` (never evaluated or ranked), with
``metadata["natural"] = True``; each text one ``DatasetItem`` (``inputs={"statement": text}``). Re-running
adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.importers.common import ImportReport, normalise_hate_label, read_csv_rows
from annotation.importers.round_examples import read_jsonl_gz
from core.data_sources import HATEMOJI
from core.text_rules import normalise_newlines
from leaderboards.models import Dataset, DatasetItem
from tasks.models import Task

SENTIMENT_LABELS = ("positive", "negative", "neutral")


@dataclass(frozen=True)
class NaturalSet:
    """One natural dataset: its slug and name, the file under the data folder, and provenance."""

    slug: str
    name: str
    path: str
    description: str
    source: str
    licence: str


SST3 = NaturalSet(
    slug="sst-3-validated",
    name="SST-3 sentences",
    path="dynasent/sst-dev-validated.jsonl.gz",
    description=(
        "Stanford Sentiment Treebank dev sentences re-validated by DynaSent's authors (Potts et al. 2021), "
        "three labels: movie-review sentences written with no model in view."
    ),
    source="github.com/cgpotts/dynasent@707b6208978bfe7ff251a0c3263c9f0552c27b48/sst-dev-validated.jsonl",
    licence="CC BY 4.0",
)
HATEMOJI_ORIGINALS = NaturalSet(
    slug="hatemoji-build-originals",
    name="HatemojiBuild originals, train split",
    path="hatemoji_build/train.csv",
    description=(
        "HatemojiBuild's original entries of its train split, without their perturbations (Kirk et al. "
        "2022). Written on Dynabench against a model: the least adversarial hate-speech texts available "
        "offline, not a natural corpus."
    ),
    source=f"github.com/{HATEMOJI.repo}@{HATEMOJI.commit}/HatemojiBuild/train.csv",
    licence=HATEMOJI.licence,
)
#: The natural set of each built-in task.
NATURAL_SETS: dict[str, NaturalSet] = {"sentiment": SST3, "hate-speech": HATEMOJI_ORIGINALS}


def _sst_rows(path: Path, report: ImportReport) -> dict[str, tuple[str, str]]:
    rows: dict[str, tuple[str, str]] = {}
    seen: set[str] = set()
    for line, record in read_jsonl_gz(path):
        report.read += 1
        if not isinstance(record, dict):
            report.skipped.append(f"line {line}: not a JSON object")
            continue
        text, label = record.get("sentence"), record.get("gold_label")
        if not isinstance(text, str) or not text.strip():
            report.skipped.append(f"line {line}: empty sentence")
        elif label not in SENTIMENT_LABELS:
            report.skipped.append(f"line {line}: label {label!r} is not one of {list(SENTIMENT_LABELS)}")
        elif text.strip() in seen:
            report.skipped.append(f"line {line}: repeated sentence")
        else:
            seen.add(text.strip())
            key = str(record.get("text_id") or f"line-{line}")
            # SST's sentences are Penn Treebank tokens: brackets are written -LRB- and -RRB-.
            text = text.strip().replace("-LRB-", "(").replace("-RRB-", ")")
            rows[key] = (normalise_newlines(text), label)
    return rows


def _hatemoji_rows(path: Path, report: ImportReport) -> dict[str, tuple[str, str]]:
    rows: dict[str, tuple[str, str]] = {}
    for row in read_csv_rows(path, required=("entry_id", "text", "set", "split", "label_gold")):
        report.read += 1
        where = row.where(path.name)
        if row.problem:
            report.skipped.append(f"{where}: {row.problem}")
            continue
        v = row.values
        if v["set"].strip() != "original" or v["split"].strip() != "train":
            continue
        text = normalise_newlines(v["text"])
        label = normalise_hate_label(v["label_gold"])
        if not text.strip() or label is None:
            report.skipped.append(f"{where}: empty text or unknown label")
            continue
        rows[v["entry_id"].strip()] = (text, label)
    return rows


def import_natural_set(*, task: Task, data_dir: Path) -> ImportReport:
    """Import the natural set of ``task`` (``NATURAL_SETS[task.slug]``) from ``data_dir``.

    Returns:
        An ``ImportReport``; ``breakdown`` counts items per label.

    Raises:
        ValueError: the task has no natural set here.
        FileNotFoundError: the file is missing (nothing is written).
    """
    spec = NATURAL_SETS.get(task.slug)
    if spec is None:
        raise ValueError(
            f"no natural dataset is known for task {task.slug!r} (known: {sorted(NATURAL_SETS)})"
        )
    path = Path(data_dir) / spec.path
    if not path.is_file():
        raise FileNotFoundError(f"{spec.name} file not found: {path}")
    report = ImportReport(source=spec.name)
    rows = _sst_rows(path, report) if spec is SST3 else _hatemoji_rows(path, report)
    max_length = task.cfg.max_length_of(task.cfg.input_fields[0])
    field = task.cfg.input_fields[0]["name"]
    with transaction.atomic():
        dataset, _ = Dataset.objects.get_or_create(
            task=task,
            slug=spec.slug,
            defaults={
                "name": spec.name,
                "kind": Dataset.Kind.IMPORTED,
                "access": Dataset.Access.HIDDEN,
                "split": "train",
                "description": spec.description,
                "licence": spec.licence,
                "source": spec.source,
                "metadata": {"natural": True, "file": spec.path},
            },
        )
        existing = set(dataset.items.values_list("external_id", flat=True))
        new = []
        for key, (text, label) in rows.items():
            if len(text) > max_length:
                report.skipped.append(f"{key}: text longer than {max_length} characters")
                continue
            report.breakdown[label] = report.breakdown.get(label, 0) + 1
            if key not in existing:
                new.append(DatasetItem(dataset=dataset, external_id=key, inputs={field: text}, target=label))
        DatasetItem.objects.bulk_create(new, batch_size=1000, ignore_conflicts=True)
        report.created = dataset.items.count() - len(existing)
        report.already_present = sum(report.breakdown.values()) - report.created
    return report
