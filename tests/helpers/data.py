"""The real data folder (``settings.DYNABENCH_DATA_DIR``, as the app reads it) and slices of its files.

A test that needs the real data fails, naming the missing path, when the data is not there: the data is
a dependency of the suite like a package, not a reason to skip.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest


def data_path(settings, *parts: str) -> Path:
    """``settings.DYNABENCH_DATA_DIR / parts``; fails the test, naming it, when that path is missing."""
    path = Path(settings.DYNABENCH_DATA_DIR).joinpath(*parts)
    if not path.exists():
        pytest.fail(
            f"the real data is missing: {path} does not exist "
            "(set DYNABENCH_DATA_DIR to the folder of the shared data)",
            pytrace=False,
        )
    return path


def slice_jsonl_gz(source: Path, dest: Path, n: int, extra: list[dict] | None = None) -> list[dict]:
    """Copy the first ``n`` lines of a gzipped JSONL file to ``dest`` (gzipped), plus ``extra`` records."""
    with gzip.open(source, "rt", encoding="utf-8", newline="") as handle:
        lines = [next(handle) for _ in range(n)]
    lines += [json.dumps(record, ensure_ascii=False) + "\n" for record in extra or []]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest, "wt", encoding="utf-8", newline="") as handle:
        handle.writelines(lines)
    return [json.loads(line) for line in lines]
