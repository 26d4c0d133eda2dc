"""Examples through the API: create (server verdict, config-derived body), list filters, detail,
retract, flag, and the bad-input cases (400 with field messages, never 500)."""

from __future__ import annotations

import json

import pytest

from annotation.models import Example
from tasks.models import Context, Task
from tasks.services import close_round, ensure_round, set_current_round
from tests.factories.annotation import make_example

pytestmark = pytest.mark.django_db

CREATE = "/api/tasks/hate-speech/examples/"


def post(client, url, body):
    return client.post(url, body, format="json")


def test_create_decides_model_wrong_on_the_server(api, annotator, rule_model):
    """The stand-in labels 'hateful' when the text contains 'hate' (tests/helpers/fakes.py)."""
    fooled = post(api(annotator), CREATE, {"statement": "I hate Mondays 😩", "label": "not-hateful"})
    assert fooled.status_code == 201
    body = fooled.json()
    assert body["round"] == 1 and body["status"] == "pending" and body["model_wrong"] is True
    assert body["model_outputs"] == [
        {
            "model": rule_model.pk,
            "model_name": "stand-in",
            "status": "ok",
            "runtime": "torch",
            "label": "hateful",
            "probabilities": {"hateful": 0.875, "not-hateful": 0.125},
        }
    ]
    assert fooled["Location"] == f"/api/examples/{body['id']}/"
    not_fooled = post(api(annotator), CREATE, {"statement": "I hate them all", "label": "hateful"}).json()
    assert not_fooled["model_wrong"] is False
    assert Example.objects.get(pk=body["id"]).model_wrong is True


def test_an_anonymous_target_is_named_as_the_page_names_it(api, annotator, rule_model, client):
    """The create page says "Anonymous model" for an anonymous target; the API's model_outputs said its
    name."""
    rule_model.is_anonymous = True
    rule_model.save(update_fields=["is_anonymous"])
    body = post(api(annotator), CREATE, {"statement": "I hate Mondays", "label": "not-hateful"}).json()
    assert [row["model_name"] for row in body["model_outputs"]] == ["Anonymous model"]
    assert api(annotator).get(f"/api/examples/{body['id']}/").json()["model_outputs"][0]["model_name"] == (
        "Anonymous model"
    )
    assert "stand-in" not in json.dumps(body)


def test_client_cannot_set_model_wrong(api, annotator, rule_model):
    response = post(api(annotator), CREATE, {"statement": "hello", "label": "hateful", "model_wrong": True})
    assert response.status_code == 400
    assert "Unknown field" in response.json()["model_wrong"][0]
    assert not Example.objects.exists()


def test_text_is_kept_exactly_except_crlf(api, annotator, rule_model):
    text = "שלום 👩🏽‍🚀\r\nline two\u200f\ttab"
    body = post(
        api(annotator), CREATE, {"statement": text, "label": "hateful", "explanation": "why\r\n"}
    ).json()
    stored = Example.objects.get(pk=body["id"])
    assert stored.inputs == {"statement": "שלום 👩🏽‍🚀\nline two\u200f\ttab"}
    assert stored.explanation == "why\n"
    assert body["inputs"] == stored.inputs


