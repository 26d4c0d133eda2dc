"""/tasks/<slug>/create/: login, content warning, the form from the config, submit -> outcome page."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from annotation.models import Example
from models_registry import inference
from tasks.services import close_round

URL = reverse("annotation:create", args=["hate-speech"])


def _post(client, statement, label="hateful", token=None, **extra):
    data = {"statement": statement, "label": label, "client_token": str(token or uuid.uuid4()), **extra}
    return client.post(URL, data)


def test_anonymous_is_sent_to_login(client, hate_round):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('account_login')}?next={URL}"


def test_form_is_built_from_the_task_config(client, annotator, password, hate_round):
    client.login(username=annotator.username, password=password)
    response = client.get(URL)
    assert response.status_code == 200
    text = response.text
    assert "Content warning." in text
    assert 'name="statement"' in text and 'dir="auto"' in text
    assert 'value="hateful"' in text and 'value="not-hateful"' in text
    token = response.context["form"]["client_token"].value()
    assert f'<input type="hidden" name="client_token" value="{token}"' in text
    assert uuid.UUID(str(token))
    assert 'name="started"' in text


def test_annotator_writes_an_example_and_sees_the_outcome(client, annotator, password, tiny_registered_model):
    statement = "they are not our friends"
    expected = inference.predict(tiny_registered_model, [{"statement": statement}])[0]
    client.login(username=annotator.username, password=password)
    form = client.get(URL).context["form"]

    response = client.post(
        URL,
        {
            "statement": statement,
            "label": "hateful",
            "client_token": form["client_token"].value(),
            "started": form["started"].value(),
            "model_wrong": "false",  # a forged field is ignored: the server decides
        },
    )

    example = Example.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:outcome", args=[example.pk])
    assert example.annotator == annotator
    assert example.time_taken_ms is not None and example.time_taken_ms >= 0
    fooled = expected["label"] != "hateful"
    assert example.model_wrong is fooled

    page = client.get(response["Location"])
    assert page.status_code == 200
    text = page.text
    assert f'<p class="statement wrap-anywhere" dir="auto">{statement}</p>' in text
    assert "The label you intend: <strong>hateful</strong>" in text
    assert f"<strong>{expected['label']}</strong>" in text
    for label, probability in expected["probabilities"].items():
        assert f"{label}: {probability:.3f}" in text
    assert ("You fooled the model" in text) is fooled
    assert ("The model got it right" in text) is (not fooled)


@pytest.mark.parametrize(
    ("statement", "label", "message"),
    [
        ("I hate them", "not-hateful", "You fooled the model"),
        ("I hate them", "hateful", "The model got it right"),
    ],
)
def test_outcome_message_follows_the_server_verdict(
    client, annotator, password, rule_model, statement, label, message
):
    client.login(username=annotator.username, password=password)
    response = _post(client, statement, label)
    page = client.get(response["Location"])
    assert message in page.text
    assert "hateful: 0.875" in page.text


def test_crashing_model_outcome_says_scored_later(client, annotator, password, crashing_model):
    client.login(username=annotator.username, password=password)
    response = _post(client, "I hate them")
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert "The model failed to answer; your example is saved and will be scored later" in page.text
    assert Example.objects.get().prediction_status == "failed"


def test_posting_the_same_client_token_twice_creates_one_example(client, annotator, password, rule_model):
    client.login(username=annotator.username, password=password)
    token = uuid.uuid4()
    first = _post(client, "I hate them", token=token)
    second = _post(client, "I hate them", token=token)
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"]
    assert Example.objects.count() == 1


@pytest.mark.parametrize(
    ("statement", "label", "field", "message"),
    [
        ("", "hateful", "statement", "Statement is required; write something that is not only spaces."),
        (
            "   \n  ",
            "hateful",
            "statement",
            "Statement is required; write something that is not only spaces.",
        ),
        (
            "x" * 2001,
            "hateful",
            "statement",
            "Statement is too long: 2,001 characters, at most 2,000 allowed.",
        ),
        ("a fine statement", "spam", "label", "Choose one of: hateful, not-hateful."),
        ("a fine statement", "", "label", "Choose the label you intend."),
    ],
    ids=["empty", "whitespace", "too-long", "unknown-label", "no-label"],
)
def test_form_errors_render_and_keep_the_text(
    client, annotator, password, rule_model, statement, label, field, message
):
    client.login(username=annotator.username, password=password)
    token = uuid.uuid4()
    response = _post(client, statement, label, token=token)
    assert response.status_code == 200
    assert response.context["form"].errors[field] == [message]
    assert message in response.text
    if statement.strip():
        assert f">\n{statement}</textarea>" in response.text
    assert f'value="{token}"' in response.text  # the same token: a corrected resubmission is one example
    assert Example.objects.count() == 0


def test_rtl_and_emoji_text_round_trips(client, annotator, password, rule_model):
    client.login(username=annotator.username, password=password)
    statement = "אני לא אוהב את זה 👎🏽\r\nمرحبا"
    response = _post(client, statement, "not-hateful")
    example = Example.objects.get()
    assert example.inputs["statement"] == "אני לא אוהב את זה 👎🏽\nمرحبا"
    page = client.get(response["Location"])
    assert '<p class="statement wrap-anywhere" dir="auto">אני לא אוהב את זה 👎🏽\nمرحبا</p>' in page.text


def test_blocked_user_gets_no_form_and_cannot_post(client, outsider, password, rule_model):
    outsider.is_blocked = True
    outsider.save()
    client.login(username=outsider.username, password=password)
    assert "blocked from writing examples" in client.get(URL).text
    response = _post(client, "I hate them")
    assert response.status_code == 200
    assert "blocked from writing examples" in response.text
    assert Example.objects.count() == 0


def test_closed_round_shows_not_collecting(client, annotator, password, hate_round, rule_model):
    close_round(round_=hate_round)
    client.login(username=annotator.username, password=password)
    response = _post(client, "I hate them")
    assert response.status_code == 200
    assert "not collecting examples" in response.text
    assert Example.objects.count() == 0


# --- Text kept and a usable form after every error ----------------------------------------------


def test_nul_in_the_statement_is_one_clear_error_and_is_not_echoed(client, annotator, password, rule_model):
    client.login(username=annotator.username, password=password)
    response = _post(client, "they\x00 go")
    assert response.status_code == 200
    assert response.context["form"].errors == {
        "statement": ["Statement contains the control character U+0000; remove it and send again."]
    }
    assert "\x00" not in response.text
    assert "Null characters are not allowed" not in response.text and "is required" not in response.text
    assert ">\nthey go</textarea>" in response.text
    assert Example.objects.count() == 0


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("\u200b\u200b\u200b", "write something visible"),
        ("bell \x07", "contains the control character U+0007"),
    ],
)
def test_invisible_or_control_statement_is_refused_on_the_page(
    client, annotator, password, rule_model, statement, message
):
    client.login(username=annotator.username, password=password)
    response = _post(client, statement)
    assert response.status_code == 200
    assert message in response.text
    assert Example.objects.count() == 0


def _token_in(response) -> str:
    return str(response.context["form"]["client_token"].value())


def test_reused_token_with_new_text_keeps_it_and_a_fresh_token_saves_it(
    client, annotator, password, rule_model
):
    client.login(username=annotator.username, password=password)
    token = uuid.uuid4()
    first = _post(client, "I hate them", token=token)
    assert first.status_code == 302
    example = Example.objects.get()

    again = _post(client, "I hate them all, edited", token=token)

    assert again.status_code == 200
    assert (
        f"This form was already sent as example #{example.pk}; your new text was not saved yet" in again.text
    )
    assert ">\nI hate them all, edited</textarea>" in again.text
    fresh = _token_in(again)
    assert fresh != str(token) and uuid.UUID(fresh)
    assert f'value="{fresh}"' in again.text
    assert Example.objects.count() == 1

    third = client.post(URL, {**_form_data(again), "label": "hateful"})
    assert third.status_code == 302
    assert Example.objects.count() == 2
    assert Example.objects.order_by("id").last().inputs == {"statement": "I hate them all, edited"}


def _form_data(response) -> dict:
    form = response.context["form"]
    return {name: form[name].value() or "" for name in ("statement", "client_token", "started")}


@pytest.mark.parametrize(
    "token", [None, "", "not-a-uuid", "\x00"], ids=["missing", "empty", "invalid", "nul"]
)
def test_missing_or_invalid_token_shows_an_error_and_renews_it(
    client, annotator, password, rule_model, token
):
    client.login(username=annotator.username, password=password)
    data = {"statement": "they should go back home", "label": "hateful"}
    if token is not None:
        data["client_token"] = token
    response = client.post(URL, data)

    assert response.status_code == 200
    assert "The form had expired; check your text and send it again." in response.text
    assert ">\nthey should go back home</textarea>" in response.text
    fresh = _token_in(response)
    assert uuid.UUID(fresh)
    assert f'<input type="hidden" name="client_token" value="{fresh}"' in response.text
    assert Example.objects.count() == 0

    again = client.post(URL, {**_form_data(response), "label": "hateful"})
    assert again.status_code == 302
    example = Example.objects.get()
    assert example.client_token == uuid.UUID(fresh)
    assert example.time_taken_ms is not None


def test_text_is_shown_back_when_the_round_closed_while_writing(
    client, annotator, password, hate_round, rule_model
):
    client.login(username=annotator.username, password=password)
    data = _form_data(client.get(URL))
    close_round(round_=hate_round)
    response = client.post(URL, {**data, "statement": "a long statement I worked on", "label": "hateful"})
    assert response.status_code == 200
    assert "not collecting examples" in response.text
    assert "Your example was not saved" in response.text
    assert "a long statement I worked on</textarea>" in response.text
    assert Example.objects.count() == 0


def test_round_closing_while_the_model_answers_keeps_the_text(
    client, annotator, password, hate_round, rule_model, monkeypatch
):
    from tests.helpers.fakes import rule_predict

    def close_then_predict(model, inputs):
        close_round(round_=type(hate_round).objects.get(pk=hate_round.pk))
        return rule_predict(model, inputs)

    monkeypatch.setattr(inference, "predict", close_then_predict)
    client.login(username=annotator.username, password=password)
    response = _post(client, "written just in time")
    assert response.status_code == 200
    assert "closed while the model was answering" in response.text
    assert "written just in time</textarea>" in response.text
    assert Example.objects.count() == 0


def test_started_from_another_form_is_ignored(client, annotator, password, rule_model):
    client.login(username=annotator.username, password=password)
    old = _form_data(client.get(URL))
    new = _form_data(client.get(URL))
    response = client.post(
        URL,
        {
            "statement": "I hate them",
            "label": "hateful",
            "client_token": new["client_token"],
            "started": old["started"],
        },
    )
    assert response.status_code == 302
    assert Example.objects.get().time_taken_ms is None


def test_a_form_served_in_round_1_and_sent_after_round_2_opened_is_not_stored(
    client, annotator, password, hate_round, rule_model
):
    from models_registry.round_targets import set_round_targets
    from tasks.services import ensure_round, set_current_round

    client.login(username=annotator.username, password=password)
    page = client.get(URL)
    assert f'<input type="hidden" name="round" value="{hate_round.pk}">' in page.text
    data = {**_form_data(page), "round": str(hate_round.pk)}
    close_round(round_=hate_round)
    round2 = ensure_round(task=hate_round.task, number=2)
    set_round_targets(round=round2, models=[rule_model])
    set_current_round(task=hate_round.task, round_=round2)

    response = client.post(URL, {**data, "statement": "written in round one", "label": "hateful"})

    assert response.status_code == 200
    assert "Round 1 closed and round 2 opened while you were writing" in response.text
    assert "written in round one</textarea>" in response.text
    assert f'<input type="hidden" name="round" value="{round2.pk}">' in response.text
    assert Example.objects.count() == 0
    # Sending the shown form again is a deliberate choice for round 2.
    again = client.post(
        URL, {**data, "round": str(round2.pk), "statement": "written in round one", "label": "hateful"}
    )
    assert again.status_code == 302
    assert Example.objects.get().round == round2


@pytest.mark.parametrize("forged", ["²", "9" * 5000, "abc", "999999"])
def test_a_forged_round_field_is_an_error_not_a_500(
    client, annotator, password, hate_round, rule_model, forged
):
    client.login(username=annotator.username, password=password)
    data = _form_data(client.get(URL))
    response = client.post(URL, {**data, "round": forged, "statement": "a statement", "label": "hateful"})
    assert response.status_code == 200
    assert "Round 1 opened while you were writing" in response.text
    assert Example.objects.count() == 0
