"""Creating examples (annotation.services.create_example, and the create page and API for the model-wrong
verdict): validation, server-side model-wrong, idempotency (a form token sent again with other text is
refused, not dropped), a round closed or replaced while the model answers, failures and the
retry_predictions command that scores them later."""

from __future__ import annotations

import threading
import uuid
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Example, Prediction
from annotation.services import ExampleError, TokenAlreadyUsed, create_example
from models_registry import inference
from tasks.models import Context
from tasks.services import close_round, ensure_round, set_current_round
from tests.factories.models_registry import make_stand_in
from tests.helpers.fakes import crashing_predict, rule_label, rule_predict

FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # four emoji joined by three ZWJ: 7 code points, 11 UTF-16 units


def _create(task, user, statement, label="hateful", **kwargs):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label, **kwargs)


def _errors(task, user, inputs, target="hateful") -> dict:
    with pytest.raises(ExampleError) as info:
        create_example(task=task, annotator=user, inputs=inputs, target=target)
    return info.value.errors


def test_tiny_model_scores_the_example_on_the_server(hate_task, annotator, tiny_registered_model):
    statement = "they are not our friends"
    expected = inference.predict(tiny_registered_model, [{"statement": statement}])[0]

    example, created = _create(hate_task, annotator, statement, "hateful", time_taken_ms=4200)

    assert created is True
    example.refresh_from_db()
    assert example.round == hate_task.current_round
    assert example.inputs == {"statement": statement}
    assert example.target == "hateful"
    assert example.source == Example.Source.CREATED
    assert example.time_taken_ms == 4200
    assert example.prediction_status == Example.PredictionStatus.OK
    [prediction] = example.predictions.all()
    assert prediction.model == tiny_registered_model
    assert prediction.status == Prediction.Status.OK
    assert prediction.label == expected["label"]
    assert set(prediction.output["probabilities"]) == {"hateful", "not-hateful"}
    assert sum(prediction.output["probabilities"].values()) == pytest.approx(1.0)
    assert prediction.model_wrong is (expected["label"] != "hateful")
    assert example.model_wrong is prediction.model_wrong


@pytest.mark.parametrize(
    ("statement", "target", "model_wrong"),
    [
        ("I hate them all", "hateful", False),  # the stand-in says hateful: right
        ("I hate them all", "not-hateful", True),  # annotator intends not-hateful: the model is fooled
        ("they should go back home", "hateful", True),  # no 'hate' -> not-hateful: fooled
        ("hello world", "not-hateful", False),
    ],
)
def test_model_wrong_follows_the_exact_match_rule(
    hate_task, annotator, rule_model, statement, target, model_wrong
):
    example, _ = _create(hate_task, annotator, statement, target)
    assert example.model_wrong is model_wrong
    assert example.predictions.get().model_wrong is model_wrong


def test_the_client_cannot_set_model_wrong(client, api, annotator, password, rule_model):
    """``model_wrong`` is the server's verdict (the target's label against the model's): a create-page
    POST claiming the opposite is stored with the server's verdict, and an API POST carrying the field
    is refused and stores nothing, whether its body is JSON or form-encoded."""
    create_page = reverse("annotation:create", args=[rule_model.task.slug])
    api_create = f"/api/tasks/{rule_model.task.slug}/examples/"
    client.login(username=annotator.username, password=password)
    cases = [  # the stand-in says hateful iff the text contains "hate"
        ("I hate them all", "hateful"),  # right: the server says not fooled
        ("I hate them all", "not-hateful"),  # fooled
        ("hello world", "hateful"),  # fooled
        ("hello world", "not-hateful"),  # right
    ]
    for n, (statement, target) in enumerate(cases):
        server = rule_label(statement) != target
        claim = not server

        page = client.post(
            create_page,
            {
                "statement": f"{statement} {n}",
                "label": target,
                "client_token": str(uuid.uuid4()),
                "model_wrong": "true" if claim else "false",
            },
        )
        assert page.status_code == 302, page.content[:300]
        example = Example.objects.get(inputs={"statement": f"{statement} {n}"})
        assert example.model_wrong is server
        assert example.predictions.get().model_wrong is server

        stored = Example.objects.count()
        for fmt in ("json", "multipart"):
            body = {"statement": f"{statement} {n} {fmt}", "label": target, "model_wrong": claim}
            refused = api(annotator).post(api_create, body, format=fmt)
            assert refused.status_code == 400, (fmt, refused.content[:300])
            assert "Unknown field" in refused.json()["model_wrong"][0]
        assert Example.objects.count() == stored

        del body["model_wrong"]
        accepted = api(annotator).post(api_create, body, format="json")
        assert accepted.status_code == 201 and accepted.json()["model_wrong"] is server
        assert Example.objects.get(pk=accepted.json()["id"]).model_wrong is server