def test_metadata_is_stored(api, annotator, rule_model):
    body = post(
        api(annotator), CREATE, {"statement": "x y", "label": "hateful", "metadata": {"tool": "nb", "n": [1]}}
    )
    assert Example.objects.get(pk=body.json()["id"]).metadata == {"tool": "nb", "n": [1]}


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"label": "hateful"}, "statement", "This field is required."),
        ({"statement": "   ", "label": "hateful"}, "statement", "Statement is required"),
        (
            {"statement": "x" * 10_000, "label": "hateful"},
            "statement",
            "too long: 10,000 characters, at most 2,000",
        ),
        ({"statement": "a\x00b", "label": "hateful"}, "statement", "Null characters are not allowed."),
        ({"statement": "a\x07b", "label": "hateful"}, "statement", "control character U+0007"),
        ({"statement": 12, "label": "hateful"}, "statement", "Must be text"),
        ({"statement": ["a"], "label": "hateful"}, "statement", "Must be text"),
        ({"statement": "ok"}, "label", "This field is required."),
        ({"statement": "ok", "label": "spam"}, "label", "Choose one of: hateful, not-hateful."),
        # A task without contexts says so, whatever the value's type (not "Must be a JSON integer").
        ({"statement": "ok", "label": "hateful", "context": 3}, "context", "no contexts"),
        ({"statement": "ok", "label": "hateful", "context": "3"}, "context", "no contexts"),
        ({"statement": "ok", "label": "hateful", "context": True}, "context", "no contexts"),
        ({"statement": "ok", "label": "hateful", "context": 2**70}, "context", "no contexts"),
        (
            {"statement": "ok", "label": "hateful", "colour": "red"},
            "colour",
            "Unknown field; this task takes: statement, label, explanation, metadata.",
        ),
        ({"statement": "ok", "label": "hateful", "explanation": "e" * 2001}, "explanation", "too long"),
        ({"statement": "ok", "label": "hateful", "metadata": [1]}, "metadata", "JSON object"),
        ({"statement": "ok", "label": "hateful", "metadata": {"k": "\x00"}}, "metadata", "NUL"),
        ({"statement": "ok", "label": "hateful", "metadata": {"k": "x" * 10_001}}, "metadata", "Too large"),
    ],
)
def test_bad_bodies_get_field_messages(api, annotator, rule_model, body, field, message):
    response = post(api(annotator), CREATE, body)
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()[field])
    assert not Example.objects.exists()


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        ("{not json", "application/json"),
        ("[1, 2]", "application/json"),
        ('"text"', "application/json"),
        ("null", "application/json"),
        ("\x00", "application/json"),
        ("statement=x&label=hateful", "text/plain"),
    ],
)
def test_unreadable_bodies_are_4xx_json(api, annotator, rule_model, raw, content_type):
    response = api(annotator).post(CREATE, raw, content_type=content_type)
    assert response.status_code in (400, 415)
    assert response["Content-Type"] == "application/json"
    assert not Example.objects.exists()


def test_form_encoded_body_works_too(api, annotator, rule_model):
    response = api(annotator).post(CREATE, {"statement": "hello", "label": "hateful"})
    assert response.status_code == 201


def test_closed_round_is_409_and_nothing_stored(api, annotator, rule_model, hate_round):
    close_round(round_=hate_round)
    response = post(api(annotator), CREATE, {"statement": "hello", "label": "hateful"})
    assert response.status_code == 409 and "not collecting" in response.json()["detail"]


def test_crashing_model_keeps_the_example(api, annotator, crashing_model):
    body = post(api(annotator), CREATE, {"statement": "hello", "label": "hateful"}).json()
    assert body["prediction_status"] == "failed" and body["model_wrong"] is None
    assert body["model_outputs"] == [
        {
            "model": crashing_model.pk,
            "model_name": "crashing",
            "status": "failed",
            "runtime": "torch",
            "label": None,
            "probabilities": {},
        }
    ]


