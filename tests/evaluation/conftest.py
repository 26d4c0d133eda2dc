"""Fixtures of the evaluation tests: the tiny classifier, a small labelled dataset with tags."""

from __future__ import annotations

import pytest

from leaderboards.models import Dataset, DatasetItem
from models_registry.inference import clear_cache
from tests.models_registry.toy_data import LABELS, TEXTS
from tests.tiny_models import tiny_model_dir, tiny_registered_model  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_model_cache():
    clear_cache()
    yield
    clear_cache()


def make_dataset(task, slug: str, *, access: str = Dataset.Access.SCORING, n: int | None = None) -> Dataset:
    """A static dataset of the toy texts (``n`` of them), tagged ``group:<first word>`` and ``all``."""
    dataset = Dataset.objects.create(
        task=task, slug=slug, name=slug.title(), kind=Dataset.Kind.STATIC, access=access, split="test"
    )
    rows = list(zip(TEXTS, LABELS, strict=True))[: n or len(TEXTS)]
    DatasetItem.objects.bulk_create(
        DatasetItem(
            dataset=dataset,
            external_id=f"case-{i}",
            inputs={"statement": text},
            target=label,
            tags=[f"group:{text.split()[0]}", "all"],
        )
        for i, (text, label) in enumerate(rows)
    )
    return dataset


@pytest.fixture
def toy_dataset(hate_task):
    return make_dataset(hate_task, "toy")
