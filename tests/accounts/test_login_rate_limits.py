"""allauth's own rate limits guard log-in and sign-up (dynabench/settings.py): five failed log-ins for a
username lock it for five minutes, even with the right password after; sign-ups are limited per address."""

from __future__ import annotations

import pytest

LOGIN = "/accounts/login/"
SIGNUP = "/accounts/signup/"


def _login(client, username, password):
    return client.post(LOGIN, {"login": username, "password": password})


@pytest.mark.django_db
def test_five_failed_logins_lock_the_username_even_for_the_right_password(client, annotator, password):
    for _ in range(5):
        response = _login(client, annotator.username, "wrong-password")
        assert response.status_code == 200
        assert "not correct" in response.content.decode()
    response = _login(client, annotator.username, password)
    assert response.status_code == 200  # the form again, not the redirect of a log-in
    assert "Too many failed login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_four_failed_logins_still_let_the_right_password_in(client, annotator, password):
    for _ in range(4):
        _login(client, annotator.username, "wrong-password")
    response = _login(client, annotator.username, password)
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(annotator.pk)


@pytest.mark.django_db
def test_signups_are_limited_to_twenty_a_minute_per_address(client):
    statuses = []
    for n in range(21):
        response = client.post(
            SIGNUP,
            {
                "username": f"crowd{n}",
                "password1": "a-long-pass-phrase-9",
                "password2": "a-long-pass-phrase-9",
            },
        )
        statuses.append(response.status_code)
        client.logout()
    assert statuses[:20] == [302] * 20
    assert statuses[20] == 429