def test_context_task_needs_a_context_of_the_current_round(api, annotator):
    config = {
        "context_fields": [{"name": "premise", "type": "string"}],
        "input_fields": [{"name": "hypothesis", "type": "string"}],
        "target_field": {"name": "label", "type": "multiclass", "labels": ["entailment", "contradiction"]},
        "model_input_fields": ["premise", "hypothesis"],
        "model_wrong_rule": {"type": "exact_match"},
        "perf_metric": "accuracy",
    }
    task = Task.objects.create(slug="nli-mini", name="NLI", config=config)
    old = ensure_round(task=task, number=1)
    old_context = Context.objects.create(task=task, round=old, data={"premise": "old"})
    current = ensure_round(task=task, number=2)
    set_current_round(task=task, round_=current)
    context = Context.objects.create(task=task, round=current, data={"premise": "It rained."})
    url = "/api/tasks/nli-mini/examples/"
    missing = post(api(annotator), url, {"hypothesis": "h", "label": "entailment"})
    assert missing.status_code == 400 and "needs a context" in missing.json()["context"][0]
    stale = post(api(annotator), url, {"context": old_context.pk, "hypothesis": "h", "label": "entailment"})
    assert stale.status_code == 400 and "No such context" in stale.json()["context"][0]
    # The id is a JSON integer: "881" (text), 881.0 and true are refused, not read as 881 (or 1).
    for sent, kind in (
        (str(context.pk), "a string"),
        (float(context.pk), "a decimal number"),
        (True, "true or false"),
    ):
        refused = post(api(annotator), url, {"context": sent, "hypothesis": "h", "label": "entailment"})
        assert refused.status_code == 400
        assert refused.json() == {"context": [f"Must be a JSON integer (e.g. 12), not {kind}."]}
    assert not Example.objects.exists()
    made = post(
        api(annotator), url, {"context": context.pk, "hypothesis": "It is wet.", "label": "entailment"}
    )
    assert made.status_code == 201
    # A form-encoded body can only send text: there the id is taken as ASCII digits.
    as_form = api(annotator).post(
        url, {"context": str(context.pk), "hypothesis": "It is dry.", "label": "contradiction"}
    )
    assert as_form.status_code == 201 and as_form.json()["context"] == context.pk
    bad_form = api(annotator).post(
        url, {"context": "١", "hypothesis": "It is dry.", "label": "contradiction"}
    )
    assert bad_form.status_code == 400
    assert bad_form.json() == {"context": ["Must be a whole number written with the digits 0-9."]}
    body = made.json()
    assert body["context"] == context.pk and body["round"] == 2
    assert body["prediction_status"] == "none" and body["model_outputs"] == [] and body["model_wrong"] is None


@pytest.fixture
def qa_task():
    config = {
        "context_fields": [{"name": "passage", "type": "string"}],
        "input_fields": [{"name": "question", "type": "string"}],
        "target_field": {"name": "answer", "type": "context_span", "context_field": "passage"},
        "model_input_fields": ["passage", "question"],
        "model_wrong_rule": {"type": "string_f1", "threshold": 0.4},
        "perf_metric": "squad_f1",
    }
    task = Task.objects.create(slug="qa-mini", name="QA", config=config)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    return task


def test_span_task_body_from_config(api, annotator, qa_task):
    passage = "Ada wrote the notes. Ada was a mathematician."
    context = Context.objects.create(task=qa_task, round=qa_task.current_round, data={"passage": passage})
    url = "/api/tasks/qa-mini/examples/"
    given = post(
        api(annotator),
        url,
        {"context": context.pk, "question": "Who?", "answer": {"answer": "Ada", "answer_start": 21}},
    )
    assert given.status_code == 201
    assert given.json()["target"] == {"answer": "Ada", "answer_start": 21}
    located = post(
        api(annotator),
        url,
        {"context": context.pk, "question": "What?", "answer": {"answer": "mathematician"}},
    )
    assert located.status_code == 201
    assert located.json()["target"] == {
        "answer": "mathematician",
        "answer_start": passage.index("mathematician"),
    }
    # "Ada" occurs at 0 and 21: without an offset the server takes the first occurrence
    # (core.spans.resolve_answer).
    first = post(
        api(annotator), url, {"context": context.pk, "question": "Who?", "answer": {"answer": "Ada"}}
    )
    assert first.status_code == 201 and first.json()["target"] == {"answer": "Ada", "answer_start": 0}
    absent = post(
        api(annotator), url, {"context": context.pk, "question": "Who?", "answer": {"answer": "Bob"}}
    )
    assert absent.status_code == 400 and "does not occur" in absent.json()["answer"][0]
    wrong_offset = post(
        api(annotator),
        url,
        {"context": context.pk, "question": "Q", "answer": {"answer": "Ada", "answer_start": 3}},
    )
    assert wrong_offset.status_code == 400 and "answer" in wrong_offset.json()
    as_text = post(api(annotator), url, {"context": context.pk, "question": "Q", "answer": "Ada"})
    assert as_text.status_code == 400 and "answer" in as_text.json()
    offset_as_text = post(
        api(annotator),
        url,
        {"context": context.pk, "question": "Q", "answer": {"answer": "Ada", "answer_start": "21"}},
    )
    assert offset_as_text.status_code == 400
    assert offset_as_text.json() == {
        "answer": {"answer_start": ["Must be a JSON integer (e.g. 12), not a string."]}
    }


