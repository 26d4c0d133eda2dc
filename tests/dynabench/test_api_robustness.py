"""Robustness of the API: Idempotency-Key on the real endpoints, 413 for oversized bodies, 429 from the
example_create throttle."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from annotation.models import Example
from core.models import IdempotencyRecord
from validation.models import Validation

pytestmark = pytest.mark.django_db

CREATE = "/api/tasks/hate-speech/examples/"


def test_retried_create_with_the_same_key_makes_one_example(api, annotator, rule_model):
    client = api(annotator)
    body = {"statement": "I hate queues", "label": "not-hateful"}
    first = client.post(CREATE, body, format="json", HTTP_IDEMPOTENCY_KEY="3f1e-create-1")
    second = client.post(CREATE, body, format="json", HTTP_IDEMPOTENCY_KEY="3f1e-create-1")
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second["Idempotent-Replayed"] == "true"
    assert Example.objects.count() == 1
    other = client.post(
        CREATE, {**body, "statement": "edited"}, format="json", HTTP_IDEMPOTENCY_KEY="3f1e-create-1"
    )
    assert other.status_code == 422 and "different request" in other.json()["detail"]
    assert Example.objects.count() == 1
    assert client.post(CREATE, body, format="json", HTTP_IDEMPOTENCY_KEY="3f1e-create-2").status_code == 201
    assert Example.objects.count() == 2


def test_create_in_progress_with_the_same_key_is_409(api, annotator, rule_model):
    """A pre-inserted in-progress record: the first request with this key has not finished."""
    client = api(annotator)
    body = {"statement": "hello", "label": "hateful"}
    client.post(CREATE, body, format="json", HTTP_IDEMPOTENCY_KEY="busy")
    IdempotencyRecord.objects.filter(key="busy").update(state="in_progress", response_status=None)
    response = client.post(CREATE, body, format="json", HTTP_IDEMPOTENCY_KEY="busy")
    assert response.status_code == 409
    assert Example.objects.count() == 1


def test_invalid_body_with_a_key_is_not_stored(api, annotator, rule_model):
    client = api(annotator)
    bad = client.post(CREATE, {"statement": "", "label": "hateful"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert bad.status_code == 400
    fixed = client.post(
        CREATE, {"statement": "", "label": "hateful"}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert fixed.status_code == 400 and not IdempotencyRecord.objects.exists()


def test_retried_verdict_with_the_same_key_is_one_validation(api, hate_round, annotator, validator):
    from tests.factories.annotation import make_example

    example = make_example(hate_round, annotator, model_wrong=True)
    assert (
        api(validator).get("/api/tasks/hate-speech/validations/next/").json()["example"]["id"] == example.pk
    )
    url = f"/api/examples/{example.pk}/validations/"
    first = api(validator).post(url, {"verdict": "correct"}, format="json", HTTP_IDEMPOTENCY_KEY="v-1")
    second = api(validator).post(url, {"verdict": "correct"}, format="json", HTTP_IDEMPOTENCY_KEY="v-1")
    assert first.status_code == second.status_code == 201 and first.json() == second.json()
    assert Validation.objects.count() == 1
    third = api(validator).post(url, {"verdict": "correct"}, format="json")  # no key: a real second try
    assert third.status_code == 409


def test_oversized_json_body_is_413(api, annotator, rule_model, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 5_000
    body = {"statement": "x" * 6_000, "label": "hateful"}
    response = api(annotator).post(CREATE, body, format="json")
    assert response.status_code == 413
    assert response.json()["detail"].startswith("The request body is too large")
    assert not Example.objects.exists()


def test_oversized_form_body_is_413_json(api, annotator, rule_model, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 5_000
    response = api(annotator).post(CREATE, {"statement": "x" * 6_000, "label": "hateful"}, format="multipart")
    assert response.status_code == 413 and response["Content-Type"] == "application/json"


def test_ten_thousand_characters_under_the_limit_is_a_400_not_413(api, annotator, rule_model):
    response = api(annotator).post(CREATE, {"statement": "é" * 10_000, "label": "hateful"}, format="json")
    assert response.status_code == 400 and "10,000 characters" in response.json()["statement"][0]


def test_example_creation_is_throttled(api, annotator, validator, rule_model, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"example_create": "2/min"},
    }
    cache.clear()
    client = api(annotator)
    statuses = [
        client.post(CREATE, {"statement": f"text {i}", "label": "hateful"}, format="json").status_code
        for i in range(3)
    ]
    assert statuses == [201, 201, 429]
    refused = client.post(CREATE, {"statement": "again", "label": "hateful"}, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "throttled" in refused.json()["detail"].lower()
    assert Example.objects.count() == 2
    assert client.get(CREATE).status_code == 200  # reading is not throttled
    assert (
        api(validator).post(CREATE, {"statement": "mine", "label": "hateful"}, format="json").status_code
        == 201
    )


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/tasks/?page_size=0", "page_size"),
        ("/api/tasks/?page_size=201", "page_size"),
        ("/api/tasks/?page_size=abc", "page_size"),
        ("/api/tasks/?page_size=" + "9" * 5000, "page_size"),  # int() would raise past 4,300 digits
        ("/api/tasks/?page_size=²", "page_size"),
        ("/api/tasks/hate-speech/examples/?model_wrong=maybe", "model_wrong"),
        ("/api/tasks/hate-speech/examples/?mine=1", "mine"),
        ("/api/tasks/hate-speech/rounds/?is_closed=yes", "is_closed"),
        ("/api/tasks/hate-speech/validations/next/?round=", "round"),
        ("/api/tasks/hate-speech/contexts/next/?strategy=", "strategy"),
    ],
)
def test_malformed_query_parameters_are_400_not_ignored(api, annotator, hate_round, url, field):
    response = api(annotator).get(url)
    assert response.status_code == 400
    assert field in response.json()


def test_page_size_within_bounds_is_used(api, hate_round):
    assert api(None).get("/api/tasks/?page_size=200").status_code == 200


def test_multipart_without_boundary_is_400_json(api, annotator, rule_model):
    response = api(annotator).post(CREATE, b"--x\r\n", content_type="multipart/form-data")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    "url",
    [
        "/api/tasks/",
        "/api/tasks/hate-speech/",
        "/api/tasks/hate-speech/rounds/",
        "/api/tasks/hate-speech/rounds/1/",
        "/api/tasks/hate-speech/contexts/next/",
        CREATE,
        "/api/examples/{id}/",
        "/api/examples/{id}/retract/",
        "/api/examples/{id}/flag/",
        "/api/examples/{id}/validations/",
        "/api/tasks/hate-speech/validations/next/",
    ],
)
@pytest.mark.parametrize("method", ["options", "head", "put", "patch", "delete"])
def test_other_methods_never_500(api, annotator, hate_round, url, method):
    from tests.factories.annotation import make_example

    example = make_example(hate_round, annotator, model_wrong=True)
    response = getattr(api(annotator), method)(url.format(id=example.pk))
    assert response.status_code < 500
    if method == "options":
        assert response.status_code == 200
    elif method != "head":
        assert response.status_code in (404, 405)


@pytest.mark.parametrize(
    "body",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"statement": "x", "label": "hateful", "metadata": ' + '{"a": ' * 5_000 + "1" + "}" * 5_001,
    ],
)
def test_json_nested_too_deeply_is_a_400_not_a_500(api, annotator, hate_round, body):
    response = api(annotator).generic(
        "POST", CREATE, body.encode(), content_type="application/json", HTTP_IDEMPOTENCY_KEY="deep-1"
    )
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


def test_unknown_body_fields_are_refused_not_dropped(api, annotator, validator, hate_round):
    from tests.factories.annotation import make_example
    from tests.factories.validation import serve

    example = make_example(hate_round, annotator, model_wrong=True)
    serve(example, validator)  # an id not served to them would be a 404 before the body is read
    verdict = api(validator).post(
        f"/api/examples/{example.pk}/validations/", {"verdict": "correct", "zzz": 1}, format="json"
    )
    assert verdict.status_code == 400
    assert verdict.json() == {
        "zzz": [
            "Unknown field; this takes: verdict, corrected_label, reason, rubric, given_target, owner_mode."
        ]
    }
    assert not Validation.objects.filter(example=example).exists()
    flag = api(annotator).post(
        f"/api/examples/{example.pk}/flag/", {"reason": "typo", "why": "x"}, format="json"
    )
    assert flag.status_code == 400 and "why" in flag.json()


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"statement": "x", "label": "hateful", "metadata": {"note": "a\\ud800b"}}', "metadata.note"),
        ('{"statement": "x", "label": "hateful", "metadata": {"\\udfff": 1}}', "a key of metadata"),
        ('{"statement": "x", "label": "hateful", "unknown\\ud800": 1}', "a key of the body"),
        ('{"statement": "x", "label": "hateful", "metadata": {"list": [1, "\\ud83d"]}}', "metadata.list[1]"),
        ('{"statement": "\\udc00", "label": "hateful"}', "statement"),
    ],
)
def test_a_lone_surrogate_anywhere_in_a_json_body_is_a_400_naming_where(
    api, annotator, hate_round, body, where
):
    response = api(annotator).generic("POST", CREATE, body.encode(), content_type="application/json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith(f"JSON parse error - {where} holds a lone surrogate")
    assert not Example.objects.exists()


def test_a_surrogate_pair_is_one_character_and_stays_allowed(api, annotator, rule_model, hate_round):
    body = '{"statement": "they \\ud83d\\udc0d", "label": "hateful", "metadata": {"\\ud83d\\ude42": "ok"}}'
    response = api(annotator).generic("POST", CREATE, body.encode(), content_type="application/json")
    assert response.status_code == 201, response.json()
    example = Example.objects.get()
    assert example.inputs == {"statement": "they 🐍"} and example.metadata == {"🙂": "ok"}


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"note": "a\x85b"}, "A text contains the control character U+0085; remove it and send again."),
        ({"k\x9b": 1}, "A key contains the control character U+009B; remove it and send again."),
        (
            {"list": ["ok", "bell\x07"]},
            "A text contains the control character U+0007; remove it and send again.",
        ),
        ({"note": "ab\u202ecd"}, "A text contains U+202E RIGHT-TO-LEFT OVERRIDE"),
        ({"note": "a\x00b"}, "Text cannot contain the NUL character (U+0000)."),
    ],
)
def test_metadata_refuses_the_control_characters_text_fields_refuse(
    api, annotator, hate_round, metadata, message
):
    body = {"statement": "x", "label": "hateful", "metadata": metadata}
    response = api(annotator).post(CREATE, body, format="json")
    assert response.status_code == 400
    [got] = response.json()["metadata"]
    assert got.startswith(message)
    assert not Example.objects.exists()


def test_metadata_keeps_line_breaks_tabs_emoji_and_right_to_left_text(api, annotator, rule_model, hate_round):
    metadata = {"note": "line one\nline\ttwo 🙂", "שלום": "مرحبا \u200f"}
    response = api(annotator).post(
        CREATE, {"statement": "x", "label": "hateful", "metadata": metadata}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert Example.objects.get().metadata == metadata


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/api/tasks/hate-speech/leaderboard/?round=1&round=2", "round"),
        ("/api/tasks/hate-speech/leaderboard/?metric_weights=perf:1&metric_weights=perf:0", "metric_weights"),
        ("/api/tasks/hate-speech/annotators/?round=1&round=2", "round"),
        ("/api/tasks/hate-speech/contexts/next/?strategy=a&strategy=b", "strategy"),
        ("/api/models/?format=json&format=api", "format"),
    ],
)
def test_a_query_parameter_given_twice_is_a_json_400_on_every_endpoint(api, annotator, hate_task, path, name):
    """Django would hand the view the last value and drop the first without a word."""
    response = api(annotator).get(path)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {name: ["Give this parameter once; it was given 2 times."]}
    # Written as the API's views write JSON (DRF's renderer: compact), though no view ran.
    assert response.content.decode() == f'{{"{name}":["Give this parameter once; it was given 2 times."]}}'


def test_the_same_endpoints_answer_with_each_parameter_once(api, annotator, hate_task):
    assert api(annotator).get("/api/tasks/hate-speech/annotators/").status_code == 200
    assert api(annotator).get("/api/models/?format=json").status_code == 200
