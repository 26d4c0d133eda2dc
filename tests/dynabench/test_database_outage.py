"""A database that is unreachable or restarting answers 503 with Retry-After (JSON under /api/, a page
elsewhere), wherever the error is raised; any other crash stays a 500 (core/server_errors.py)."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.test import Client
from rest_framework.authentication import TokenAuthentication

from core.server_errors import DATABASE_UNAVAILABLE, SERVER_ERROR

LOST = OperationalError("server closed the connection unexpectedly")


@pytest.fixture
def quiet_client():
    return Client(raise_request_exception=False)


@pytest.mark.django_db
def test_api_answers_503_json_when_the_database_connection_is_lost(quiet_client, monkeypatch):
    def lost(self, key):
        raise LOST

    monkeypatch.setattr(TokenAuthentication, "authenticate_credentials", lost)
    response = quiet_client.get("/api/tasks/", HTTP_AUTHORIZATION="Token abc")
    assert response.status_code == 503
    assert response.json() == {"detail": DATABASE_UNAVAILABLE}
    assert response["Retry-After"] == "5"


@pytest.mark.django_db
def test_a_page_answers_503_when_the_session_cannot_be_read(quiet_client, monkeypatch):
    from django.contrib.sessions.backends.db import SessionStore

    def lost(self):
        raise OperationalError("connection refused") from ConnectionRefusedError()

    monkeypatch.setattr(SessionStore, "load", lost)
    quiet_client.cookies["sessionid"] = "x" * 32
    response = quiet_client.get("/me/examples/")
    assert response.status_code == 503
    assert "Back in a moment" in response.content.decode()
    assert response["Retry-After"] == "5"


@pytest.mark.django_db
def test_an_ordinary_crash_is_still_a_500(quiet_client, monkeypatch):
    def crash(self, key):
        raise ZeroDivisionError

    monkeypatch.setattr(TokenAuthentication, "authenticate_credentials", crash)
    response = quiet_client.get("/api/tasks/", HTTP_AUTHORIZATION="Token abc")
    assert response.status_code == 500
    assert response.json() == {"detail": SERVER_ERROR}
    assert "Retry-After" not in response