@pytest.mark.parametrize(("rule", "expected"), [("any", True), ("all", False), ("majority", False)])
def test_ensemble_rule_combines_per_model_verdicts(
    hate_task, hate_round, annotator, monkeypatch, rule, expected
):
    """Two models: the first follows the rule (right on 'I hate you' as hateful), the second always says
    not-hateful (wrong). One of two wrong: any -> fooled, all -> not, majority (strict) -> not."""
    from models_registry.round_targets import set_round_targets

    first = make_stand_in(hate_task, hate_round, "first")
    second = make_stand_in(hate_task, hate_round, "second")
    set_round_targets(round=hate_round, models=[first, second])

    def predict(model, inputs):
        if model.pk == second.pk:
            return [{"label": "not-hateful", "probabilities": {"hateful": 0.2, "not-hateful": 0.8}}]
        return rule_predict(model, inputs)

    monkeypatch.setattr(inference, "predict", predict)
    hate_task.config = {**hate_task.config, "ensemble_rule": rule}
    hate_task.save(update_fields=["config"])

    example, _ = _create(hate_task, annotator, "I hate you", "hateful")

    assert [p.model_wrong for p in example.predictions.order_by("id")] == [False, True]
    assert example.model_wrong is expected


def test_no_target_model_stores_the_example_unscored(hate_task, hate_round, annotator):
    example, created = _create(hate_task, annotator, "hello world", "not-hateful")
    assert created
    assert example.prediction_status == Example.PredictionStatus.NONE
    assert example.model_wrong is None
    assert example.predictions.count() == 0


def test_same_client_token_returns_the_same_example_and_runs_the_model_once(
    hate_task, annotator, rule_model, monkeypatch
):
    calls = []

    def counting(model, inputs):
        calls.append(inputs)
        return rule_predict(model, inputs)

    monkeypatch.setattr(inference, "predict", counting)
    token = uuid.uuid4()
    first, created_first = _create(hate_task, annotator, "I hate you", client_token=token)
    second, created_second = _create(hate_task, annotator, "I hate you", client_token=str(token))

    assert (created_first, created_second) == (True, False)
    assert first.pk == second.pk
    assert Example.objects.count() == 1
    assert Prediction.objects.count() == 1
    assert len(calls) == 1


def test_same_token_from_another_user_is_another_example(hate_task, annotator, validator, rule_model):
    token = uuid.uuid4()
    a, _ = _create(hate_task, annotator, "hello", client_token=token)
    b, created = _create(hate_task, validator, "hello", client_token=token)
    assert created and a.pk != b.pk


def test_malformed_token_is_an_error(hate_task, annotator, rule_model):
    with pytest.raises(ExampleError):
        _create(hate_task, annotator, "hello", client_token="not-a-uuid")


