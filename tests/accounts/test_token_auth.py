"""Token authentication: the profile page shows and creates the token; drf_create_token makes the same."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_profile_page_needs_login(client):
    response = client.get("/me/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_profile_page_creates_shows_and_replaces_the_token(client, annotator):
    client.force_login(annotator)
    page = client.get("/me/")
    assert page.status_code == 200
    assert "You have no API token yet." in page.text
    assert 'href="/me/"' in page.text  # the header links to the profile
    assert client.post("/me/", {"action": "create"}).status_code == 302
    key = Token.objects.get(user=annotator).key
    assert key in client.get("/me/").text
    client.post("/me/", {"action": "create"})  # a second create keeps the token
    assert Token.objects.get(user=annotator).key == key
    client.post("/me/", {"action": "regenerate"})
    new_key = Token.objects.get(user=annotator).key
    assert new_key != key
    assert new_key in client.get("/me/").text and key not in client.get("/me/").text


def test_profile_page_never_shows_someone_elses_token(client, annotator, validator):
    other = Token.objects.create(user=validator)
    client.force_login(annotator)
    assert other.key not in client.get("/me/").text


def test_drf_create_token_command_makes_a_working_token(annotator, hate_task):
    out = StringIO()
    call_command("drf_create_token", "annotator", stdout=out)
    key = Token.objects.get(user=annotator).key
    assert key in out.getvalue()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    mine = api.get("/api/tasks/hate-speech/examples/?mine=true")
    assert mine.status_code == 200 and mine.json()["count"] == 0


def test_wrong_token_is_401_with_a_challenge(hate_task):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = api.get("/api/tasks/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {"detail": "Invalid token."}


def test_session_auth_works_for_the_browser_and_checks_csrf(annotator, hate_round):
    api = APIClient(enforce_csrf_checks=True)
    api.force_login(annotator)
    assert api.get("/api/tasks/hate-speech/examples/").status_code == 200
    response = api.post(
        "/api/tasks/hate-speech/examples/", {"statement": "x", "label": "hateful"}, format="json"
    )
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
