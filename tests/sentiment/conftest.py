"""Fixtures of the sentiment tests: the real DynaSent folder and small slices of it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.tiny_models import tiny_backbone_dir  # noqa: F401


def slice_jsonl_gz(source: Path, dest: Path, n: int, extra: list[dict] | None = None) -> list[dict]:
    """Copy the first ``n`` lines of a gzipped JSONL file to ``dest`` (gzipped), plus ``extra`` records."""
    with gzip.open(source, "rt", encoding="utf-8", newline="") as handle:
        lines = [next(handle) for _ in range(n)]
    lines += [json.dumps(record, ensure_ascii=False) + "\n" for record in extra or []]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest, "wt", encoding="utf-8", newline="") as handle:
        handle.writelines(lines)
    return [json.loads(line) for line in lines]


@pytest.fixture
def dynasent_dir(settings) -> Path:
    root = Path(settings.DYNABENCH_DATA_DIR) / "dynasent"
    if not root.is_dir():
        pytest.skip(f"real data not available: {root} is missing (set DYNABENCH_DATA_DIR)")
    return root


@pytest.fixture
def sentiment_task(db):
    from tasks.services import ensure_builtin_task

    return ensure_builtin_task("sentiment")