@pytest.mark.django_db(transaction=True)
def test_two_threads_with_the_same_token_make_one_row(hate_task, hate_round, annotator, monkeypatch):
    """Both submissions pass the 'already stored?' lookup before either inserts (a barrier inside the
    model call holds them together); the unique constraint lets one insert through and the other
    returns the winner."""
    make_stand_in(hate_task, hate_round)
    barrier = threading.Barrier(2, timeout=10)

    def predict(model, inputs):
        barrier.wait()
        return rule_predict(model, inputs)

    monkeypatch.setattr(inference, "predict", predict)
    token = uuid.uuid4()
    results, failures = [], []

    def submit():
        try:
            results.append(_create(hate_task, annotator, "I hate you", "not-hateful", client_token=token))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert failures == []
    assert sorted(created for _, created in results) == [False, True]
    assert len({example.pk for example, _ in results}) == 1
    assert Example.objects.filter(annotator=annotator, client_token=token).count() == 1
    assert Prediction.objects.count() == 1
    assert Example.objects.get().model_wrong is True


def test_same_token_same_text_is_the_same_example(hate_task, annotator, rule_model):
    token = uuid.uuid4()
    first, _ = _create(hate_task, annotator, "I hate you\r\n", client_token=token)
    second, created = _create(hate_task, annotator, "I hate you\n", client_token=token)  # CRLF normalised
    assert (second.pk, created) == (first.pk, False)


@pytest.mark.parametrize(
    ("statement", "label"),
    [("I hate you all", "hateful"), ("I hate you", "not-hateful")],
    ids=["other-text", "other-target"],
)
def test_same_token_other_inputs_or_target_is_refused_not_dropped(
    hate_task, annotator, rule_model, statement, label
):
    token = uuid.uuid4()
    first, _ = _create(hate_task, annotator, "I hate you", "hateful", client_token=token)
    with pytest.raises(TokenAlreadyUsed) as info:
        _create(hate_task, annotator, statement, label, client_token=token)
    assert info.value.example == first
    assert info.value.errors == {
        "__all__": [
            f"This form was already sent as example #{first.pk}; your new text was not saved yet "
            "— send it again."
        ]
    }
    assert Example.objects.count() == 1
    first.refresh_from_db()
    assert (first.inputs, first.target) == ({"statement": "I hate you"}, "hateful")


def test_same_token_with_invalid_new_text_reports_both(hate_task, annotator, rule_model):
    token = uuid.uuid4()
    first, _ = _create(hate_task, annotator, "I hate you", client_token=token)
    with pytest.raises(TokenAlreadyUsed) as info:
        _create(hate_task, annotator, "\u200b", client_token=token)
    assert f"#{first.pk}" in info.value.errors["__all__"][0]
    assert "write something visible" in info.value.errors["statement"][0]


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("", "required"),
        ("   \n\t  \r\n ", "required"),
        ("x" * 2001, "too long: 2,001 characters, at most 2,000"),
        (FAMILY * 285 + "abcdef", "too long: 2,001 characters"),
    ],
    ids=["empty", "whitespace-only", "2001-chars", "2001-code-points-with-zwj-emoji"],
)
def test_bad_statements_are_refused_with_a_message(hate_task, annotator, rule_model, statement, message):
    errors = _errors(hate_task, annotator, {"statement": statement})
    assert list(errors) == ["statement"]
    assert message in errors["statement"][0]
    assert Example.objects.count() == 0


@pytest.mark.parametrize(
    "statement",
    ["x" * 2000, FAMILY * 285 + "abcde", "\r\n".join(["a"] * 1000)],
    ids=["2000-chars", "2000-code-points-with-zwj-emoji", "crlf-counted-after-normalising"],
)
def test_statements_of_exactly_the_limit_are_accepted(hate_task, annotator, rule_model, statement):
    """The ZWJ family is 7 code points, so 285 of them plus 5 letters is exactly 2,000 (3,140 UTF-16
    units). 1,000 'a' joined by CRLF is 2,998 characters before and 1,999 after normalising to LF."""
    example, created = _create(hate_task, annotator, statement)
    assert created
    assert len(example.inputs["statement"]) <= 2000


