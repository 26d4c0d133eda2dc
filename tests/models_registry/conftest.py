"""Fixtures of the model registry tests: the model folder of the test."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def model_root(settings, tmp_path) -> Path:
    """DYNABENCH_MODEL_DIR of the test (the autouse fixture points it into tmp_path)."""
    return Path(settings.DYNABENCH_MODEL_DIR)


@pytest.fixture
def server(smollm2):
    """An OpenAI-compatible chat server on loopback serving the real SmolLM2 (tests/helpers/chat_server.py)."""
    from tests.helpers.chat_server import ChatServer

    with ChatServer(smollm2) as running:
        yield running
