"""Fixtures of the NLI tests: the real ANLI folder, slices of it, the nli task, tiny models."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_models import tiny_backbone_dir  # noqa: F401


@pytest.fixture
def anli_dir(settings) -> Path:
    root = Path(settings.DYNABENCH_DATA_DIR) / "anli"
    if not root.is_dir():
        pytest.skip(f"real data not available: {root} is missing (set DYNABENCH_DATA_DIR)")
    return root


@pytest.fixture
def nli_task(db):
    from tasks.services import ensure_builtin_task

    return ensure_builtin_task("nli")


@pytest.fixture
def anli_slice(anli_dir, tmp_path):
    """The first 30 rows of each ANLI file (many rows of a round share a premise)."""
    from annotation.importers.anli import FILES
    from tests.sentiment.conftest import slice_jsonl_gz

    folder = tmp_path / "anli"
    records = {name: slice_jsonl_gz(anli_dir / name, folder / name, 30) for name, _, _ in FILES}
    return folder, records