def test_missing_field_and_unknown_label_are_both_reported(hate_task, annotator, rule_model):
    errors = _errors(hate_task, annotator, {}, target="spam")
    assert set(errors) == {"statement", "label"}
    assert errors["label"] == ["Choose one of: hateful, not-hateful."]


def test_unknown_input_field_is_refused(hate_task, annotator, rule_model):
    errors = _errors(hate_task, annotator, {"statement": "hello", "model_wrong": "false"})
    assert errors["__all__"] == ["Unknown input field 'model_wrong'."]


def test_text_is_kept_exactly_except_crlf(hate_task, annotator, rule_model):
    statement = "مرحبا بالعالم\r\nשלום 👋🏽 e\u0301 " + FAMILY + "\rend"
    example, _ = _create(hate_task, annotator, statement, "not-hateful")
    example.refresh_from_db()
    assert example.inputs["statement"] == "مرحبا بالعالم\nשלום 👋🏽 e\u0301 " + FAMILY + "\nend"


def test_closed_round_accepts_no_examples(hate_task, hate_round, annotator, rule_model):
    close_round(round_=hate_round)
    hate_task.refresh_from_db()
    errors = _errors(hate_task, annotator, {"statement": "hello"})
    assert "closed" in errors["__all__"][0]


def test_task_without_current_round_accepts_no_examples(hate_task, annotator):
    errors = _errors(hate_task, annotator, {"statement": "hello"})
    assert "no current round" in errors["__all__"][0]


def test_round_closed_while_the_model_answers_stores_nothing(
    hate_task, hate_round, annotator, rule_model, monkeypatch
):
    def close_then_predict(model, inputs):
        close_round(round_=type(hate_round).objects.get(pk=hate_round.pk))
        return rule_predict(model, inputs)

    monkeypatch.setattr(inference, "predict", close_then_predict)
    with pytest.raises(ExampleError) as info:
        _create(hate_task, annotator, "I hate you")
    assert "closed while the model was answering" in info.value.errors["__all__"][0]
    assert Example.objects.count() == 0


def test_round_replaced_while_the_model_answers_stores_nothing(
    hate_task, hate_round, annotator, rule_model, monkeypatch
):
    def switch_then_predict(model, inputs):
        round_2 = ensure_round(task=hate_task, number=2)
        set_current_round(task=type(hate_task).objects.get(pk=hate_task.pk), round_=round_2)
        return rule_predict(model, inputs)

    monkeypatch.setattr(inference, "predict", switch_then_predict)
    with pytest.raises(ExampleError):
        _create(hate_task, annotator, "I hate you")
    assert Example.objects.count() == 0


def test_blocked_user_cannot_write(hate_task, outsider, rule_model):
    outsider.is_blocked = True
    outsider.save()
    errors = _errors(hate_task, outsider, {"statement": "hello"})
    assert errors == {"__all__": ["Your account is blocked from writing examples."]}
    assert Example.objects.count() == 0


def test_context_from_another_round_is_refused(hate_task, annotator, rule_model):
    round_2 = ensure_round(task=hate_task, number=2)
    context = Context.objects.create(task=hate_task, round=round_2, data={})
    with pytest.raises(ExampleError) as info:
        _create(hate_task, annotator, "hello", context=context)
    assert "context" in info.value.errors


def test_a_crashing_model_keeps_the_example_then_retry_scores_it(
    hate_task, annotator, tiny_registered_model, monkeypatch
):
    from annotation.predictions import retry_failed_predictions

    monkeypatch.setattr(inference, "predict", lambda model, inputs: 1 / 0)
    example, created = _create(hate_task, annotator, "they are not our friends", "hateful")

    assert created
    example.refresh_from_db()
    assert example.prediction_status == Example.PredictionStatus.FAILED
    assert example.model_wrong is None
    [failed] = example.predictions.all()
    assert failed.status == Prediction.Status.FAILED
    assert failed.error == "ZeroDivisionError: division by zero"
    assert failed.label == "" and failed.model_wrong is None

    monkeypatch.undo()  # the real tiny model answers again
    expected = inference.predict(tiny_registered_model, [{"statement": "they are not our friends"}])[0]
    assert retry_failed_predictions() == {"examples": 1, "completed": 1, "still_failed": 0}

    example.refresh_from_db()
    [done] = example.predictions.all()
    assert done.pk == failed.pk
    assert (done.status, done.label, done.error) == (Prediction.Status.OK, expected["label"], "")
    assert done.model_wrong is (expected["label"] != "hateful")
    assert example.prediction_status == Example.PredictionStatus.OK
    assert example.model_wrong is done.model_wrong
    assert retry_failed_predictions() == {"examples": 0, "completed": 0, "still_failed": 0}


