"""The create form carries its context (issue 29): an NLI form is saved on the premise it was served with,
or refused; never on a premise the writer did not see.

A browser that restores a form's values when the annotator goes Back can put a hypothesis written for
premise A into a page that shows premise B (the tests under tests/browser/ do it in Chromium). Here the
same POSTs are sent by hand: the form's signed stamp (``started``) names the context it was served with,
the hidden ``context`` field the one the page showed.
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.core import signing
from django.urls import reverse

from annotation.models import Example
from models_registry import inference
from tasks.models import Context
from tests.factories.models_registry import make_stand_in
from tests.factories.tasks import ContextFactory, open_round

URL = reverse("annotation:create", args=["nli"])
FETCH = {"HTTP_X_REQUESTED_WITH": "fetch"}
PREMISE_A = "It rained all day in Leeds."
PREMISE_B = "The shop on the corner sells bread."
HYPOTHESIS = "The streets of Leeds were wet."


def always_neutral(model, inputs: list[dict]) -> list[dict]:
    """An NLI stand-in: neutral at 0.8 whatever it reads."""
    return [
        {"label": "neutral", "probabilities": {"entailment": 0.1, "neutral": 0.8, "contradiction": 0.1}}
    ] * len(inputs)


@pytest.fixture
def nli_round(nli_task, monkeypatch):
    monkeypatch.setattr(inference, "predict", always_neutral)
    round_ = open_round(nli_task)
    make_stand_in(nli_task, round_)
    return round_


@pytest.fixture
def premises(nli_round):
    a = ContextFactory(round=nli_round, data={"premise": PREMISE_A})
    b = ContextFactory(round=nli_round, data={"premise": PREMISE_B})
    return a, b


@pytest.fixture
def writer(client, annotator):
    client.force_login(annotator)
    return client


def _served(client, **params) -> tuple[Context, dict]:
    """GET the page: the context it shows and the hidden values its form would send."""
    page = client.get(URL, params)
    form = page.context["form"]
    return page.context["served_context"], {
        "client_token": str(form["client_token"].value()),
        "started": form["started"].value(),
        "round": str(page.context["task"].current_round_id),
    }


def _send(client, hidden: dict, context, *, fetch=False, hypothesis=HYPOTHESIS, label="entailment"):
    data = {**hidden, "hypothesis": hypothesis, "label": label, "context": str(context.pk)}
    return client.post(URL, data, **(FETCH if fetch else {}))


def _box(html: str) -> str:
    """The hypothesis box's text in ``html``."""
    match = re.search(r"<textarea[^>]*name=\"hypothesis\"[^>]*>(.*?)</textarea>", html, re.S)
    assert match, "no hypothesis box"
    return match.group(1).strip()


def test_the_form_is_signed_with_its_premise_and_is_saved_on_it(writer, premises):
    served, hidden = _served(writer)
    token, _ms, context_id = signing.loads(hidden["started"], salt="annotation.example-form.started")
    assert (token, context_id) == (hidden["client_token"], served.pk)
    response = _send(writer, hidden, served)
    example = Example.objects.get()
    assert response.status_code == 302
    assert (example.context, example.inputs, example.target) == (
        served,
        {"hypothesis": HYPOTHESIS},
        "entailment",
    )


def test_a_form_sent_with_another_premise_than_its_own_is_refused_and_shown_with_its_own(writer, premises):
    a, b = premises
    served, hidden = _served(writer, skip=b.pk)  # the page shows A
    assert served == a
    # The hidden values of A's form arrive with B's context id (a page showing B, the form's values restored).
    response = _send(writer, hidden, b)
    assert response.status_code == 200 and not Example.objects.exists()
    html = response.text
    assert "was written for another premise than the one the page showed" in html
    assert "It was not saved" in html
    # shown again with the premise it was written for, the text and the label ready to send on it
    assert response.context["served_context"] == a
    assert f'<input type="hidden" name="context" value="{a.pk}">' in html
    assert PREMISE_A in html and PREMISE_B not in html
    assert _box(html) == HYPOTHESIS
    assert re.search(r'<input type="radio" name="label" value="entailment"[^>]*checked', html)
    again = _send(writer, hidden, a)
    assert again.status_code == 302
    assert Example.objects.get().context == a


