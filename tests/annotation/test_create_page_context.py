"""The create page of a task with a "prompt" context field: serves a context, carries it, stores it."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from annotation.models import Example
from models_registry import inference
from models_registry.round_targets import set_round_targets
from tasks.models import Context
from tests.factories.models_registry import stand_in
from tests.helpers.fakes import rule_predict

URL = reverse("annotation:create", args=["prompted"])


@pytest.fixture
def writer(client, annotator, password, prompt_task, monkeypatch):
    monkeypatch.setattr(inference, "predict", rule_predict)
    set_round_targets(round=prompt_task.current_round, models=[stand_in(prompt_task, "stand-in")])
    client.login(username=annotator.username, password=password)
    return client


def _contexts(task, *prompts, tag=""):
    return [
        Context.objects.create(task=task, round=task.current_round, data={"prompt": p}, tag=tag)
        for p in prompts
    ]


def _post(client, context_id, statement="I hate rain", label="not-hateful"):
    data = {"statement": statement, "label": label, "client_token": str(uuid.uuid4())}
    if context_id is not None:
        data["context"] = str(context_id)
    return client.post(URL, data)


def test_the_page_shows_a_context_and_carries_its_id(writer, prompt_task):
    [context] = _contexts(prompt_task, "Talk about the weather 🌧️\nin two lines")
    response = writer.get(URL)
    assert response.status_code == 200
    assert response.context["served_context"] == context
    assert "Talk about the weather 🌧️<br>in two lines" in response.text
    assert f'<input type="hidden" name="context" value="{context.pk}">' in response.text


def test_submitting_stores_the_context_and_the_next_request_serves_another(writer, prompt_task, annotator):
    a, b = _contexts(prompt_task, "first prompt", "second prompt")
    served = writer.get(URL).context["served_context"]
    response = _post(writer, served.pk)
    example = Example.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "annotation:outcome", args=[example.pk]
    )
    assert example.context == served and example.annotator == annotator
    assert example.model_wrong is True  # the stand-in says hateful for "hate"; the intended label differs
    assert writer.get(URL).context["served_context"] == ({a, b} - {served}).pop()


def test_tag_filter_on_the_page(writer, prompt_task):
    _contexts(prompt_task, *(f"news {i}" for i in range(5)), tag="news")
    [sport] = _contexts(prompt_task, "football", tag="sport")
    assert writer.get(URL, {"tag": "sport"}).context["served_context"] == sport


def test_a_context_of_another_round_or_none_is_refused(writer, prompt_task, hate_round):
    [mine] = _contexts(prompt_task, "mine")
    theirs = Context.objects.create(task=hate_round.task, round=hate_round, data={"prompt": "theirs"})
    for bad in (theirs.pk, None, "junk"):
        response = _post(writer, bad)
        assert response.status_code == 200
        assert "The prompt you wrote for is no longer available" in response.text
        assert response.context["served_context"] == mine  # a fresh, valid context is offered...
        assert not response.context["form"].is_bound  # ...with an empty form, the text kept apart
    assert not Example.objects.exists()


def test_no_contexts_loaded_means_no_form(writer, prompt_task):
    response = writer.get(URL)
    assert "No contexts are loaded for round 1 yet" in response.text
    assert 'name="statement"' not in response.text


def test_the_hate_speech_task_has_no_context(client, annotator, password, hate_round):
    client.login(username=annotator.username, password=password)
    response = client.get(reverse("annotation:create", args=["hate-speech"]))
    assert response.context["served_context"] is None and 'name="context"' not in response.text


def test_the_outcome_page_shows_the_context_the_example_was_written_on(writer, prompt_task):
    [context] = _contexts(prompt_task, "Talk about <the> weather 🌧️\nin two lines")
    response = _post(writer, context.pk)
    page = writer.get(response["Location"])
    assert page.status_code == 200
    assert page.context["context_fields"] == [("Prompt", "Talk about <the> weather 🌧️\nin two lines")]
    assert (
        '<h2>Prompt</h2><p class="wrap-anywhere" dir="auto">Talk about &lt;the&gt; weather 🌧️<br>in two lines</p>'
        in page.text
    )
    assert page.text.index("<h2>Prompt</h2>") < page.text.index("I hate rain")
