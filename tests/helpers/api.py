"""API clients for a given user."""

from __future__ import annotations

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def client_for(user) -> APIClient:
    """An APIClient sending ``Authorization: Token <key>`` for ``user`` (anonymous for None)."""
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def forced_client(user=None) -> APIClient:
    """An APIClient authenticated as ``user`` with ``force_authenticate`` (anonymous for None)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client