def test_the_next_token_after_an_in_page_verdict_is_bound_to_the_same_premise(writer, premises):
    a, b = premises
    served, hidden = _served(writer, skip=b.pk)
    first = _send(writer, hidden, a, fetch=True)
    assert first.status_code == 200 and Example.objects.get().context == a
    next_hidden = {
        **hidden,
        "client_token": re.search(r'data-client-token="([^"]+)"', first.text).group(1),
        "started": re.search(r'data-started="([^"]+)"', first.text).group(1),
    }
    # the next send from that page, with another premise's id: refused, the script told to send it plainly
    refused = _send(writer, next_hidden, b, fetch=True, hypothesis="Leeds had a dry day.")
    assert refused.status_code == 422 and "data-reload" in refused.text
    assert "was written for another premise" in refused.text
    assert Example.objects.count() == 1
    # with its own premise it is a new example on A
    variation = _send(writer, next_hidden, a, fetch=True, hypothesis="Leeds had a dry day.")
    assert variation.status_code == 200
    assert [e.context for e in Example.objects.order_by("pk")] == [a, a]


def test_a_premise_of_a_closed_round_refuses_the_text_and_keeps_it_out_of_the_form(
    writer, nli_task, premises
):
    served, hidden = _served(writer)
    round_2 = open_round(nli_task, number=2)  # round 1's premises take no more examples
    new = ContextFactory(round=round_2, data={"premise": "A cat sat on the warm mat."})
    response = _send(writer, hidden, served)  # the form still names round 1
    assert response.status_code == 200 and not Example.objects.exists()
    html = response.text
    assert (
        "The premise you wrote for is no longer available (round 1 closed and round 2 opened while you "
        "were writing), so your example was not saved." in html
    )
    # a new premise of round 2, with an empty form: the old hypothesis is not ready to send on it
    assert response.context["served_context"] == new
    assert f'<input type="hidden" name="context" value="{new.pk}">' in html
    assert _box(html) == ""
    assert not re.search(r'<input type="radio" name="label"[^>]*checked', html)
    # the text is shown apart, to copy, with the premise it was written for
    unsaved = re.search(r'<section class="unsaved".*?</section>', html, re.S).group(0)
    assert HYPOTHESIS in unsaved and "entailment" in unsaved and served.data["premise"] in unsaved


def test_a_deleted_premise_is_refused_with_the_text_kept_apart(writer, premises):
    a, b = premises
    served, hidden = _served(writer)
    other = b if served == a else a
    gone_pk = served.pk
    served.delete()
    response = writer.post(
        URL, {**hidden, "hypothesis": HYPOTHESIS, "label": "entailment", "context": gone_pk}
    )
    assert "The premise you wrote for is no longer available, so your example was not saved." in response.text
    assert response.context["served_context"] == other
    assert _box(response.text) == "" and not Example.objects.exists()


def test_a_fetch_send_on_a_premise_gone_asks_for_the_plain_send(writer, nli_task, premises):
    served, hidden = _served(writer)
    open_round(nli_task, number=2)
    response = _send(writer, hidden, served, fetch=True)
    assert response.status_code == 422 and "data-reload" in response.text
    assert "The premise you wrote for is no longer available" in response.text
    assert not Example.objects.exists()


def test_the_form_with_a_premise_asks_the_browser_not_to_restore_its_values(writer, premises):
    html = writer.get(URL).text
    assert re.search(r'<form method="post" action="[^"]*" class="example-form" autocomplete="off"', html)


def test_the_section_of_the_premise_names_its_context_for_the_script(writer, premises):
    page = writer.get(URL)
    served = page.context["served_context"]
    assert f'<section class="context" data-context="{served.pk}">' in page.text
    assert f'<input type="hidden" name="context" value="{served.pk}">' in page.text


def test_an_older_page_without_the_premise_in_its_stamp_is_saved_on_the_premise_it_sends(writer, premises):
    a, b = premises
    token = uuid.uuid4()
    older = signing.dumps([str(token), 0], salt="annotation.example-form.started")  # [token, time] only
    response = _send(writer, {"client_token": str(token), "started": older}, b)
    assert response.status_code == 302
    assert Example.objects.get().context == b
