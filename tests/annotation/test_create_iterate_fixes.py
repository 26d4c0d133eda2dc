"""What a fresh-user tester found on the create and outcome pages: the text kept when the session ran out
(create.js's decision, run under Node), and the live character counter (code points, no maxlength)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.shortcuts import resolve_url
from django.urls import reverse

from annotation.models import Example

SCRIPT = Path(__file__).resolve().parents[2] / "annotation" / "static" / "annotation" / "create.js"
URL = reverse("annotation:create", args=["hate-speech"])
FETCH = {"HTTP_X_REQUESTED_WITH": "fetch"}
LOGIN = "/accounts/login/"


@pytest.fixture
def writer(client, annotator, password, rule_model):
    client.login(username=annotator.username, password=password)
    return client


def _post(client, statement, label, *, fetch=False):
    data = {"statement": statement, "label": label, "client_token": str(uuid.uuid4())}
    return client.post(URL, data, **(FETCH if fetch else {}))


# --- 1. signed out: the script keeps the text (its decision under Node) ------------------------------

RUNNER = """
const h = require(process.argv[1]);
const cases = JSON.parse(process.argv[2]);
console.log(JSON.stringify({
  kinds: cases.answers.map(r => h.answerKind(r, cases.login)),
  counts: cases.texts.map(t => [h.codePoints(t[0]), h.counterText(t[0], t[1])]),
  cookies: cases.cookies.map(c => h.cookieValue(c[0], c[1])),
}));
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: install Node.js (apt-get install nodejs)", pytrace=False)
    return node


def _run_script(answers=(), texts=(), cookies=()):
    cases = {"login": LOGIN, "answers": list(answers), "texts": list(texts), "cookies": list(cookies)}
    result = subprocess.run(
        [_node(), "-e", RUNNER, str(SCRIPT), json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(result.stdout)


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


# --- 6. the character counter ------------------------------------------------------------------------


def test_the_box_carries_its_limit_and_no_maxlength(writer):
    html = writer.get(URL).text
    box = re.search(r"<textarea [^>]*name=\"statement\"[^>]*>", html).group(0)
    assert 'data-max-length="2000"' in box
    assert "maxlength" not in box


def test_the_counter_counts_code_points_as_the_server_does():
    family = "👨\u200d👩\u200d👧"  # 5 code points, 8 UTF-16 units
    texts = [
        ["", 2000],
        ["I hate 🐷", 2000],  # the pig is one code point (two UTF-16 units)
        [family, 2000],
        ["x" * 123, 2000],
        ["😀" * 2000, 2000],  # at the limit: 4,000 UTF-16 units, still fine
        ["x" * 2010, 2000],
        ["ab\ncd", 1000],
    ]
    out = _run_script(texts=texts)["counts"]
    assert out == [
        [0, "0 / 2,000"],
        [8, "8 / 2,000"],
        [5, "5 / 2,000"],
        [123, "123 / 2,000"],
        [2000, "2,000 / 2,000"],
        [2010, "2,010 / 2,000: 10 too many"],
        [5, "5 / 1,000"],
    ]
    assert [len(t[0]) for t in texts] == [row[0] for row in out]  # Python's len counts code points too
