"""/examples/<id>/: who may see it, the author's explain / retract / flag buttons, and its wording: for
the author ("Your example") or about the author to anyone else, and an example retracted after the
validators settled it stated as settled, then retracted."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Example
from annotation.services import create_example, retract_example
from annotation.verdict import authors_wording, validation_state
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.config import TaskConfig


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


@pytest.fixture
def fooling(annotator, hate_task, rule_model):
    return create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "I hate them"}, target="not-hateful"
    )[0]


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
