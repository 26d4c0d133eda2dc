"""/examples/<id>/: who may see it, and the author's explain / retract / flag buttons."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.services import create_example


@pytest.fixture
def example(hate_task, annotator, rule_model):
    return create_example(
        task=hate_task,
        annotator=annotator,
        inputs={"statement": "they should go back home"},
        target="hateful",
    )[0]


def _url(name, example):
    return reverse(f"annotation:{name}", args=[example.pk])


def test_author_sees_the_outcome_and_buttons(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    response = client.get(_url("outcome", example))
    assert response.status_code == 200
    assert "You fooled the model" in response.text
    assert _url("retract", example) in response.text and _url("flag", example) in response.text


def test_outsider_gets_404_for_someone_elses_example(client, outsider, password, example):
    client.login(username=outsider.username, password=password)
    assert client.get(_url("outcome", example)).status_code == 404
    for action in ("explain", "retract", "flag"):
        assert client.post(_url(action, example), {"explanation": "x", "reason": "x"}).status_code == 404
    example.refresh_from_db()
    assert (example.explanation, example.is_retracted, example.is_flagged_by_annotator) == ("", False, False)


def test_unknown_example_is_404(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    assert client.get(reverse("annotation:outcome", args=[example.pk + 1000])).status_code == 404


def test_task_owner_may_see_it_but_not_change_it(client, owner, password, example):
    client.login(username=owner.username, password=password)
    response = client.get(_url("outcome", example))
    assert response.status_code == 200
    assert _url("retract", example) not in response.text
    assert client.post(_url("retract", example)).status_code == 404


def test_anonymous_is_sent_to_login(client, example):
    response = client.get(_url("outcome", example))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))


def test_author_adds_an_explanation_flags_and_retracts(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    response = client.post(_url("explain", example), {"explanation": "Implies they do not belong"})
    assert response.status_code == 302 and response["Location"] == _url("outcome", example)
    client.post(_url("flag", example), {"reason": "I mislabelled it"})
    client.post(_url("retract", example))
    example.refresh_from_db()
    assert example.explanation == "Implies they do not belong"
    assert (example.is_flagged_by_annotator, example.flag_reason) == (True, "I mislabelled it")
    assert example.is_retracted is True
    page = client.get(_url("outcome", example))
    assert "You retracted this example" in page.text
    assert "Implies they do not belong" in page.text


def test_actions_need_post(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    assert client.get(_url("retract", example)).status_code == 405
