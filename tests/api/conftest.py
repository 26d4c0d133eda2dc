"""Fixtures for the API tests: an APIClient per role, authenticated by token as external tools are."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.annotation.fakes import crashing_model, rule_model  # noqa: F401 - fixtures


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Throttle counts live in the cache; each test starts with none."""
    cache.clear()
    yield
    cache.clear()


def client_for(user) -> APIClient:
    """An APIClient sending ``Authorization: Token <key>`` for ``user`` (anonymous for None)."""
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api():
    """``api(user)`` -> an APIClient authenticated as ``user`` by token (None: anonymous)."""
    return client_for


@pytest.fixture
def blocked(django_user_model, password):
    return django_user_model.objects.create_user(
        username="blocked", email="blocked@example.org", password=password, is_blocked=True
    )
