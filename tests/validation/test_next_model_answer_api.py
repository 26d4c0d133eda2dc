"""``GET /api/tasks/{slug}/validations/next/`` withholds the model's answer until asked, as the validate
page does (issue 29): unless the task config sets ``validation_shows_model_answer``, the served example's
``model_outputs`` and ``model_wrong`` are null and ``model_answer_hidden`` is true; ``?reveal=model``
answers the same (claimed) example with them."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

NEXT = "/api/tasks/hate-speech/validations/next/"


def _outputs(body):
    return [(o["model_name"], o["label"], o["probabilities"]) for o in body["example"]["model_outputs"]]


def test_next_withholds_the_models_answer_by_default(api, validator, fooling):
    body = api(validator).get(NEXT).json()
    assert body["example"]["id"] == fooling.pk
    assert body["example"]["target"] == "hateful"  # the author's intended label is not the model's answer
    assert (body["example"]["model_outputs"], body["example"]["model_wrong"]) == (None, None)
    assert body["model_answer_hidden"] is True


def test_reveal_model_answers_the_same_example_with_the_models_answer(api, validator, fooling, rule_model):
    client = api(validator)
    first = client.get(NEXT).json()
    revealed = client.get(NEXT + "?reveal=model").json()
    assert revealed["example"]["id"] == first["example"]["id"] == fooling.pk
    assert revealed["claim_expires_at"] is not None
    assert revealed["model_answer_hidden"] is False
    assert revealed["example"]["model_wrong"] is True
    assert _outputs(revealed) == [(rule_model.name, "not-hateful", {"not-hateful": 0.875, "hateful": 0.125})]


def test_the_task_config_shows_the_models_answer_at_once(api, hate_task, validator, fooling, rule_model):
    hate_task.config = {**hate_task.config, "validation_shows_model_answer": True}
    hate_task.save()
    body = api(validator).get(NEXT).json()
    assert body["model_answer_hidden"] is False
    assert body["example"]["model_wrong"] is True
    assert _outputs(body) == [(rule_model.name, "not-hateful", {"not-hateful": 0.875, "hateful": 0.125})]


def test_an_empty_queue_hides_nothing(api, validator, hate_round):
    body = api(validator).get(NEXT).json()
    assert (body["example"], body["model_answer_hidden"]) == (None, False)


@pytest.mark.parametrize("query", ["?reveal=", "?reveal=models", "?reveal=model&reveal=model"])
def test_reveal_takes_only_model(api, validator, fooling, query):
    response = api(validator).get(NEXT + query)
    assert response.status_code == 400 and "reveal" in response.json()