def test_retry_predictions_command_with_limit(hate_task, annotator, rule_model, monkeypatch):
    monkeypatch.setattr(inference, "predict", crashing_predict)
    for text in ("I hate them", "hello", "go back home"):
        _create(hate_task, annotator, text, "hateful")

    out = StringIO()
    call_command("retry_predictions", "--limit", "2", stdout=out)  # still crashing
    assert out.getvalue().strip() == "examples tried: 2, completed: 0, still failing: 2"
    assert Example.objects.filter(prediction_status="failed").count() == 3

    monkeypatch.setattr(inference, "predict", rule_predict)
    out = StringIO()
    call_command("retry_predictions", stdout=out)
    assert out.getvalue().strip() == "examples tried: 3, completed: 3, still failing: 0"
    wrong = dict(Example.objects.values_list("inputs__statement", "model_wrong"))
    assert wrong == {"I hate them": False, "hello": True, "go back home": True}


def test_storing_an_example_reads_each_fact_once(hate_task, annotator, tiny_registered_model):
    """The statements of one stored example (no form token, outside any study), each a round trip on
    the create page's hot path: the task's facts (read once for both qualification checks), the writer's
    worker row, the round's targets; then, in the transaction, the round's row lock with the task's
    current round in the same query, the writer's worker row lock, the example, its prediction and the
    study lookup. The savepoint markers of the transaction are left out of the count."""
    _create(hate_task, annotator, "a first example, so the worker row exists")
    with CaptureQueriesContext(connection) as captured:
        _create(hate_task, annotator, "a second example")
    statements = [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert sum("tasks_tutorialitem" in sql for sql in statements) == 1
    assert sum('FROM "tasks_round"' in sql and "FOR SHARE" in sql for sql in statements) == 1
    assert not any(sql.startswith('SELECT "tasks_task"."current_round_id"') for sql in statements)
    assert len(statements) == 8, "\n".join(statements)


def test_a_text_the_target_would_read_only_the_beginning_of_is_refused(
    hate_task, annotator, tiny_registered_model
):
    """The tiny target reads 128 word pieces: [CLS], 126 words, [SEP]. An ending it never sees cannot be
    what fooled it, so the example would count as model-fooling without being one."""
    fits = " ".join(["people"] * 126)
    example, _ = _create(hate_task, annotator, fits, "not-hateful")
    assert example.predictions.get().status == Prediction.Status.OK

    errors = _errors(hate_task, annotator, {"statement": fits + " hate"}, "not-hateful")
    assert errors == {
        "statement": [
            "Too long for the target model: it reads the first 128 word pieces of a text, and this one "
            "makes 129, so the model would not see its end. Shorten it."
        ]
    }
    assert Example.objects.count() == 1


def test_replayed_rows_are_scored_however_long(hate_task, owner, tiny_registered_model):
    """A dataset's row replayed against the target measures it as it is: nobody wrote it to fool it."""
    long = " ".join(["people"] * 200)  # 1,399 characters, 202 word pieces
    example, _ = create_example(
        task=hate_task,
        annotator=owner,
        inputs={"statement": long},
        target="hateful",
        source=Example.Source.REPLAY,
    )
    assert example.predictions.get().status == Prediction.Status.OK
