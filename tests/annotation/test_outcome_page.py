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


def test_explanation_with_line_breaks_up_to_the_limit_is_saved(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    text = "b" * 1990 + "\r\n" * 10  # what a browser sends for 2,000 characters of textarea maxlength
    response = client.post(_url("explain", example), {"explanation": text})
    assert response.status_code == 302
    example.refresh_from_db()
    assert example.explanation == "b" * 1990 + "\n" * 10


def test_too_long_explanation_is_shown_back_with_the_error(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    text = "c" * 1995 + "\r\nline two"
    response = client.post(_url("explain", example), {"explanation": text})
    assert response.status_code == 200
    assert "The explanation is too long: 2,004 characters, at most 2,000 allowed." in response.text
    assert "c" * 1995 + "\r\nline two</textarea>" in response.text
    assert 'maxlength="2000"' in response.text
    example.refresh_from_db()
    assert example.explanation == ""


def test_flag_reason_with_line_breaks_and_control_characters(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    response = client.post(_url("flag", example), {"reason": "wrong\x00 label"})
    assert response.status_code == 200
    assert "The reason contains the control character U+0000" in response.text
    assert "\x00" not in response.text
    assert "wrong label</textarea>" in response.text
    response = client.post(_url("flag", example), {"reason": "r" * 1995 + "\r\n" * 5})
    assert response.status_code == 302
    example.refresh_from_db()
    assert (example.is_flagged_by_annotator, example.flag_reason) == (True, "r" * 1995 + "\n" * 5)


def test_retracted_example_refuses_explain_and_flag(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    client.post(_url("retract", example))
    for action, data in (("explain", {"explanation": "late"}), ("flag", {"reason": "late"})):
        response = client.post(_url(action, example), data)
        assert response.status_code == 200
        assert "This example is retracted" in response.text
    example.refresh_from_db()
    assert (example.explanation, example.is_flagged_by_annotator, example.flag_reason) == ("", False, "")


def test_second_flag_is_refused(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    client.post(_url("flag", example), {"reason": "first reason"})
    response = client.post(_url("flag", example), {"reason": "second reason"})
    assert "already flagged" in response.text
    example.refresh_from_db()
    assert example.flag_reason == "first reason"


def test_long_unbroken_text_blocks_can_wrap(client, annotator, password, hate_task, rule_model):
    word = "https://example.com/" + "x" * 1980
    long_one = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": word}, target="hateful"
    )[0]
    client.login(username=annotator.username, password=password)
    client.post(_url("explain", long_one), {"explanation": word})
    client.post(_url("flag", long_one), {"reason": word})
    text = client.get(_url("outcome", long_one)).text
    assert (
        text.count(f'<p class="statement wrap-anywhere" dir="auto">{word}</p>') == 2
    )  # statement, explanation
    assert f'<span class="wrap-anywhere" dir="auto">{word}</span>' in text


def test_outcome_page_links_to_my_examples(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    text = client.get(_url("outcome", example)).text
    assert f'· <a href="{reverse("annotation:my_examples")}">My examples</a></p>' in text


def test_an_example_without_context_shows_no_context_section(client, annotator, password, example):
    client.login(username=annotator.username, password=password)
    response = client.get(_url("outcome", example))
    assert response.status_code == 200 and response.context["context_fields"] == []
    assert '<section class="context">' not in response.text
