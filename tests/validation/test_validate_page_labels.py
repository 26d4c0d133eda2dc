"""The validate page names what the author wrote as the author's (issue 29): the task's input field label,
"Your sentence" on the create page, reads "The author's sentence" to a validator."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories.annotation import make_example
from tests.factories.tasks import open_round

pytestmark = pytest.mark.django_db


def _page(client, user, password, slug):
    assert client.login(username=user.username, password=password)
    page = client.get(reverse("validation:validate", args=[slug]))
    assert page.status_code == 200
    return page.text


def test_the_sentiment_validate_page_says_the_authors_sentence(
    client, sentiment_task, annotator, validator, password
):
    make_example(open_round(sentiment_task), annotator, label="positive", inputs={"statement": "Meh."})
    text = _page(client, validator, password, "sentiment")
    assert "<h2>The author&#x27;s sentence</h2>" in text
    assert "<h2>Your sentence</h2>" not in text
    assert "<h2>Prompt sentence</h2>" in text  # the context is not the author's


def test_the_hate_speech_validate_page_says_the_authors_statement(
    client, hate_round, annotator, validator, password
):
    make_example(hate_round, annotator)
    text = _page(client, validator, password, "hate-speech")
    assert "<h2>The author&#x27;s statement</h2>" in text


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("Your sentence", "The author's sentence"),
        ("your sentence", "The author's sentence"),
        ("Statement", "The author's statement"),
        ("Hypothesis", "The author's hypothesis"),
        ("NLI hypothesis", "The author's NLI hypothesis"),
        ("The author's text", "The author's text"),
        ("", "The author's text"),
    ],
)
def test_authors_label(label, shown):
    from validation.views import authors_label

    assert authors_label(label) == shown
