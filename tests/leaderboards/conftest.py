"""Fixtures of the leaderboard tests: scoring datasets and scores, made directly (factories), and
``three_datasets``, a toy dataset of each access (scoring, standard, hidden)."""

from __future__ import annotations

import pytest

from leaderboards.models import Dataset
from tests.factories.leaderboards import DatasetFactory, ScoreFactory, make_toy_dataset


@pytest.fixture
def make_dataset(hate_task):
    """``make_dataset(slug, round_=None, access="scoring", kind=None)``: a dataset of hate-speech named
    ``slug`` in capitals, a round dataset when ``round_`` is given (else static) unless ``kind`` says."""

    def make(slug, *, round_=None, access="scoring", kind=None):
        kind = {"kind": kind} if kind else {}
        return DatasetFactory(task=hate_task, slug=slug, round=round_, access=access, **kind)

    return make


@pytest.fixture
def score():
    """``score(model, dataset, perf, throughput=100.0, memory=1.0, fairness=0.9, robustness=0.9,
    **fields)``: a done score; a metric given as None is left out."""

    def make(model, dataset, perf, **extra):
        return ScoreFactory(model=model, dataset=dataset, perf=perf, **extra)

    return make


@pytest.fixture
def three_datasets(hate_task):
    """``{access: dataset}``: "toy-scoring", "toy-standard" and "toy-hidden", 4 toy texts each."""
    return {
        access: make_toy_dataset(hate_task, f"toy-{access}", access=access, n=4)
        for access in (Dataset.Access.SCORING, Dataset.Access.STANDARD, Dataset.Access.HIDDEN)
    }
