"""Pieces every importer shares: the report, CSV reading with the quirks of real files, label spelling.

Kept free of any one dataset so the round importers here and the static test sets' importer (leaderboards) share them.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

HATEFUL = "hateful"
NOT_HATEFUL = "not-hateful"

# Every spelling of the two hate-speech labels met in the source datasets: HatemojiBuild and
# HatemojiCheck use 1/0, HateCheck hateful/non-hateful, DynaHate hate/nothate.
_HATE_LABELS: dict[str, str] = {
    "1": HATEFUL,
    "1.0": HATEFUL,
    "hateful": HATEFUL,
    "hate": HATEFUL,
    "0": NOT_HATEFUL,
    "0.0": NOT_HATEFUL,
    "not-hateful": NOT_HATEFUL,
    "not_hateful": NOT_HATEFUL,
    "not hateful": NOT_HATEFUL,
    "non-hateful": NOT_HATEFUL,
    "non_hateful": NOT_HATEFUL,
    "nothate": NOT_HATEFUL,
    "not-hate": NOT_HATEFUL,
}


def normalise_hate_label(value: str | None) -> str | None:
    """Map a source spelling of a hate-speech label to the task's label.

    Returns ``"hateful"`` or ``"not-hateful"`` (the labels of ``HATE_SPEECH_CONFIG``), or ``None``
    for an unknown or missing value; case and surrounding white space are ignored.
    """
    if value is None:
        return None
    return _HATE_LABELS.get(value.strip().lower())


@dataclass
class ImportReport:
    """What one import did.

    ``read`` counts data rows read; every one of them is ``created``, ``already_present`` (its
    external id was imported before) or skipped, with one human-readable reason per skipped row in
    ``skipped`` (e.g. ``"train.csv row 17 (line 18): empty text"``). ``breakdown`` counts the
    imported rows (created or present) per destination, e.g. ``{"round 1": 1994}``.

    Of the ``already_present`` rows, importers that refresh stored rows count in ``metadata_updated``
    those whose metadata they rewrote, and list in ``kept_as_stored`` those whose text or label in the
    source now differs from the stored example, which is kept as it is (why: ``docs/datasets.md``).
    """

    source: str
    read: int = 0
    created: int = 0
    already_present: int = 0
    skipped: list[str] = field(default_factory=list)
    breakdown: dict[str, int] = field(default_factory=dict)
    metadata_updated: int = 0
    kept_as_stored: list[str] = field(default_factory=list)

    @property
    def skipped_count(self) -> int:
        return len(self.skipped)

    def __str__(self) -> str:
        lines = [
            f"{self.source}: read {self.read}, created {self.created}, "
            f"already present {self.already_present}, skipped {self.skipped_count}"
        ]
        lines += [f"  {name}: {count}" for name, count in self.breakdown.items()]
        if self.metadata_updated:
            lines.append(f"  metadata updated on {self.metadata_updated} already present rows")
        lines += [f"  kept as stored (differs in the source): {what}" for what in self.kept_as_stored]
        lines += [f"  skipped {reason}" for reason in self.skipped]
        return "\n".join(lines)


class Progress(Protocol):
    """The part of a tqdm bar an importer uses."""

    def update(self, n: int = 1) -> Any: ...

    def close(self) -> Any: ...


ProgressFactory = Callable[..., Progress]
"""Called as ``factory(total=int, desc=str)``; ``tqdm.tqdm`` itself fits."""


class _NoProgress:
    def update(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


def no_progress(**_kwargs: Any) -> Progress:
    """A ``ProgressFactory`` that shows nothing (the default for importers)."""
    return _NoProgress()


@dataclass(frozen=True)
class CsvRow:
    """One data row: ``number`` counts data rows from 1 (the header is not a row), ``line`` is the
    file line the row starts on, ``values`` maps header names to raw cell text."""

    number: int
    line: int
    values: dict[str, str]
    problem: str = ""

    def where(self, file_name: str) -> str:
        return f"{file_name} row {self.number} (line {self.line})"


def _column_names(header: list[str]) -> list[str]:
    """Give empty header cells a name: the first one is pandas' written index (``row_index``),
    any other becomes ``unnamed_<position>``."""
    names = []
    for position, raw in enumerate(header):
        name = raw.strip()
        if not name:
            name = "row_index" if position == 0 else f"unnamed_{position}"
        names.append(name)
    return names


def read_csv_rows(path: Path, *, required: tuple[str, ...] = ()) -> Iterator[CsvRow]:
    """Yield the data rows of a CSV file.

    Reads with ``newline=""`` and ``utf-8-sig`` so CRLF or LF line ends, a missing final newline,
    a byte-order mark and newlines inside quoted fields all work; cells are returned exactly as
    written (no stripping, no newline change). Empty header cells get names (see ``_column_names``).
    A row with the wrong number of cells is yielded with ``problem`` set and no values; a blank
    line is not a row.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if the file has no header or lacks one of the ``required`` columns.
    """
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path}: the file is empty (no header row).")
        names = _column_names(header)
        missing = [name for name in required if name not in names]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; found {', '.join(names)}.")
        number = 0
        previous_line = reader.line_num
        for cells in reader:
            start_line, previous_line = previous_line + 1, reader.line_num
            if not cells:
                continue
            number += 1
            if len(cells) != len(names):
                yield CsvRow(number, start_line, {}, f"{len(cells)} cells where the header has {len(names)}")
                continue
            yield CsvRow(number, start_line, dict(zip(names, cells, strict=True)))


def batched(items: list, size: int) -> Iterator[list]:
    """Yield consecutive slices of ``items`` of at most ``size`` elements."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def bulk_insert(
    model, objects: list, *, batch_size: int, progress: Callable[..., Progress], desc: str
) -> None:
    """Insert ``objects`` in batches with a progress bar; rows that already exist are skipped.

    ``ignore_conflicts``: a concurrent run that inserted the same row first wins, so callers count
    what was really added from the table afterwards, not from ``len(objects)``.
    """
    bar = progress(total=len(objects), desc=desc)
    try:
        for batch in batched(objects, batch_size):
            model.objects.bulk_create(batch, ignore_conflicts=True)
            bar.update(len(batch))
    finally:
        bar.close()