def test_list_filters_count_by_hand(api, hate_task, hate_round, annotator, validator, owner):
    """annotator: A (fooling, pending), B (not fooling, settled correct); validator: C (fooling)."""
    a = make_example(hate_round, annotator, model_wrong=True)
    b = make_example(hate_round, annotator, model_wrong=False, status=Example.Status.VALIDATED_CORRECT)
    c = make_example(hate_round, validator, model_wrong=True)
    ids = lambda r: sorted(row["id"] for row in r.json()["results"])  # noqa: E731
    mine = api(annotator)
    assert ids(mine.get(CREATE)) == sorted([a.pk, b.pk])  # others' examples are invisible
    assert ids(mine.get(CREATE + "?model_wrong=true")) == [a.pk]
    assert ids(mine.get(CREATE + "?status=validated_correct")) == [b.pk]
    assert ids(mine.get(CREATE + "?round=2")) == []
    boss = api(owner)
    assert ids(boss.get(CREATE)) == sorted([a.pk, b.pk, c.pk])
    assert ids(boss.get(CREATE + "?model_wrong=true&round=1")) == sorted([a.pk, c.pk])
    assert ids(boss.get(CREATE + "?mine=true")) == []
    assert ids(api(validator).get(CREATE + "?mine=true")) == [c.pk]
    assert mine.get(CREATE + "?status=bogus").status_code == 400
    assert mine.get(CREATE + "?round=1.5").status_code == 400
    assert mine.get(CREATE + "?round=99999999999999999999").status_code == 400
    # "1.0" and Unicode digits were read as round 1 by django-filter's NumberFilter; ASCII digits only now.
    assert mine.get(CREATE + "?round=1.0").status_code == 400
    assert mine.get(CREATE + "?round=%D9%A1").json() == {
        "round": ["A whole number from 1 to 2147483647, written with the digits 0-9."]
    }
    assert mine.get(CREATE + "?rnd=1").json() == {
        "rnd": [
            "Unknown parameter; this list takes: round, status, model_wrong, mine, page, page_size, format."
        ]
    }
    # A value outside a choice filter's choices: the message lists them.
    assert mine.get(CREATE + "?status=bogus").json() == {
        "status": [
            "'bogus' is not a choice here; choose one of: pending, validated_correct, validated_incorrect, "
            "flagged."
        ]
    }
    # A parameter given twice is refused, not read as its last value (which alone would be valid here).
    assert mine.get(CREATE + "?round=abc&round=1").json() == {
        "round": ["Give this parameter once; it was given 2 times."]
    }
    assert mine.get(CREATE + "?round=1&round=1&round=1").status_code == 400
    assert mine.get(CREATE + "?page=999").status_code == 404
    page = mine.get(CREATE + "?page_size=1").json()
    assert page["count"] == 2 and len(page["results"]) == 1 and page["next"]


def test_owner_never_sees_the_annotators_identity(api, hate_round, annotator, owner):
    example = make_example(hate_round, annotator, model_wrong=True)
    response = api(owner).get(f"/api/examples/{example.pk}/")
    text = response.content.decode()
    assert response.status_code == 200
    assert "annotator@example.org" not in text and '"annotator"' in text
    assert json.loads(text)["annotator"].startswith("anon-")
    assert json.loads(text)["mine"] is False
    assert str(annotator.username) not in json.loads(text)["annotator"]


