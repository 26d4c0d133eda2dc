"""The create page keeps the text when the session ran out in another tab: the in-page submit's answer
is the sign-in page (or a 401/403), and create.js, run under Node (tests/helpers/create_js.py), decides
"signed-out" and keeps the text instead of leaving the page; the page names the sign-in page and the CSRF
cookie the script reads again, and nothing is stored."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.shortcuts import resolve_url
from django.urls import reverse

from annotation.models import Example
from tests.helpers.create_js import LOGIN
from tests.helpers.create_js import run_create_js as _run_script

URL = reverse("annotation:create", args=["hate-speech"])
FETCH = {"HTTP_X_REQUESTED_WITH": "fetch"}


def _post(client, statement, label, *, fetch=False):
    data = {"statement": statement, "label": label, "client_token": str(uuid.uuid4())}
    return client.post(URL, data, **(FETCH if fetch else {}))


def test_the_script_keeps_the_text_when_the_answer_is_the_sign_in_page_or_401_403():
    answers = [
        {"status": 200, "redirected": True, "url": "http://127.0.0.1:8000/accounts/login/?next=/tasks/x/"},
        {"status": 401, "redirected": False, "url": "http://127.0.0.1:8000/tasks/x/create/"},
        {"status": 403, "redirected": False, "url": "http://127.0.0.1:8000/tasks/x/create/"},
        {"status": 200, "redirected": False, "url": "http://127.0.0.1:8000/tasks/x/create/"},
        {"status": 422, "redirected": False, "url": "http://127.0.0.1:8000/tasks/x/create/"},
        # redirected elsewhere (not the sign-in page), a 500, a 404: the plain POST, as before
        {"status": 200, "redirected": True, "url": "http://127.0.0.1:8000/tasks/x/tutorial/"},
        {"status": 200, "redirected": True, "url": "http://127.0.0.1:8000/accounts/login/extra/"},
        {"status": 500, "redirected": False, "url": "http://127.0.0.1:8000/tasks/x/create/"},
        {"status": 404, "redirected": False, "url": "http://127.0.0.1:8000/tasks/x/create/"},
    ]
    assert _run_script(answers=answers)["kinds"] == [
        "signed-out",
        "signed-out",
        "signed-out",
        "fragment",
        "fragment",
        "plain",
        "plain",
        "plain",
        "plain",
    ]


def test_the_script_reads_the_renewed_csrf_cookie():
    out = _run_script(cookies=[["sessionid=a; csrftoken=AbC123; x=1", "csrftoken"], ["x=1", "csrftoken"]])
    assert out["cookies"] == ["AbC123", ""]


def test_the_page_names_the_sign_in_page_the_fetch_lands_on(writer, client, annotator):
    assert resolve_url(settings.LOGIN_URL) == LOGIN
    page = writer.get(URL).text
    assert f'class="example-form" data-login-url="{LOGIN}" data-csrf-cookie="csrftoken">' in page
    client.logout()  # the other tab
    answer = _post(client, "I hate them", "not-hateful", fetch=True)
    # what fetch sees before following: a redirect to that page, so answerKind says "signed-out"
    assert answer.status_code == 302 and answer["Location"].startswith(LOGIN + "?next=")
    assert Example.objects.count() == 0
