"""The model page's interact box shows the token attributions of its answer (models_registry/_attributions.html)."""

from __future__ import annotations

from django.urls import reverse

from engine.explain.attributions import REMOTE
from tests.factories.models_registry import RegisteredModelFactory


def test_the_model_page_explains_the_interact_answer(client, annotator, password, tiny_registered_model):
    client.login(username=annotator.username, password=password)
    url = reverse("leaderboards:model", args=[tiny_registered_model.pk])
    response = client.post(url, {"statement": "they hate 🐷"})
    assert response.status_code == 200
    label = response.context["prediction"]["label"]
    explanation = response.context["explanation"]
    assert explanation.target_label == label
    assert [t.token for t in explanation.tokens] == ["they", "hate", "🐷"]
    assert f"towards <strong>{label}</strong> (raised its logit)" in response.text
    assert "With every word blanked, the model" in response.text
    assert response.text.count('<mark class="attr attr-') == 3


def test_a_remote_model_page_says_no_explanation_is_available(
    client, annotator, password, hate_task, monkeypatch
):
    from models_registry import inference

    remote = RegisteredModelFactory(
        task=hate_task, name="remote", source="endpoint", endpoint_url="http://127.0.0.1:9/p", path=""
    )
    answer = {"label": "hateful", "probabilities": {"hateful": 0.9, "not-hateful": 0.1}}
    monkeypatch.setattr(inference, "predict", lambda model, inputs: [dict(answer)])
    client.login(username=annotator.username, password=password)
    response = client.post(reverse("leaderboards:model", args=[remote.pk]), {"statement": "they hate 🐷"})
    assert response.status_code == 200
    assert REMOTE in response.text and "<mark" not in response.text


def test_try_it_counts_against_the_explanation_rate(
    client, settings, password, annotator, tiny_registered_model
):
    """Over ``DYNABENCH_EXPLAIN_RATE`` the answer still comes, without its explanation, saying why."""
    from django.core.cache import cache

    cache.clear()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "model_explain": "1/min",
        },
    }
    assert client.login(username=annotator.username, password=password)
    url = f"/models/{tiny_registered_model.pk}/"
    first = client.post(url, {"statement": "they are lovely"}).text
    second = client.post(url, {"statement": "they are awful"}).text
    assert "Explanations throttled" not in first
    assert "Explanations throttled: at most 1 texts per minute" in second
    assert 'class="predicted-label"' in second  # the answer itself still comes
