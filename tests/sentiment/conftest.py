"""Fixtures of the sentiment tests: the real DynaSent folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.data import data_path


@pytest.fixture
def dynasent_dir(settings) -> Path:
    """``DYNABENCH_DATA_DIR/dynasent``; the test is skipped when it is missing."""
    return data_path(settings, "dynasent")
