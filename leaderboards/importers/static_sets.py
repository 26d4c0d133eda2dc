"""Import the static hate-speech test suites, HateCheck and HatemojiCheck, as datasets.

Each suite becomes one ``Dataset`` (kind ``static``) of the hate-speech task, and each test case one
``DatasetItem``: ``inputs={"statement": text}``, ``target`` ``"hateful"``/``"not-hateful"``, tags
``["functionality:<name>", "target:<group>"]`` (the second only when the case names a group), the
remaining columns in ``metadata`` and ``external_id=case_id``. Re-running adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.importers.common import (
    ImportReport,
    ProgressFactory,
    bulk_insert,
    no_progress,
    normalise_hate_label,
    read_csv_rows,
)
from core.data_sources import HATECHECK, HATEMOJI, Upstream
from core.text_rules import normalise_newlines
from leaderboards.models import Dataset, DatasetItem
from tasks.models import Task

BATCH_SIZE = 1000


@dataclass(frozen=True)
class StaticSet:
    """How one test-suite file maps onto a dataset; ``path`` is relative to the data folder."""

    slug: str
    name: str
    path: str
    access: str
    upstream: Upstream
    upstream_path: str
    id_column: str
    text_column: str
    label_column: str
    functionality_column: str
    target_column: str
    description: str


# The access level of each suite is chosen here and nowhere else: HateCheck ranks models on the
# leaderboard (a scoring dataset); HatemojiCheck is shown on model pages only (standard).
HATECHECK_SET = StaticSet(
    slug="hatecheck",
    name="HateCheck",
    path="hatecheck/test_suite_cases.csv",
    access=Dataset.Access.SCORING,
    upstream=HATECHECK,
    upstream_path="test_suite_cases.csv",
    id_column="case_id",
    text_column="test_case",
    label_column="label_gold",
    functionality_column="functionality",
    target_column="target_ident",
    description=(
        "HateCheck functional tests for hate speech detection (Röttger et al. 2021): 29 functionalities, "
        "cases generated from templates. Some cases are held back for evaluation."
    ),
)
HATEMOJICHECK_SET = StaticSet(
    slug="hatemojicheck",
    name="HatemojiCheck",
    path="hatemoji_check/test.csv",
    access=Dataset.Access.STANDARD,
    upstream=HATEMOJI,
    upstream_path="HatemojiCheck/test.csv",
    id_column="case_id",
    text_column="text",
    label_column="label_gold",
    functionality_column="functionality",
    target_column="target",
    description=(
        "HatemojiCheck functional tests for emoji-based hate (Kirk et al. 2022): 7 functionalities "
        "with identity, polarity and no-emoji perturbations."
    ),
)
STATIC_SETS: tuple[StaticSet, ...] = (HATECHECK_SET, HATEMOJICHECK_SET)

_NO_TARGET = {"", "none", "-"}


def item_tags(functionality: str, target: str) -> list[str]:
    """Tags of one case: ``["functionality:<f>", "target:<t>"]``; the target tag only when the case
    names a group (not empty, ``None`` or ``-``)."""
    tags = [f"functionality:{functionality.strip()}"] if functionality.strip() else []
    if target.strip().lower() not in _NO_TARGET:
        tags.append(f"target:{target.strip()}")
    return tags


def ensure_static_dataset(*, task: Task, spec: StaticSet) -> Dataset:
    """Return the task's dataset for ``spec``, creating it if missing (an existing one is not changed,
    so an owner's later choice of access stays)."""
    dataset, _ = Dataset.objects.get_or_create(
        task=task,
        slug=spec.slug,
        defaults={
            "name": spec.name,
            "kind": Dataset.Kind.STATIC,
            "access": spec.access,
            "split": "test",
            "description": spec.description,
            "licence": spec.upstream.licence,
            "source": f"{spec.upstream.source}/{spec.upstream_path}",
            "metadata": {"citation": spec.upstream.citation, "file": spec.path},
        },
    )
    return dataset


def import_static_set(
    *,
    task: Task,
    spec: StaticSet,
    data_dir: Path,
    progress: ProgressFactory = no_progress,
    batch_size: int = BATCH_SIZE,
) -> ImportReport:
    """Import one test suite (``data_dir / spec.path``) as a dataset of ``task``.

    Text is kept as written (HateCheck's trailing spaces included) except CRLF -> LF. Rows with an
    empty text, an unknown label, an empty or repeated case id are skipped with their row number.
    Items whose ``case_id`` is already in the dataset are counted as already present. One transaction.

    Returns:
        An ``ImportReport``; ``breakdown`` counts items per label.

    Raises:
        FileNotFoundError: if the file is missing (nothing is written).
        ValueError: if it lacks one of the columns named in ``spec``.
    """
    path = Path(data_dir) / spec.path
    if not path.is_file():
        raise FileNotFoundError(f"{spec.name} file not found: {path}")
    max_length = task.cfg.max_length_of(task.cfg.input_fields[0])
    used = {spec.id_column, spec.text_column, spec.label_column}
    required = (
        spec.id_column,
        spec.text_column,
        spec.label_column,
        spec.functionality_column,
        spec.target_column,
    )

    report = ImportReport(source=spec.name)
    items: dict[str, dict] = {}
    for row in read_csv_rows(path, required=required):
        report.read += 1
        where = row.where(path.name)
        if row.problem:
            report.skipped.append(f"{where}: {row.problem}")
            continue
        v = row.values
        text = normalise_newlines(v[spec.text_column])
        label = normalise_hate_label(v[spec.label_column])
        case_id = v[spec.id_column].strip()
        if not text.strip():
            problem = "empty text"
        elif len(text) > max_length:
            problem = f"text longer than {max_length} characters"
        elif label is None:
            problem = f"unknown label {v[spec.label_column]!r}"
        elif not case_id:
            problem = "empty case_id"
        elif case_id in items:
            problem = f"duplicate case_id {case_id}"
        else:
            problem = ""
        if problem:
            report.skipped.append(f"{where}: {problem}")
            continue
        items[case_id] = {
            "inputs": {"statement": text},
            "target": label,
            "tags": item_tags(v[spec.functionality_column], v[spec.target_column]),
            "metadata": {name: value for name, value in v.items() if name not in used},
        }
        report.breakdown[label] = report.breakdown.get(label, 0) + 1

    with transaction.atomic():
        dataset = ensure_static_dataset(task=task, spec=spec)
        existing = set(dataset.items.values_list("external_id", flat=True))
        new = [
            DatasetItem(dataset=dataset, external_id=case_id, **fields)
            for case_id, fields in items.items()
            if case_id not in existing
        ]
        report.already_present = len(items) - len(new)
        bulk_insert(DatasetItem, new, batch_size=batch_size, progress=progress, desc=spec.name)
        report.created = dataset.items.count() - len(existing)
        report.already_present += len(new) - report.created
    return report


def import_static_sets(
    *, task: Task, data_dir: Path, progress: ProgressFactory = no_progress
) -> list[ImportReport]:
    """Import every suite of ``STATIC_SETS``; one report each.

    Raises:
        FileNotFoundError: naming the first missing file, before anything is written.
    """
    for spec in STATIC_SETS:
        path = Path(data_dir) / spec.path
        if not path.is_file():
            raise FileNotFoundError(f"{spec.name} file not found: {path}")
    return [
        import_static_set(task=task, spec=spec, data_dir=data_dir, progress=progress) for spec in STATIC_SETS
    ]
