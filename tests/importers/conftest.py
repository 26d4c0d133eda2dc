"""Fixtures for the importer tests: the real data folder (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def data_dir(settings) -> Path:
    """``settings.DYNABENCH_DATA_DIR``; skips the test when it or the hate-speech files are missing."""
    root = Path(settings.DYNABENCH_DATA_DIR)
    for sub in ("hatemoji_build", "hatecheck", "hatemoji_check"):
        if not (root / sub).is_dir():
            pytest.skip(f"real data not available: {root / sub} is missing (set DYNABENCH_DATA_DIR)")
    return root


@pytest.fixture(autouse=True)
def _no_downloads(monkeypatch):
    """No test may reach the network: fetch_datasets' download is replaced by a failure."""

    def refuse(url: str) -> bytes:
        raise AssertionError(f"a test tried to download {url}")

    monkeypatch.setattr("dynabench.management.commands.fetch_datasets.download", refuse)
