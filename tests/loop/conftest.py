"""Fixtures of the loop tests: the tiny classifier ones, the rule stand-in, and a small training set."""

from __future__ import annotations

import pytest

from annotation.models import Example
from models_registry.inference import clear_cache
from tests.annotation.fakes import rule_model  # noqa: F401 - fixture
from tests.models_registry.toy_data import LABELS, TEXTS
from tests.tiny_models import tiny_backbone_dir, tiny_model_dir, tiny_registered_model  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_model_cache():
    clear_cache()
    yield
    clear_cache()


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
