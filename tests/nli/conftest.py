"""Fixtures of the NLI tests: the real ANLI folder and slices of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.data import data_path, slice_jsonl_gz


@pytest.fixture
def anli_dir(settings) -> Path:
    """``DYNABENCH_DATA_DIR/anli``; the test is skipped when it is missing."""
    return data_path(settings, "anli")


@pytest.fixture
def anli_slice(anli_dir, tmp_path):
    """The first 30 rows of each ANLI file (many rows of a round share a premise)."""
    from leaderboards.importers.anli import FILES

    folder = tmp_path / "anli"
    records = {name: slice_jsonl_gz(anli_dir / name, folder / name, 30) for name, _, _ in FILES}
    return folder, records
