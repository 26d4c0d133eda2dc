"""Fixtures for validation tests: more validators besides the named ones, and a model-fooling example."""

from __future__ import annotations

import pytest

from annotation.services import create_example
from tests.factories.accounts import UserFactory


@pytest.fixture
def make_user(db, password):
    def make(username: str, **extra):
        return UserFactory(username=username, password=password, **extra)

    return make


@pytest.fixture
def crowd(make_user):
    """Three more validators besides the named ones: v1, v2, v3."""
    return [make_user(f"v{i}") for i in (1, 2, 3)]


@pytest.fixture
def fooling(hate_task, annotator, rule_model):
    """A model-fooling example of hate_task: the stand-in says 'not-hateful' (no 'hate' in the text) at
    0.875; the author intends 'hateful'."""
    example, _ = create_example(
        task=hate_task,
        annotator=annotator,
        inputs={"statement": "they should go back home"},
        target="hateful",
    )
    assert example.model_wrong is True
    return example
