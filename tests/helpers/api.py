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


def sse_events(response) -> list[tuple[str, dict]]:
    """A streamed response's server-sent events, ``[(event name, data decoded from JSON)]`` in order."""
    import json

    body = b"".join(response.streaming_content).decode()
    events = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((lines["event"], json.loads(lines["data"])))
    return events
