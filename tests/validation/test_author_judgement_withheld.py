"""What a validator reads of the author's judgement is decided once (``validation.serializers
.validator_fields``) and is the same on every route that serves an example to a validator: the validate
page and ``GET /api/tasks/{slug}/validations/next/``.

Unanchored validation (a red-teaming conversation, ``services.is_rubric_example``): nothing of the author's
judgement is served: their rubric answers (target), their verdict (model_wrong), their explanation, their
categories (tags) or anything of the metadata (failed_questions). Anchored validation (a labelled example,
a multiple-choice item): the author's target and explanation are what the validator judges, on the page
and in the API alike."""

from __future__ import annotations

import json

import pytest

from annotation.models import Example
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.services import ensure_round, set_current_round

pytestmark = pytest.mark.django_db

EXPLANATION = "The Amazon is 6,400 km long, not 9,000, so this is a fabrication failure."
RED_NEXT = "/api/tasks/red-team/validations/next/"
RED_PAGE = "/tasks/red-team/validate/"


@pytest.fixture
def red_round(db):
    task = Task.objects.create(slug="red-team", name="Red-team", config=RED_TEAM_CONFIG, validation_quorum=3)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    return round_


@pytest.fixture
def passage(red_round):
    return Context.objects.create(
        task=red_round.task,
        round=red_round,
        data={"title": "Amazon", "passage": "The Amazon is 6,400 km long."},
    )


@pytest.fixture
def conversation(red_round, passage, annotator):
    return Example.objects.create(
        round=red_round,
        context=passage,
        annotator=annotator,
        inputs={
            "messages": [
                {"role": "user", "content": "How long is the Amazon?"},
                {"role": "assistant", "content": "It is 9,000 km long and flows through Peru."},
            ]
        },
        target={"supported": "no", "helpful": "4"},
        model_wrong=True,
        tags=["fabrication"],
        explanation=EXPLANATION,
        metadata={
            "mode": "conversation",
            "turns": 1,
            "model": "smollm2",
            "cost": None,
            "failed_questions": ["supported"],
        },
    )


@pytest.fixture
def choice_item(red_round, passage, annotator):
    return Example.objects.create(
        round=red_round,
        context=passage,
        annotator=annotator,
        inputs={"question": "How long is the Amazon?", "options": ["9,000 km", "6,400 km", "1,000 km"]},
        target={"answer": 1},
        model_wrong=True,
        explanation="The passage says 6,400 km; the model picked 1,000 km.",
        metadata={"mode": "multiple_choice", "picked": 2},
    )


@pytest.mark.parametrize("query", ["", "?reveal=model"])
def test_the_api_serves_a_conversation_without_the_authors_judgement(api, validator, conversation, query):
    body = api(validator).get(RED_NEXT + query).json()
    shown = body["example"]
    assert shown["id"] == conversation.pk
    # What is judged is served: the passage and the messages.
    assert shown["context"]["data"]["passage"] == "The Amazon is 6,400 km long."
    assert shown["inputs"]["messages"] == conversation.inputs["messages"]
    # The author's rubric answers, verdict and explanation are null; categories and metadata never a field.
    assert (shown["target"], shown["model_wrong"], shown["explanation"]) == (None, None, None)
    text = json.dumps(body)
    for secret in ("fabrication", "failed_questions", "supported", "smollm2", EXPLANATION):
        assert secret not in text


def test_the_validate_page_shows_the_same_of_a_conversation(client, validator, conversation):
    client.force_login(validator)
    html = client.get(RED_PAGE).content.decode()
    assert "It is 9,000 km long and flows through Peru." in html
    assert "fabrication failure" not in html and "The author's explanation" not in html


def test_a_rating_example_is_served_unanchored_too(api, validator, red_round, passage):
    """A replayed model's answer opened for rating (no author) is validated by rubric as well."""
    rating = Example.objects.create(
        round=red_round,
        context=passage,
        annotator=None,
        source="rating",
        inputs={"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]},
        target={},
        model_wrong=None,
        explanation="never shown",
        metadata={"mode": "conversation", "turns": 1},
    )
    shown = api(validator).get(RED_NEXT).json()["example"]
    assert shown["id"] == rating.pk
    assert (shown["target"], shown["model_wrong"], shown["explanation"]) == (None, None, None)


def test_a_multiple_choice_item_is_anchored_its_answer_and_explanation_served_on_both_routes(
    api, client, validator, choice_item
):
    shown = api(validator).get(RED_NEXT + "?reveal=model").json()["example"]
    assert shown["id"] == choice_item.pk
    assert shown["target"] == {"answer": 1}
    assert shown["explanation"] == "The passage says 6,400 km; the model picked 1,000 km."
    assert shown["model_wrong"] is True
    client.force_login(validator)
    html = client.get(RED_PAGE).content.decode()
    assert "6,400 km <strong>(the author's correct answer)</strong>" in html
    assert "The author's explanation" in html
    assert "The passage says 6,400 km; the model picked 1,000 km." in html


def test_a_labelled_example_is_anchored_its_label_and_explanation_served_on_both_routes(
    api, client, validator, fooling
):
    fooling.explanation = "A call to expel a group is hateful."
    fooling.save(update_fields=["explanation"])
    shown = api(validator).get("/api/tasks/hate-speech/validations/next/").json()["example"]
    assert (shown["id"], shown["target"], shown["explanation"]) == (
        fooling.pk,
        "hateful",
        "A call to expel a group is hateful.",
    )
    client.force_login(validator)
    html = client.get("/tasks/hate-speech/validate/").content.decode()
    assert "The author's intended label" in html and '<strong dir="auto">hateful</strong>' in html
    assert "The author's explanation" in html and "A call to expel a group is hateful." in html


def test_the_examples_api_does_not_serve_another_authors_example_to_a_validator(api, validator, conversation):
    client = api(validator)
    assert client.get(RED_NEXT).json()["example"]["id"] == conversation.pk  # served, claimed
    assert client.get(f"/api/examples/{conversation.pk}/").status_code == 404
    listed = client.get("/api/tasks/red-team/examples/").json()
    assert listed["results"] == [] if isinstance(listed, dict) else listed == []
