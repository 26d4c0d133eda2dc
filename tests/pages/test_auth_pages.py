"""allauth's pages render inside the site's layout."""

from __future__ import annotations

import pytest
from django.urls import reverse


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["account_login", "account_signup"])
def test_account_pages_use_the_site_layout(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 200
    assert '<header class="site-header">' in response.text
    assert "dynabench/site.css" in response.text
    assert "· Dynabench</title>" in response.text


def test_annotator_logs_in_and_lands_back_on_the_create_page(client, annotator, password, hate_round):
    create = reverse("annotation:create", args=["hate-speech"])
    response = client.post(
        f"{reverse('account_login')}?next={create}", {"login": annotator.username, "password": password}
    )
    assert response.status_code == 302
    assert response["Location"] == create
