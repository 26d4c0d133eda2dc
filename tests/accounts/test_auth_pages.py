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


def _signup(client, username):
    return client.post(
        reverse("account_signup"),
        {"username": username, "password1": "a-long-pass-phrase-9", "password2": "a-long-pass-phrase-9"},
    )


def test_a_full_width_look_alike_of_a_taken_username_is_refused(client, db):
    from django.contrib.auth import get_user_model

    assert _signup(client, "bob").status_code == 302
    client.logout()
    response = _signup(client, "\uff42\uff4f\uff42")  # full-width "ｂｏｂ"
    assert response.status_code == 200
    assert response.context["form"].errors["username"] == ["A user with that username already exists."]
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["bob"]


def test_a_new_username_is_stored_in_nfkc_form(client, db):
    from django.contrib.auth import get_user_model

    assert _signup(client, "\uff41\uff4e\uff4e\uff41\u00b2").status_code == 302  # "ａｎｎａ²"
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["anna2"]
