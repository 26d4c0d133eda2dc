"""Error answers a user or a tool meets: a JSON 404 for any method on an unknown /api/ URL (no HTML CSRF
page), and the site's own page when a form's CSRF token no longer matches."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.helpers.api import client_for


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["/api/models/-1/predict/", "/api/nonexistent/", "/api/tasks/hate-speech/examples/x/"]
)
def test_a_post_to_an_unknown_api_url_is_a_json_404(annotator, url):
    response = client_for(annotator).post(url, {}, format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


@pytest.mark.django_db
def test_a_stale_form_token_gets_the_sites_page(annotator, password, hate_round):
    client = Client(enforce_csrf_checks=True)
    client.login(username=annotator.username, password=password)
    response = client.post(
        "/tasks/hate-speech/create/", {"statement": "hello", "csrfmiddlewaretoken": "stale"}
    )
    assert response.status_code == 403
    page = response.content.decode()
    assert "This form could not be sent" in page
    assert "copy what you wrote" in page
    assert 'class="site-header"' in page
