"""``POST /api/models/<pk>/predict/`` with ``explain``: attributions per output, or why there are none."""

from __future__ import annotations

import pytest

from engine.explain.attributions import MAX_EXPLAIN_INPUTS, REMOTE, SPAN
from models_registry import inference
from tests.factories.models_registry import RegisteredModelFactory
from tests.helpers.api import forced_client as api


def url(model) -> str:
    return f"/api/models/{model.pk}/predict/"


def test_explain_adds_attributions_that_sum_to_the_logit_difference(tiny_registered_model, annotator):
    inputs = [{"statement": "they hate 🐷"}, {"statement": "I love my neighbours"}]
    response = api(annotator).post(
        url(tiny_registered_model), {"inputs": inputs, "explain": True}, format="json"
    )
    assert response.status_code == 200, response.json()
    outputs = response.json()["outputs"]
    first = outputs[0]
    assert first["target_label"] == first["label"]
    assert [(a["token"], a["start"], a["end"], a["field"]) for a in first["attributions"]] == [
        ("they", 0, 4, "statement"),
        ("hate", 5, 9, "statement"),
        ("🐷", 10, 11, "statement"),
    ]
    for output in outputs:
        difference = output["logit_input"] - output["logit_baseline"]
        assert abs(output["attribution_sum"] - difference) <= output["tolerance"]
        assert output["tolerance"] == pytest.approx(0.02 + 0.02 * abs(difference))
        assert sum(a["score"] for a in output["attributions"]) == pytest.approx(output["attribution_sum"])
        assert output["n_steps"] == 50 and output["truncated"] is False
    plain = api(annotator).post(url(tiny_registered_model), {"inputs": inputs}, format="json").json()
    assert [o["label"] for o in plain["outputs"]] == [o["label"] for o in outputs]
    assert "attributions" not in plain["outputs"][0]


def test_explain_must_be_a_json_boolean_and_is_bounded(tiny_registered_model, annotator):
    client = api(annotator)
    as_text = client.post(
        url(tiny_registered_model), {"inputs": [{"statement": "hi"}], "explain": "true"}, format="json"
    )
    assert as_text.status_code == 400
    assert as_text.json() == {"explain": ["Must be JSON true or false, not a string."]}
    too_many = client.post(
        url(tiny_registered_model),
        {"inputs": [{"statement": "hi"}] * (MAX_EXPLAIN_INPUTS + 1), "explain": True},
        format="json",
    )
    assert too_many.status_code == 400
    assert too_many.json() == {"explain": ["At most 8 inputs can be explained in one call (this has 9)."]}
    typo = client.post(
        url(tiny_registered_model), {"inputs": [{"statement": "hi"}], "explian": True}, format="json"
    )
    assert typo.status_code == 400 and typo.json() == {
        "explian": ["Unknown field; this takes: inputs, explain."]
    }


def test_a_remote_model_answers_with_no_explanation(hate_task, annotator, monkeypatch):
    model = RegisteredModelFactory(
        task=hate_task, name="remote", source="endpoint", endpoint_url="http://127.0.0.1:9/predict", path=""
    )
    answer = {"label": "hateful", "probabilities": {"hateful": 0.9, "not-hateful": 0.1}}
    monkeypatch.setattr(inference, "predict", lambda model, inputs: [dict(answer) for _ in inputs])
    response = api(annotator).post(
        url(model), {"inputs": [{"statement": "x"}], "explain": True}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["outputs"] == [{**answer, "attributions": None, "explanation_unavailable": REMOTE}]


def test_a_span_model_answers_with_no_explanation(tiny_qa_registered_model, annotator):
    body = {"inputs": [{"context": "Paris is in France.", "question": "Where is Paris?"}], "explain": True}
    response = api(annotator).post(url(tiny_qa_registered_model), body, format="json")
    assert response.status_code == 200, response.json()
    [output] = response.json()["outputs"]
    assert "answer" in output
    assert output["attributions"] is None and output["explanation_unavailable"] == SPAN


def test_the_schema_describes_explain(client):
    schema = client.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    assert components["PredictRequest"]["properties"]["explain"]["type"] == "boolean"
    assert "explain" not in components["PredictRequest"].get("required", [])
    output = components["PredictResponse"]["properties"]["outputs"]["items"]["oneOf"][0]
    attributions = output["properties"]["attributions"]
    assert attributions["nullable"] is True
    assert attributions["items"]["required"] == ["token", "start", "end", "score", "field"]
    examples = schema["paths"]["/api/models/{id}/predict/"]["post"]["responses"]["200"]["content"]
    explained = examples["application/json"]["examples"]["AnExplainedAnswer(explain:True)"]["value"]
    [answer] = explained["outputs"]
    # the documented example itself satisfies completeness: 0.10 + 0.24 + 1.10 + 0.31 = 1.49 - (-0.26)
    assert sum(a["score"] for a in answer["attributions"]) == pytest.approx(answer["attribution_sum"])
    assert answer["attribution_sum"] == pytest.approx(answer["logit_input"] - answer["logit_baseline"])
