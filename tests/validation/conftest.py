"""Fixtures for validation tests: examples made directly (model verdict chosen by the test) and a
crowd of extra validators."""

from __future__ import annotations

import itertools

import pytest

from annotation.models import Example
from tests.annotation.fakes import crashing_model, rule_model  # noqa: F401 - fixtures

_counter = itertools.count(1)


def make_example(round_, annotator, *, model_wrong=True, label="hateful", **fields) -> Example:
    """A stored example as the create service would leave it, with the model verdict given by the test."""
    n = next(_counter)
    defaults = {
        "inputs": {"statement": f"statement number {n}"},
        "target": label,
        "model_wrong": model_wrong,
        "prediction_status": Example.PredictionStatus.OK,
    }
    defaults.update(fields)
    return Example.objects.create(round=round_, annotator=annotator, **defaults)


@pytest.fixture
def make_user(django_user_model, password):
    def make(username: str, **extra):
        return django_user_model.objects.create_user(
            username=username, email=f"{username}@example.org", password=password, **extra
        )

    return make


@pytest.fixture
def crowd(make_user):
    """Three more validators besides the named ones: v1, v2, v3."""
    return [make_user(f"v{i}") for i in (1, 2, 3)]
