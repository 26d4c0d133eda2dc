"""What a fresh-user tester found on the create and outcome pages: the text kept when the session ran out
(create.js's decision, run under Node), the outcome worded for the author or about the author, a
retraction after settlement stated, and the live character counter (code points, no maxlength)."""

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
from annotation.services import create_example, retract_example
from annotation.verdict import authors_wording, validation_state
from tasks.config import HATE_SPEECH_CONFIG, TaskConfig

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


# --- 2. the outcome worded for the author, or about the author ---------------------------------------


@pytest.fixture
def fooling(annotator, hate_task, rule_model):
    return create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "I hate them"}, target="not-hateful"
    )[0]


def test_the_author_reads_their_own_wording(client, annotator, password, fooling):
    client.login(username=annotator.username, password=password)
    retract_example(example=fooling, user=annotator)
    html = client.get(reverse("annotation:outcome", args=[fooling.pk])).text
    assert "<h1>Your example</h1>" in html
    assert "You retracted this example; it no longer counts." in html
    assert "The label you intend: <strong>not-hateful</strong>" in html
    assert "You fooled the model!" in html


def test_an_owner_reads_about_the_author(client, owner, password, annotator, fooling):
    client.login(username=owner.username, password=password)
    html = client.get(reverse("annotation:outcome", args=[fooling.pk])).text
    assert "<h1>The author's example</h1>" in html
    assert "The label the author intends: <strong>not-hateful</strong>" in html
    assert "It fooled the model." in html
    assert "probability for the author's label" in html
    assert "other people will check that the author&#x27;s label is right." in html
    for own in ("Your example", "You fooled", "you intend", "your label", "You retracted"):
        assert own not in html, own

    retract_example(example=fooling, user=annotator)
    html = client.get(reverse("annotation:outcome", args=[fooling.pk])).text
    assert "The author retracted it; it no longer counts." in html
    assert "You retracted" not in html


def test_authors_wording_by_hand():
    assert authors_wording("The label you intend") == "The label the author intends"
    assert authors_wording("The sentiment you intend") == "The sentiment the author intends"
    assert (
        authors_wording("The relation you intend (premise to hypothesis)")
        == "The relation the author intends (premise to hypothesis)"
    )
    assert authors_wording("Your sentence") == "The author's sentence"
    assert authors_wording("Statement") == "Statement"


# --- 3. retracted after the validators settled it ----------------------------------------------------


def test_a_retraction_after_settlement_states_the_status_then_the_retraction(fooling, annotator):
    cfg = TaskConfig(HATE_SPEECH_CONFIG)
    retract_example(example=fooling, user=annotator)
    fooling.refresh_from_db()
    assert validation_state(fooling, cfg) == "Retracted by its author: it will not be validated."
    # An example settled, then retracted (allowed before settled examples became unretractable).
    Example.objects.filter(pk=fooling.pk).update(status=Example.Status.VALIDATED_CORRECT)
    fooling.refresh_from_db()
    assert validation_state(fooling, cfg) == (
        "Validated correct by the validators, then retracted by its author: it no longer counts."
    )
    assert "will not be validated" not in validation_state(fooling, cfg, is_author=False)


def test_the_outcome_page_shows_it(client, annotator, password, fooling):
    retract_example(example=fooling, user=annotator)
    Example.objects.filter(pk=fooling.pk).update(status=Example.Status.VALIDATED_INCORRECT)
    client.login(username=annotator.username, password=password)
    html = client.get(reverse("annotation:outcome", args=[fooling.pk])).text
    assert "Validated incorrect by the validators, then retracted by its author: it no longer counts." in html
    assert "it will not be validated" not in html


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
