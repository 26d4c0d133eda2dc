"""Fixtures of the loop tests: a small validated training set in round 1."""

from __future__ import annotations

import pytest

from annotation.models import Example
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