def test_retract_and_flag(api, hate_round, annotator, owner):
    example = make_example(hate_round, annotator, model_wrong=True)
    flagged = post(api(annotator), f"/api/examples/{example.pk}/flag/", {"reason": "typo\r\n"})
    assert flagged.status_code == 200
    assert flagged.json()["is_flagged_by_annotator"] is True and flagged.json()["flag_reason"] == "typo\n"
    again = post(api(annotator), f"/api/examples/{example.pk}/flag/", {})
    assert again.status_code == 409 and "already flagged" in again.json()["detail"]
    retracted = api(annotator).post(f"/api/examples/{example.pk}/retract/")
    assert retracted.status_code == 200 and retracted.json()["is_retracted"] is True
    assert api(annotator).post(f"/api/examples/{example.pk}/retract/").status_code == 200  # idempotent
    other = make_example(hate_round, annotator, model_wrong=True)
    too_long = post(api(annotator), f"/api/examples/{other.pk}/flag/", {"reason": "r" * 2001})
    assert too_long.status_code == 400 and "too long" in too_long.json()["reason"][0]
    assert api(owner).post(f"/api/examples/{other.pk}/retract/").status_code == 403
    assert not Example.objects.get(pk=other.pk).is_retracted


def test_optional_context_may_be_left_out_as_on_the_create_page(api, annotator):
    """Sentiment-like config: the prompt context is optional, so an example may come without one."""
    config = {
        "context_fields": [{"name": "prompt", "type": "string", "optional": True}],
        "input_fields": [{"name": "statement", "type": "string"}],
        "target_field": {
            "name": "label",
            "type": "multiclass",
            "labels": ["positive", "negative", "neutral"],
        },
        "model_wrong_rule": {"type": "exact_match"},
        "perf_metric": "macro_f1",
    }
    task = Task.objects.create(slug="senti-mini", name="Senti", config=config)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    context = Context.objects.create(task=task, round=round_, data={"prompt": "The food was fine."})
    url = "/api/tasks/senti-mini/examples/"
    without = post(api(annotator), url, {"statement": "Meh. Fine I guess", "label": "neutral"})
    assert without.status_code == 201 and without.json()["context"] is None
    as_null = post(api(annotator), url, {"context": None, "statement": "Meh again", "label": "neutral"})
    assert as_null.status_code == 201 and as_null.json()["context"] is None
    given = post(api(annotator), url, {"context": context.pk, "statement": "Loved it", "label": "positive"})
    assert given.status_code == 201 and given.json()["context"] == context.pk
    unknown = post(api(annotator), url, {"context": 10**9, "statement": "x", "label": "neutral"})
    assert unknown.status_code == 400 and "No such context" in unknown.json()["context"][0]
    # A task with contexts takes the id as a JSON integer only, within the ids' range.
    as_text = post(api(annotator), url, {"context": str(context.pk), "statement": "x", "label": "neutral"})
    assert as_text.json() == {"context": ["Must be a JSON integer (e.g. 12), not a string."]}
    huge = post(api(annotator), url, {"context": 2**70, "statement": "x", "label": "neutral"})
    assert huge.status_code == 400 and "less than or equal" in huge.json()["context"][0]


def test_an_unknown_field_is_reported_with_the_other_fields_errors(api, annotator, rule_model):
    """One 400 names every mistake, so the client fixes its body once."""
    response = post(api(annotator), CREATE, {"statement": "x y z", "label": "nope", "foo": 1, "context": "3"})
    assert response.status_code == 400
    assert response.json() == {
        "label": ["Choose one of: hateful, not-hateful."],
        "context": ["This task has no contexts; leave context out."],
        "foo": ["Unknown field; this task takes: statement, label, explanation, metadata."],
    }
    assert not Example.objects.exists()


def test_a_task_without_contexts_takes_a_null_context(api, annotator, rule_model):
    response = post(api(annotator), CREATE, {"context": None, "statement": "hello", "label": "hateful"})
    assert response.status_code == 201 and response.json()["context"] is None
