"""/examples/<pk>/why/: "Why did the model decide?" on the outcome page, the fragment and the page without
JavaScript, who may see it, the cache, and that creating an example computes no attributions."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from annotation.models import Example
from annotation.services import create_example
from annotation.why_views import explanations_for
from models_registry.explain import attributions
from tests.factories.models_registry import RegisteredModelFactory

CREATE = reverse("annotation:create", args=["hate-speech"])
STATEMENT = "they hate 🐷 and the people"


def refuse(*args, **kwargs):
    raise AssertionError("attributions computed")


@pytest.fixture
def example(tiny_registered_model, hate_task, annotator):
    example, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": STATEMENT}, target="hateful"
    )
    return example


def why_url(example) -> str:
    return reverse("annotation:why", args=[example.pk])


def test_creating_an_example_computes_no_attributions(
    client, annotator, password, tiny_registered_model, monkeypatch
):
    monkeypatch.setattr(attributions, "attribute", refuse)
    client.login(username=annotator.username, password=password)
    form = client.get(CREATE).context["form"]
    data = {
        "statement": STATEMENT,
        "label": "hateful",
        "client_token": str(uuid.uuid4()),
        "started": form["started"].value(),
    }
    response = client.post(CREATE, data)
    assert response.status_code == 302
    example = Example.objects.get()
    outcome = client.get(response["Location"]).text
    # the outcome offers the explanation (a details that loads it, with a plain link) without computing it
    assert f'<details class="why" data-why-url="{why_url(example)}">' in outcome
    assert f'<a href="{why_url(example)}">' in outcome
    assert "annotation/why.js" in outcome and "<summary>Why did the model decide?</summary>" in outcome


def test_the_author_gets_a_fragment_by_fetch_and_a_page_without_javascript(
    client, annotator, password, example
):
    client.login(username=annotator.username, password=password)
    page = client.get(why_url(example))
    assert page.status_code == 200
    assert "<h1>Why did the model decide?</h1>" in page.text and "<html" in page.text
    assert page["Vary"].count("X-Requested-With") == 1
    fragment = client.get(why_url(example), headers={"X-Requested-With": "fetch"})
    assert fragment.status_code == 200
    assert "<html" not in fragment.text and fragment.text.lstrip().startswith('<div class="why-fragment">')
    prediction = example.predictions.get()
    # the highlighted spans are the original text's, the emoji itself included
    marks = re.findall(
        r'<mark class="attr attr-(pos|neg)-([1-5])" title="(-?[0-9.]+)">([^<]*)</mark>', fragment.text
    )
    assert [m[3] for m in marks] == ["they", "hate", "🐷", "and", "the", "people"]
    label = prediction.label
    assert f"towards <strong>{label}</strong> (raised its logit)" in fragment.text
    # where the model stands with every word blanked, from the explanation's own logits
    [row] = explanations_for(example)
    summary = row["explanation"].summary()
    assert (
        f"With every word blanked, the model {'already ' if summary['baseline_label'] == label else ''}"
        f"leans towards <strong>{summary['baseline_label']}</strong> ({summary['baseline_percent']}%"
    ) in fragment.text
    assert "Words that moved the model most (either way):" in fragment.text
    # the strongest span has strength 5 (strength is relative to the strongest)
    strongest = max(marks, key=lambda m: abs(float(m[2])))
    assert strongest[1] == "5"
    assert len(re.findall(r"<li>", fragment.text)) == 5  # the text alternative: the top 5


def test_only_the_author_and_the_task_owners_see_it(client, example, owner, outsider, password):
    assert client.get(why_url(example)).status_code == 302  # to the login page
    client.login(username=outsider.username, password=password)
    assert client.get(why_url(example)).status_code == 404
    client.login(username=owner.username, password=password)
    assert client.get(why_url(example)).status_code == 200
    assert client.get(reverse("annotation:why", args=[example.pk + 1000])).status_code == 404


def test_the_explanation_is_computed_once_then_cached(client, annotator, password, example, monkeypatch):
    client.login(username=annotator.username, password=password)
    first = client.get(why_url(example), headers={"X-Requested-With": "fetch"}).text
    monkeypatch.setattr(attributions, "attribute", refuse)
    again = client.get(why_url(example), headers={"X-Requested-With": "fetch"}).text
    assert again == first and "<mark" in again


def test_a_remote_target_says_no_explanation_is_available(client, annotator, password, example):
    remote = RegisteredModelFactory(
        task=example.round.task,
        name="remote",
        source="endpoint",
        endpoint_url="http://127.0.0.1:9/p",
        path="",
    )
    prediction = example.predictions.get()
    prediction.model = remote
    prediction.save()
    client.login(username=annotator.username, password=password)
    text = client.get(why_url(example), headers={"X-Requested-With": "fetch"}).text
    assert attributions.REMOTE in text and "<mark" not in text
