"""Fixtures for the leaderboard tests: scoring datasets, models and their scores, made directly."""

from __future__ import annotations

import pytest

from tests.annotation.fakes import crashing_model  # noqa: F401 - fixture
from tests.tiny_models import tiny_model_dir, tiny_registered_model  # noqa: F401 - fixtures


@pytest.fixture
def make_dataset(hate_task):
    from leaderboards.models import Dataset

    def make(slug, *, round_=None, access=Dataset.Access.SCORING, kind=None):
        return Dataset.objects.create(
            task=hate_task,
            slug=slug,
            name=slug.upper(),
            kind=kind or (Dataset.Kind.ROUND if round_ else Dataset.Kind.STATIC),
            access=access,
            round=round_,
        )

    return make


@pytest.fixture
def make_model(hate_task):
    from models_registry.models import RegisteredModel

    def make(name, *, owner=None, published=True, anonymous=False, **extra):
        return RegisteredModel.objects.create(
            task=hate_task,
            name=name,
            owner=owner,
            status=RegisteredModel.Status.READY,
            is_published=published,
            is_anonymous=anonymous,
            **extra,
        )

    return make


@pytest.fixture
def score():
    from leaderboards.models import Score

    def make(model, dataset, perf, *, throughput=100.0, memory=1.0, fairness=0.9, robustness=0.9, **extra):
        metrics = {"throughput": throughput, "memory": memory, "fairness": fairness, "robustness": robustness}
        metrics = {k: v for k, v in metrics.items() if v is not None}
        return Score.objects.create(
            model=model, dataset=dataset, status=Score.Status.DONE, perf=perf, metrics=metrics, **extra
        )

    return make
