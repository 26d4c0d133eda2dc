"""Import a dataset's rows as validated examples of a task's rounds, with their contexts.

Shared by the DynaSent and ANLI importers (``dynasent.py``, ``anli.py``): they read their files into
``RoundRow`` objects; ``import_round_rows`` creates the rounds, the contexts (one per distinct context
text of a round) and the examples, idempotently. The split rule for data that has no train split
(``split_for``) is documented in ``docs/datasets.md``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from annotation.importers.common import ImportReport, ProgressFactory, bulk_insert, no_progress
from annotation.models import Example
from tasks.models import Context, Round, Task
from tasks.services import ensure_round

BATCH_SIZE = 1000

#: What a source file is, for the split rule: a dev file of a round that also has a test file, the
#: test file itself, or the only labelled file of its round (dev only).
DEV_WITH_TEST, TEST, DEV_ONLY = "dev_with_test", "test", "dev_only"


def split_bucket(source_id: str) -> int:
    """``int.from_bytes(sha256(source_id)[:8], "big") % 10``: a stable bucket 0-9 for a source row id."""
    return int.from_bytes(hashlib.sha256(source_id.encode("utf-8")).digest()[:8], "big") % 10


def split_for(source_id: str, file_role: str) -> str:
    """The platform split of a source row (``docs/datasets.md``, "Sentiment and NLI").

    Only dev and test files exist here (no train split could be had), so a round's dev file is cut
    into training data and a small dev set, by a hash of the row's own id (stable across runs,
    machines and file order):

    * ``TEST`` file: ``test``.
    * ``DEV_WITH_TEST`` (the round also has a test file): buckets 0-8 ``train`` (90%), 9 ``dev``.
    * ``DEV_ONLY`` (the round's only file): 0-5 ``train`` (60%), 6 ``dev`` (10%), 7-9 ``test`` (30%).

    Raises:
        ValueError: for an unknown ``file_role``.
    """
    if file_role == TEST:
        return Example.Split.TEST
    bucket = split_bucket(source_id)
    if file_role == DEV_WITH_TEST:
        return Example.Split.TRAIN if bucket < 9 else Example.Split.DEV
    if file_role == DEV_ONLY:
        if bucket < 6:
            return Example.Split.TRAIN
        return Example.Split.DEV if bucket == 6 else Example.Split.TEST
    raise ValueError(f"unknown file role {file_role!r}")


def context_external_id(text: str) -> str:
    """A context's id from its text: ``ctx-`` + the first 24 hex digits of its sha256 (one context per text)."""
    return "ctx-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def read_jsonl_gz(path: Path) -> Iterator[tuple[int, dict | str]]:
    """``(line number, record)`` for each non-empty line of a gzipped (or plain) JSONL file.

    A line that is not a JSON object comes back as a string saying why, so the caller can skip it.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"not JSON ({exc.msg})"
                continue
            yield number, record if isinstance(record, dict) else "not a JSON object"


@dataclass
class RoundRow:
    """One source row, ready to become an imported example of ``round_number``.

    ``context`` is the context data (``{}`` when the row has none); rows of a round with the same
    context data share one ``Context``.
    """

    round_number: int
    external_id: str
    inputs: dict
    target: str
    split: str
    context: dict = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    where: str = ""  # "file line N", for reports


@dataclass(frozen=True)
class RoundSpec:
    """How a platform round is described when the importer creates it."""

    number: int
    description: str
    metadata: dict


def _context_key(data: dict) -> str:
    return context_external_id(json.dumps(data, sort_keys=True, ensure_ascii=False))


def read_round_files(
    data_dir: Path,
    files: Sequence[tuple[str, int, str]],
    report: ImportReport,
    make_row: Callable[[dict, int, str, str], RoundRow | str],
    *,
    dataset_name: str,
) -> list[RoundRow]:
    """Every valid row of a round-structured JSONL.gz dataset; skipped rows are added to ``report``.

    Args:
        files: ``(file name, round number, file role)`` in import order.
        make_row: ``(record, round number, role, "file line N")`` -> a ``RoundRow``, or a reason to skip.
        dataset_name: names the dataset in the missing-file message.

    Returns:
        The rows, the first of each ``(round, external id)`` kept (``drop_duplicate_ids``).

    Raises:
        FileNotFoundError: naming the first missing file (checked before any file is read).
    """
    paths = [(Path(data_dir) / name, number, role) for name, number, role in files]
    for path, _, _ in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{dataset_name} file not found: {path}")
    rows: list[RoundRow] = []
    for path, number, role in paths:
        for line, record in read_jsonl_gz(path):
            report.read += 1
            where = f"{path.name} line {line}"
            row = record if isinstance(record, str) else make_row(record, number, role, where)
            if isinstance(row, str):
                report.skipped.append(f"{where}: {row}")
            else:
                rows.append(row)
    return drop_duplicate_ids(rows, report)


def drop_duplicate_ids(rows: list[RoundRow], report: ImportReport) -> list[RoundRow]:
    """Keep the first row of each ``(round, external id)``; report the others as skipped."""
    seen: set[tuple[int, str]] = set()
    kept = []
    for row in rows:
        key = (row.round_number, row.external_id)
        if key in seen:
            report.skipped.append(
                f"{row.where}: duplicate id {row.external_id!r} in round {row.round_number}"
            )
            continue
        seen.add(key)
        kept.append(row)
    return kept


def import_round_rows(
    *,
    task: Task,
    rows: list[RoundRow],
    rounds: list[RoundSpec],
    report: ImportReport,
    progress: ProgressFactory = no_progress,
    batch_size: int = BATCH_SIZE,
) -> dict[int, Round]:
    """Create the rounds (never changing existing ones), their contexts and one example per row.

    Examples are ``source=imported``, ``status=validated_correct``, no annotator, ``model_wrong=None``,
    ``prediction_status=none``. Idempotent: a context whose id (``ctx-`` + hash of its data) the round
    has, and an example whose ``external_id`` the round has, are not added again. One transaction.
    Updates ``report.created``, ``already_present`` and ``breakdown`` (rows per round and split).

    An imported example already present gets the row's ``metadata`` when it differs (an importer that
    now keeps less, e.g. DynaSent's label counts instead of worker ids): ``report.metadata_updated``.
    Its inputs, target and context are never rewritten: round datasets copied them and scores were
    computed on them, and the open round's contexts are copies annotators wrote on. A row whose text,
    label or context differs from the stored example is listed in ``report.kept_as_stored``
    (``docs/datasets.md``, "Re-importing").

    Returns:
        The rounds by number.
    """
    with transaction.atomic():
        by_number = {
            spec.number: ensure_round(
                task=task, number=spec.number, description=spec.description, metadata=spec.metadata
            )
            for spec in rounds
        }
        round_ids = [r.pk for r in by_number.values()]
        # Contexts: one per distinct context data per round.
        contexts = {
            (c.round_id, c.external_id): c
            for c in Context.objects.filter(round_id__in=round_ids).exclude(external_id="")
        }
        new_contexts = []
        for row in rows:
            if not row.context:
                continue
            round_ = by_number[row.round_number]
            key = (round_.pk, _context_key(row.context))
            if key not in contexts:
                contexts[key] = Context(task=task, round=round_, data=row.context, external_id=key[1])
                new_contexts.append(contexts[key])
        bulk_insert(Context, new_contexts, batch_size=batch_size, progress=progress, desc="contexts")
        # Re-read: ignore_conflicts leaves the objects without primary keys.
        contexts = {
            (c.round_id, c.external_id): c
            for c in Context.objects.filter(round_id__in=round_ids).exclude(external_id="")
        }
        stored = {
            (round_id, external_id): (pk, source, inputs, target, context, metadata)
            for round_id, external_id, pk, source, inputs, target, context, metadata in Example.objects.filter(
                round_id__in=round_ids
            )
            .exclude(external_id="")
            .values_list(
                "round_id", "external_id", "pk", "source", "inputs", "target", "context__data", "metadata"
            )
            .iterator(chunk_size=batch_size)
        }
        existing = set(stored)
        before = len(existing)
        refreshed: list[Example] = []
        new: list[Example] = []
        for row in rows:
            round_ = by_number[row.round_number]
            label = f"round {round_.number} {row.split}"
            report.breakdown[label] = report.breakdown.get(label, 0) + 1
            if (round_.pk, row.external_id) in existing:
                report.already_present += 1
                pk, source, inputs, target, context_data, metadata = stored[(round_.pk, row.external_id)]
                if source != Example.Source.IMPORTED:
                    continue
                if (inputs, target, context_data or {}) != (row.inputs, row.target, row.context or {}):
                    report.kept_as_stored.append(f"{row.where}: {row.external_id} in round {round_.number}")
                if metadata != row.metadata:
                    refreshed.append(Example(pk=pk, metadata=row.metadata))
                continue
            context = contexts[(round_.pk, _context_key(row.context))] if row.context else None
            new.append(
                Example(
                    round=round_,
                    context=context,
                    annotator=None,
                    inputs=row.inputs,
                    target=row.target,
                    split=row.split,
                    external_id=row.external_id,
                    tags=row.tags,
                    metadata=row.metadata,
                    source=Example.Source.IMPORTED,
                    status=Example.Status.VALIDATED_CORRECT,
                    model_wrong=None,
                    prediction_status=Example.PredictionStatus.NONE,
                )
            )
        Example.objects.bulk_update(refreshed, ["metadata"], batch_size=batch_size)
        report.metadata_updated += len(refreshed)
        bulk_insert(Example, new, batch_size=batch_size, progress=progress, desc=report.source)
        after = Example.objects.filter(round_id__in=round_ids).exclude(external_id="").count()
        report.created += after - before
        report.already_present += len(new) - (after - before)
        report.breakdown = dict(sorted(report.breakdown.items()))
    return by_number
