"""The QA create page: the passage to select from, a typed answer found by the server, field errors."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from annotation.models import Example

pytestmark = pytest.mark.django_db
URL = reverse("annotation:create", args=["qa"])


@pytest.fixture
def logged_in(client, annotator, password):
    client.login(username=annotator.username, password=password)
    return client


def _post(client, context, question, answer, answer_start=""):
    return client.post(
        URL,
        {
            "context": context.pk,
            "question": question,
            "answer": answer,
            "answer_start": answer_start,
            "client_token": str(uuid.uuid4()),
        },
    )


def test_page_shows_the_passage_the_answer_box_and_the_selection_script(logged_in, tiny_qa_registered_model):
    response = logged_in.get(URL)
    assert response.status_code == 200
    text = response.text
    passage = response.context["served_context"].data["context"]
    assert passage.split()[1] in text
    assert 'name="question"' in text and 'name="answer"' in text
    assert 'type="hidden" name="answer_start"' in text
    assert 'id="span-select" data-context-index="1"' in text
    assert "annotation/span_select.js" in text
    assert finders.find("annotation/span_select.js")


def test_typed_answer_is_found_and_the_outcome_shows_both_answers(
    logged_in, tiny_qa_registered_model, qa_contexts
):
    response = _post(logged_in, qa_contexts[0], "Who won Super Bowl 50?", "Denver Broncos")
    assert response.status_code == 302
    example = Example.objects.get()
    assert example.target == {"answer": "Denver Broncos", "answer_start": 49}
    outcome = logged_in.get(response["Location"]).text
    assert "Denver Broncos</strong>" in outcome and "from character 49 of the passage" in outcome
    assert example.predictions.get().output["answer"] in outcome


def test_selected_answer_offset_in_code_points_is_kept(logged_in, tiny_qa_registered_model, qa_contexts):
    # the script sends code points: 38 here (a browser selection says 42 UTF-16 units)
    response = _post(logged_in, qa_contexts[1], "Where did they meet?", "מרכז העיר", "38")
    assert response.status_code == 302
    assert Example.objects.get().target == {"answer": "מרכז העיר", "answer_start": 38}


def test_answer_not_in_the_passage_is_a_field_error_and_text_is_kept(
    logged_in, tiny_qa_registered_model, qa_contexts
):
    response = _post(logged_in, qa_contexts[0], "Who lost?", "New England Patriots")
    assert response.status_code == 200
    form = response.context["form"]
    assert "does not occur in the passage" in " ".join(form.errors["answer"])
    assert "Who lost?" in response.text and 'value="New England Patriots"' in response.text
    assert Example.objects.count() == 0


@pytest.mark.parametrize("offset", ["forty", "²", "4" * 5000])
def test_a_malformed_offset_falls_back_to_finding_the_answer(
    logged_in, tiny_qa_registered_model, qa_contexts, offset
):
    response = _post(logged_in, qa_contexts[0], "Who won?", "Denver Broncos", offset)
    assert response.status_code == 302
    assert Example.objects.get().target["answer_start"] == 49


def test_model_page_interact_box_answers_with_a_span(logged_in, tiny_qa_registered_model):
    from tests.helpers.tiny_qa import PASSAGES

    url = reverse("leaderboards:model", args=[tiny_qa_registered_model.pk])
    response = logged_in.post(url, {"context": PASSAGES[0], "question": "Who won?"})
    assert response.status_code == 200
    prediction = response.context["prediction"]
    assert prediction["label"] and prediction["label"] in PASSAGES[0]
    assert prediction["probabilities"][0][0] == "score"
    assert "could not answer" not in response.text


def test_validate_page_asks_about_the_answer_not_a_label(client, validator, password, annotator, qa_contexts):
    Example.objects.create(
        round=qa_contexts[0].round,
        annotator=annotator,
        context=qa_contexts[0],
        inputs={"question": "Who won Super Bowl 50?"},
        target={"answer": "Denver Broncos", "answer_start": 49},
        model_wrong=True,
    )
    client.login(username=validator.username, password=password)
    page = client.get(reverse("validation:validate", args=["qa"])).text
    assert "<h1>Is the intended answer right?</h1>" in page
    assert "(optionally with the answer it should have)" in page
    assert "label" not in page.split("<h1>")[1].split("</p>")[0]
