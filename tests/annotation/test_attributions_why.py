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
from engine.explain import attributions
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


def _served_as(example, *, runtime: str, probability: float):
    """Make ``example``'s stored prediction the served model's answer on ``runtime``, giving its label
    ``probability`` (the rest to the other label): what the verdict shows."""
    prediction = example.predictions.get()
    label = prediction.label
    [other] = [name for name in example.round.task.cfg.labels if name != label]
    prediction.runtime = runtime
    prediction.output = {"label": label, "probabilities": {label: probability, other: 1 - probability}}
    prediction.save()
    return label


def test_the_explanation_states_the_served_probability_and_names_the_runtime(client, annotator, example):
    # The verdict comes from the ONNX int8 model (61.5 %); the attributions from the PyTorch weights.
    label = _served_as(example, runtime="onnx-int8", probability=0.615)
    client.force_login(annotator)
    outcome = client.get(reverse("annotation:outcome", args=[example.pk])).text
    assert f"{label}: 0.615" in outcome  # the verdict's table
    fragment = client.get(why_url(example), headers={"X-Requested-With": "fetch"}).text
    [row] = explanations_for(example)
    computed = row["explanation"].summary()["input_percent"]
    assert computed != "61.5"  # the tiny random model's PyTorch weights give another figure
    served = re.search(r'<p class="attributions-served">(.*?)</p>', fragment, re.S).group(1)
    assert served == (
        f"The served model (ONNX Runtime, int8 weights) gave <strong>{label}</strong> 61.5%. The attributions "
        "are computed on its PyTorch weights (integrated gradients need gradients, which ONNX Runtime does "
        f"not give), where <strong>{label}</strong> gets {computed}%: the figures below are the PyTorch "
        "weights'."
    )
    assert fragment.index("attributions-served") < fragment.index("attributions-baseline")


def test_on_the_runtime_that_served_it_the_explanation_states_the_verdicts_probability(
    client, annotator, example
):
    label = _served_as(example, runtime="torch", probability=0.615)
    client.force_login(annotator)
    fragment = client.get(why_url(example), headers={"X-Requested-With": "fetch"}).text
    assert f"With the words of the text, <strong>{label}</strong> gets 61.5% (logit " in fragment
    assert "attributions-served" not in fragment and "PyTorch weights" not in fragment


def test_served_figures_by_hand(example):
    from annotation.why_views import served_figures

    label = _served_as(example, runtime="onnx-fp32", probability=0.25)
    prediction = example.predictions.get()
    assert served_figures(prediction, label) == {
        "probability": 0.25,
        "percent": "25.0",
        "runtime": "onnx-fp32",
        "runtime_label": "ONNX Runtime, fp32",
        "other_runtime": True,
    }
    prediction.runtime = ""  # stored before runtimes were recorded: the runtime is not known
    assert served_figures(prediction, label)["other_runtime"] is False
    assert served_figures(prediction, "no-such-label") is None
