"""``POST /api/models/<pk>/predict/`` with ``explain`` is throttled per user, counted in explained texts
(models_registry/throttling.py, ``DYNABENCH_EXPLAIN_RATE``)."""

from __future__ import annotations

import pytest

from engine.explain import attributions
from models_registry import explanations
from tests.helpers.api import forced_client as api


@pytest.fixture
def rate(settings):
    def set_rate(value: str) -> None:
        settings.REST_FRAMEWORK = {
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {
                **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
                "model_explain": value,
            },
        }

    return set_rate


@pytest.fixture
def no_computation(monkeypatch):
    """The throttle is under test, not integrated gradients: each text gets an empty explanation."""
    monkeypatch.setattr(
        explanations,
        "explain",
        lambda model, inputs, targets=None: [attributions.Explanation() for _ in inputs],
    )


def body(n: int, explain: bool = True) -> dict:
    return {"inputs": [{"statement": f"text {i}"} for i in range(n)], "explain": explain}


def test_the_default_rate_is_ten_texts_a_minute(settings):
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["model_explain"] == "10/min"


def test_explanations_are_counted_in_texts_and_answered_429_over_the_limit(
    tiny_registered_model, annotator, validator, rate, no_computation
):
    rate("10/min")
    url = f"/api/models/{tiny_registered_model.pk}/predict/"
    client = api(annotator)
    assert client.post(url, body(8), format="json").status_code == 200  # 8 of 10
    refused = client.post(url, body(3), format="json")  # 8 + 3 > 10
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    detail = refused.json()["detail"]
    assert "at most 10 texts per minute" in detail and "asks for 3 and 2 are left" in detail
    assert client.post(url, body(2), format="json").status_code == 200  # the refusal used nothing: 10 of 10
    assert client.post(url, body(1), format="json").status_code == 429
    assert client.post(url, body(5, explain=False), format="json").status_code == 200  # plain predictions
    assert (
        client.post(url, {"inputs": [{"statement": " "}], "explain": True}, format="json").status_code == 400
    )
    assert api(validator).post(url, body(8), format="json").status_code == 200  # per user


def test_a_call_larger_than_the_rate_is_a_400_not_a_wait(
    tiny_registered_model, annotator, rate, no_computation
):
    rate("2/min")
    response = api(annotator).post(f"/api/models/{tiny_registered_model.pk}/predict/", body(3), format="json")
    assert response.status_code == 400
    assert response.json() == {
        "explain": [
            "At most 2 texts can be explained per minute on this server (this call has 3); send fewer inputs."
        ]
    }


def test_four_parallel_calls_of_eight_texts_let_exactly_one_through(annotator, rate):
    """The tester's case: 4 calls at once, 8 texts each, rate 10/min: the atomic count lets one pass."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier
    from types import SimpleNamespace

    from rest_framework.exceptions import Throttled

    from models_registry.throttling import ExplainThrottle

    rate("10/min")
    request = SimpleNamespace(user=annotator)
    start = Barrier(4)

    def call(_):
        start.wait()
        try:
            ExplainThrottle().charge(request, 8)
        except Throttled:
            return 429
        return 200

    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(call, range(4)))
    assert statuses == [200, 429, 429, 429]
