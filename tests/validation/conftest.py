"""Fixtures for validation tests: more validators besides the named ones."""

from __future__ import annotations

import pytest

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
