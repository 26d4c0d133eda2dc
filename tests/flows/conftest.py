"""Fixtures of the cross-app flows: a validated round-1 training set, the real ANLI and DynaSent folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.models import Example
from tests.helpers.data import data_path, slice_jsonl_gz
from tests.helpers.toy_data import LABELS, TEXTS


@pytest.fixture
def round1_training_data(hate_round):
    """Round 1 with imported, validated train and dev examples (the toy texts)."""
    Example.objects.bulk_create(
        Example(
            round=hate_round,
            inputs={"statement": text},
            target=label,
            split=split,
            source=Example.Source.IMPORTED,
            status=Example.Status.VALIDATED_CORRECT,
            external_id=f"{split}-{i}",
        )
        for split, rows in (
            ("train", zip(TEXTS, LABELS, strict=True)),
            ("dev", zip(TEXTS[::2], LABELS[::2], strict=True)),
        )
        for i, (text, label) in enumerate(rows)
    )
    return hate_round


@pytest.fixture
def anli_dir(settings) -> Path:
    """``DYNABENCH_DATA_DIR/anli``; the test fails when it is missing."""
    return data_path(settings, "anli")


@pytest.fixture
def anli_slice(anli_dir, tmp_path):
    """The first 30 rows of each ANLI file (many rows of a round share a premise)."""
    from annotation.importers.anli import FILES

    folder = tmp_path / "anli"
    records = {name: slice_jsonl_gz(anli_dir / name, folder / name, 30) for name, _, _ in FILES}
    return folder, records


@pytest.fixture
def dynasent_dir(settings) -> Path:
    """``DYNABENCH_DATA_DIR/dynasent``; the test fails when it is missing."""
    return data_path(settings, "dynasent")
