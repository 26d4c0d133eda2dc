"""/tasks/<slug>/me/: the requesting person's own row per round."""

from __future__ import annotations

from django.urls import reverse

from tests.factories.annotation import make_example
from tests.factories.validation import submit_served

URL = reverse("validation:me", args=["hate-speech"])


def test_validator_sees_own_numbers(client, hate_round, annotator, validator, password, crowd):
    e1, e2 = make_example(hate_round, annotator), make_example(hate_round, annotator)
    for user in (validator, *crowd[:2]):
        submit_served(example=e1, validator=user, verdict="correct")  # settles correct: validator agrees
    submit_served(example=e2, validator=validator, verdict="incorrect")  # still pending
    client.login(username=validator.username, password=password)
    text = client.get(URL).text
    # Round 1: submitted 0, fooling 0, verified 0, validations 2, agreement 1 of 1.
    assert "<td>1</td>\n      <td>0</td>\n      <td>0</td>\n      <td>0</td>\n      <td>2</td>" in text
    assert "1 of 1 (100%)" in text


def test_annotator_sees_verified_count(client, hate_round, annotator, validator, password, crowd):
    e1 = make_example(hate_round, annotator)
    make_example(hate_round, annotator, model_wrong=False)
    for user in (validator, *crowd[:2]):
        submit_served(example=e1, validator=user, verdict="correct")
    client.login(username=annotator.username, password=password)
    text = client.get(URL).text
    assert "<td>1</td>\n      <td>2</td>\n      <td>1</td>\n      <td>1</td>\n      <td>0</td>" in text


def test_nothing_yet(client, hate_round, outsider, password):
    client.login(username=outsider.username, password=password)
    assert "You have not written or validated anything" in client.get(URL).text


def test_anonymous_is_sent_to_login(client, hate_round):
    assert client.get(URL).status_code == 302
