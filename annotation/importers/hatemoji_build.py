"""Import HatemojiBuild (Kirk et al. 2022) as rounds 1-3 of the hate-speech task.

HatemojiBuild is Dynabench's hate-speech rounds 5-7 (original entries ``5a``... and their
perturbations ``5b``...). Source round 5, 6, 7 becomes platform round 1, 2, 3. Every row becomes a
validated, imported ``Example`` with no annotator; ``model_wrong`` stays ``None`` because no model
on this platform saw it. Re-running adds nothing: a row whose ``entry_id`` is already in its round
is counted as already present.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation.models import Example
from core.text_rules import normalise_newlines
from tasks.models import Round, Task
from tasks.services import ensure_round

from .common import (
    ImportReport,
    ProgressFactory,
    bulk_insert,
    no_progress,
    normalise_hate_label,
    read_csv_rows,
)

DATASET_NAME = "HatemojiBuild"
FILES: tuple[str, ...] = ("train.csv", "validation.csv", "test.csv")
"""Files read from the ``hatemoji_build`` folder, in this order (``validation.csv`` holds ``split=dev``)."""

ROUND_MAP: dict[int, int] = {5: 1, 6: 2, 7: 3}
"""Source (Dynabench) round -> platform round of the hate-speech task."""

SPLITS = {"train": Example.Split.TRAIN, "dev": Example.Split.DEV, "test": Example.Split.TEST}
REQUIRED_COLUMNS = (
    "entry_id",
    "text",
    "type",
    "target",
    "round.base",
    "round.set",
    "set",
    "split",
    "label_gold",
    "matched_text",
    "matched_id",
)
BATCH_SIZE = 1000
_MAX_LITERAL_LENGTH = 1000


def parse_target_list(raw: str) -> list[str] | str:
    """Read HatemojiBuild's ``target`` cell, a Python-list string such as ``"['bla', 'mus']"``.

    Uses ``ast.literal_eval`` (literals only, never code) and returns the list of strings; anything
    else (not a list of strings, malformed, overly long) comes back as the raw string unchanged.
    """
    if len(raw) > _MAX_LITERAL_LENGTH:
        return raw
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return raw


def _int_or_none(raw: str) -> int | None:
    try:
        return int(raw.strip())
    except ValueError:
        return None


@dataclass
class _Row:
    source_round: int
    external_id: str
    fields: dict[str, Any]


def _parse_file(path: Path, report: ImportReport, max_length: int) -> list[_Row]:
    rows: list[_Row] = []
    for row in read_csv_rows(path, required=REQUIRED_COLUMNS):
        report.read += 1
        where = row.where(path.name)
        if row.problem:
            report.skipped.append(f"{where}: {row.problem}")
            continue
        v = row.values
        text = normalise_newlines(v["text"])
        label = normalise_hate_label(v["label_gold"])
        source_round = _int_or_none(v["round.base"])
        split = SPLITS.get(v["split"].strip().lower())
        entry_id = v["entry_id"].strip()
        if not text.strip():
            problem = "empty text"
        elif len(text) > max_length:
            problem = f"text longer than {max_length} characters"
        elif label is None:
            problem = f"unknown label {v['label_gold']!r}"
        elif source_round not in ROUND_MAP:
            problem = f"unknown round.base {v['round.base']!r}"
        elif split is None:
            problem = f"unknown split {v['split']!r}"
        elif not entry_id:
            problem = "empty entry_id"
        else:
            problem = ""
        if problem:
            report.skipped.append(f"{where}: {problem}")
            continue
        matched_id = v["matched_id"].strip()
        metadata = {
            "dataset": DATASET_NAME,
            "source_file": path.name,
            "round.base": source_round,
            "round.set": v["round.set"].strip(),
            "set": v["set"].strip(),
            "type": v["type"].strip(),
            "target": parse_target_list(v["target"]),
            # The perturbation partner. The shared copy blanks matched_text for partners of held-out
            # rows; that is stored as None while matched_id still names the partner.
            "matched_id": matched_id or None,
            "matched_text": normalise_newlines(v["matched_text"]) or None,
        }
        fields = {
            "inputs": {"statement": text},
            "target": label,
            "split": split,
            "external_id": entry_id,
            "metadata": metadata,
        }
        rows.append(_Row(source_round, entry_id, fields))
    return rows


def import_hatemoji_build(
    *,
    task: Task,
    data_dir: Path,
    progress: ProgressFactory = no_progress,
    batch_size: int = BATCH_SIZE,
) -> ImportReport:
    """Import ``data_dir/{train,validation,test}.csv`` (a ``hatemoji_build`` folder) into ``task``.

    Creates platform rounds 1-3 if missing (existing rounds are never changed), then one ``Example``
    per valid row: ``inputs={"statement": text}``, ``target`` ``"hateful"``/``"not-hateful"``,
    ``split`` from the ``split`` column, ``source=imported``, ``status=validated_correct``,
    ``annotator=None``, ``model_wrong=None``, ``external_id=entry_id`` and the source columns in
    ``metadata``. Rows with empty text, an unknown label, round or split, or a repeated entry_id are
    skipped with their row number. All writes happen in one transaction.

    Args:
        progress: called as ``progress(total=n, desc=...)``; e.g. ``tqdm.tqdm``.

    Returns:
        An ``ImportReport``; ``breakdown`` counts rows per platform round.

    Raises:
        FileNotFoundError: naming the first missing file (checked before anything is written).
        ValueError: if a file lacks a required column.
    """
    data_dir = Path(data_dir)
    paths = [data_dir / name for name in FILES]
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"HatemojiBuild file not found: {path}")
    max_length = task.cfg.max_length_of(task.cfg.input_fields[0])

    report = ImportReport(source=DATASET_NAME)
    rows: list[_Row] = []
    for path in paths:
        rows += _parse_file(path, report, max_length)

    seen: set[tuple[int, str]] = set()
    unique_rows: list[_Row] = []
    for row in rows:
        key = (row.source_round, row.external_id)
        if key in seen:
            report.skipped.append(
                f"{row.fields['metadata']['source_file']} entry_id {row.external_id}: "
                f"duplicate entry_id in round {row.source_round}"
            )
            continue
        seen.add(key)
        unique_rows.append(row)

    with transaction.atomic():
        rounds: dict[int, Round] = {
            source: ensure_round(
                task=task,
                number=number,
                description=f"{DATASET_NAME} (Kirk et al. 2022), Dynabench hate-speech round {source}.",
                metadata={"source_dataset": DATASET_NAME, "source_round": source},
            )
            for source, number in ROUND_MAP.items()
        }
        round_ids = {round_.pk for round_ in rounds.values()}
        existing = set(
            Example.objects.filter(round_id__in=round_ids)
            .exclude(external_id="")
            .values_list("round_id", "external_id")
        )
        new: list[Example] = []
        for row in unique_rows:
            round_ = rounds[row.source_round]
            label = f"round {round_.number}"
            report.breakdown[label] = report.breakdown.get(label, 0) + 1
            if (round_.pk, row.external_id) in existing:
                report.already_present += 1
                continue
            new.append(
                Example(
                    round=round_,
                    annotator=None,
                    source=Example.Source.IMPORTED,
                    status=Example.Status.VALIDATED_CORRECT,
                    model_wrong=None,
                    prediction_status=Example.PredictionStatus.NONE,
                    **row.fields,
                )
            )
        bulk_insert(Example, new, batch_size=batch_size, progress=progress, desc=DATASET_NAME)
        after = Example.objects.filter(round_id__in=round_ids).exclude(external_id="").count()
        report.created = after - len(existing)
        report.already_present += len(new) - report.created
    return report
