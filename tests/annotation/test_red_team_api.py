"""The red-teaming API against the real SmolLM2: a conversation started, three turns as JSON and one
streamed, the fourth refused, the judgement stored once, a multiple-choice item, and validators' rubric
answers settling the conversation at quorum."""

from __future__ import annotations

import uuid

import pytest

from annotation.models import Conversation, Example, Turn
from models_registry.models import RegisteredModel
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.red_team import make_passage, make_red_team_round
from tests.factories.tasks import builtin_task, open_round
from tests.factories.validation import serve
from tests.helpers.api import client_for, sse_events


@pytest.fixture
def red_round(db, smollm2_dir):
    round_ = make_red_team_round(smollm2_dir)
    round_.task.validation_quorum = 2
    round_.task.save(update_fields=["validation_quorum"])
    return round_


@pytest.fixture
def api(annotator):
    return client_for(annotator)


def _start(api, red_round):
    context = make_passage(red_round)
    response = api.post("/api/tasks/red-team/conversations/", {"context": context.pk}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_conversation_through_the_api(api, red_round, annotator):
    started = _start(api, red_round)
    assert (started["status"], started["max_turns"], started["turns"], started["model"]) == (
        "open",
        3,
        [],
        "smollm2",
    )
    turns_url = f"/api/conversations/{started['id']}/turns/"
    token = str(uuid.uuid4())
    first = api.post(
        turns_url, {"prompt": "How long is the Amazon? 🌊", "client_token": token}, format="json"
    )
    assert first.status_code == 201
    stored = Turn.objects.get()
    assert first.json()["answer"] == stored.answer and first.json()["status"] == "answered"
    assert first.json()["generation"]["output_tokens"] == stored.generation["output_tokens"] > 0
    again = api.post(
        turns_url, {"prompt": "How long is the Amazon? 🌊", "client_token": token}, format="json"
    )
    assert (again.status_code, again.json()["index"], Turn.objects.count()) == (200, 0, 1)
    streamed = api.post(
        turns_url, {"prompt": "Which country?"}, format="json", HTTP_ACCEPT="text/event-stream"
    )
    assert (streamed.status_code, streamed["Content-Type"]) == (200, "text/event-stream; charset=utf-8")
    events = sse_events(streamed)
    assert events[0] == ("turn", {"turn": 1, "conversation": started["id"]}) and events[-1][0] == "done"
    second = Turn.objects.get(index=1)
    assert (
        "".join(d["text"] for name, d in events if name == "token")
        == second.answer
        == events[-1][1]["answer"]
    )
    assert api.post(turns_url, {"prompt": "Sure?"}, format="json").status_code == 201
    refused = api.post(turns_url, {"prompt": "Four?"}, format="json")
    assert refused.status_code == 409
    assert refused.json() == {
        "detail": "This conversation has its 3 messages; answer the rubric or start a new one.",
        "code": "max_turns",
    }
    assert Turn.objects.count() == 3
    detail = api.get(f"/api/conversations/{started['id']}/").json()
    assert [t["index"] for t in detail["turns"]] == [0, 1, 2]

    judgement_url = f"/api/conversations/{started['id']}/judgement/"
    bad = api.post(judgement_url, {"rubric": {"supported": "no", "helpful": "2"}}, format="json")
    assert (bad.status_code, bad.json()["detail"]) == (400, "Tag the failure with at least one category.")
    body = {"rubric": {"supported": "no", "helpful": "2"}, "categories": ["fabrication"]}
    judged = api.post(judgement_url, body, format="json")
    assert judged.status_code == 201
    example = Example.objects.get()
    assert (
        judged.json()["id"] == example.pk and example.model_wrong is True and example.tags == ["fabrication"]
    )
    assert api.post(judgement_url, body, format="json").status_code == 200
    assert Example.objects.count() == 1


def test_refusals_keep_nothing(api, red_round, validator):
    started = _start(api, red_round)
    turns_url = f"/api/conversations/{started['id']}/turns/"
    too_long = api.post(turns_url, {"prompt": "x" * 10_000}, format="json")
    assert too_long.status_code == 400
    assert too_long.json()["detail"] == "Your message is too long: 10,000 characters, at most 4,000 allowed."
    surrogate = api.post(turns_url, data='{"prompt": "bad \\ud800"}', content_type="application/json")
    assert surrogate.status_code == 400
    stranger = client_for(validator)
    assert stranger.post(turns_url, {"prompt": "Mine?"}, format="json").status_code == 404
    assert stranger.get(f"/api/conversations/{started['id']}/").status_code == 404
    assert not Turn.objects.exists()
    streamed_refusal = api.post(turns_url, {"prompt": ""}, format="json", HTTP_ACCEPT="text/event-stream")
    assert streamed_refusal.status_code == 400  # no stream began: the refusal is JSON
    assert streamed_refusal["Content-Type"] == "application/json"
    assert streamed_refusal.json()["detail"].startswith("Your message has no visible character")


@pytest.mark.parametrize("query", ["stream=1", "format=sse"])
def test_the_query_asks_for_the_stream_as_the_accept_header_does(api, red_round, query):
    started = _start(api, red_round)
    streamed = api.post(
        f"/api/conversations/{started['id']}/turns/?{query}", {"prompt": "How long?"}, format="json"
    )
    assert streamed.status_code == 200 and streamed["Content-Type"] == "text/event-stream; charset=utf-8"
    events = sse_events(streamed)
    turn = Turn.objects.get()
    assert [name for name, _ in events if name != "token"] == ["turn", "done"]
    assert events[-1][1]["status"] == turn.status == "answered"
    assert "".join(d["text"] for name, d in events if name == "token") == turn.answer != ""


def test_a_conversation_over_the_models_context_is_refused_with_the_counts(api, red_round):
    # No passage (the task's passage made optional, so none is needed): the target reads the template
    # and the one message. Each 🌊 (U+1F30A, 4 UTF-8 bytes) is 3 of SmolLM2's byte-level tokens, and
    # the chat template (its default system prompt and the role markers) adds 30: 4,000 × 3 + 30 =
    # 12,030 tokens, over the 8,192 of the context, though 4,000 characters is within the message's
    # length limit.
    red_round.task.config["context_fields"][1]["optional"] = True
    red_round.task.save(update_fields=["config"])
    response = api.post("/api/tasks/red-team/conversations/", {}, format="json")
    assert (response.status_code, response.json()["context"]) == (201, None)
    refused = api.post(
        f"/api/conversations/{response.json()['id']}/turns/", {"prompt": "🌊" * 4000}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "detail": "the conversation is 12,030 tokens; with 12 for the answer it exceeds the model's "
        "context of 8,192 tokens",
        "code": "too_long",
    }
    assert not Turn.objects.exists()


def test_a_round_closed_or_without_a_ready_target_is_a_409(api, red_round):
    RegisteredModel.objects.filter(task=red_round.task).update(status="failed")
    context = make_passage(red_round)
    no_target = api.post("/api/tasks/red-team/conversations/", {"context": context.pk}, format="json")
    assert (no_target.status_code, no_target.json()) == (
        409,
        {"detail": "This round has no ready target model to talk to yet.", "code": "no_target"},
    )
    red_round.is_closed = True
    red_round.save(update_fields=["is_closed"])
    closed = api.post("/api/tasks/red-team/conversations/", {"context": context.pk}, format="json")
    assert (closed.status_code, closed.json()) == (
        409,
        {"detail": "This task is not collecting examples right now.", "code": "round_closed"},
    )
    assert not Conversation.objects.exists()


def test_a_multiple_choice_item_through_the_api(api, red_round):
    context = make_passage(red_round)
    body = {
        "context": context.pk,
        "question": "How long is the Amazon?",
        "answer": "About 6,400 km",
        "negatives": ["About 7,000 km", "About 4,000 miles"],
        "client_token": str(uuid.uuid4()),
    }
    created = api.post("/api/tasks/red-team/choice-items/", body, format="json")
    assert created.status_code == 201
    result = created.json()
    example = Example.objects.get()
    assert result["options"][result["answer"]] == "About 6,400 km"
    assert (result["example"], result["picked"], result["model_wrong"]) == (
        example.pk,
        example.metadata["picked"],
        example.metadata["picked"] != result["answer"],
    )
    assert api.post("/api/tasks/red-team/choice-items/", body, format="json").status_code == 200
    one = api.post(
        "/api/tasks/red-team/choice-items/", {**body, "client_token": None, "negatives": ["x"]}, format="json"
    )
    assert one.status_code == 400 and "at least 2 wrong answers" in one.json()["detail"]


def test_validators_rubric_answers_settle_it_and_never_see_the_authors(api, red_round, annotator):
    started = _start(api, red_round)
    api.post(f"/api/conversations/{started['id']}/turns/", {"prompt": "How long?"}, format="json")
    api.post(
        f"/api/conversations/{started['id']}/judgement/",
        {"rubric": {"supported": "no", "helpful": "2"}, "categories": ["fabrication"]},
        format="json",
    )
    example = Example.objects.get()
    assert (example.model_wrong, example.target, example.tags) == (
        True,
        {"supported": "no", "helpful": "2"},
        ["fabrication"],
    )
    judges = [UserFactory(username=f"judge{i}") for i in range(3)]
    # Asked with ?reveal=model too: the author's answers (target), judgement (model_wrong) and
    # categories (tags, never a field) stay hidden; the messages are what is judged.
    served = client_for(judges[0]).get("/api/tasks/red-team/validations/next/?reveal=model").json()
    assert served["model_answer_hidden"] is False
    shown = served["example"]
    assert sorted(shown) == [
        "context",
        "explanation",
        "id",
        "inputs",
        "model_outputs",
        "model_wrong",
        "round",
        "target",
    ]
    assert (shown["id"], shown["target"], shown["model_wrong"], shown["model_outputs"]) == (
        example.pk,
        None,
        None,
        [],
    )
    assert shown["inputs"]["messages"] == example.inputs["messages"]
    assert shown["inputs"]["messages"][0] == {"role": "user", "content": "How long?"}
    # Quorum 2 (the fixture): the first judge finds the output good (disagrees with the author:
    # incorrect, 1 vote, pending); the next two find a failure (agree: correct, 2 votes, settled).
    answers = [
        {"supported": "yes", "helpful": "5"},
        {"supported": "no", "helpful": "4"},
        {"supported": "yes", "helpful": "1"},
    ]
    results = []
    for judge, rubric in zip(judges, answers, strict=True):
        serve(example, judge)
        response = client_for(judge).post(
            f"/api/examples/{example.pk}/validations/", {"rubric": rubric}, format="json"
        )
        assert response.status_code == 201, response.content
        body = response.json()
        results.append((body["verdict"], body["settled"], body["example_status"]))
    # A rubric validator is never told the verdict their answers gave (it would tell them the
    # author's): the answer's verdict is null, the stored one is derived.
    assert results == [
        (None, False, "pending"),
        (None, False, "pending"),
        (None, True, "validated_correct"),
    ]
    example.refresh_from_db()
    assert example.status == "validated_correct"
    stored = [(v.verdict, v.rubric_answers) for v in example.validations.order_by("id")]
    assert stored == [
        ("incorrect", answers[0]),
        ("correct", answers[1]),
        ("correct", answers[2]),
    ]


def test_a_validators_rubric_is_refused_on_any_other_example(validator):
    task = builtin_task("hate-speech")
    example = make_example(open_round(task), UserFactory(username="author"))
    serve(example, validator)
    response = client_for(validator).post(
        f"/api/examples/{example.pk}/validations/",
        {"verdict": "correct", "rubric": {"supported": "no"}},
        format="json",
    )
    assert (response.status_code, response.json()) == (
        400,
        {"rubric": ["Only a red-teaming conversation takes rubric answers."]},
    )
    assert not example.validations.exists()


def test_a_prompt_that_is_not_text_is_refused(api, red_round):
    started = _start(api, red_round)
    refused = api.post(f"/api/conversations/{started['id']}/turns/", {"prompt": 5}, format="json")
    assert (refused.status_code, refused.json()) == (400, {"prompt": ["Must be text (a JSON string)."]})
    assert not Turn.objects.exists()


NEEDS_PASSAGE = "A conversation needs one of this round's passages (its context); none was given."
NOT_AN_INTEGER = "Must be a JSON integer (e.g. 12), not a string."


@pytest.mark.parametrize("body", [{}, {"context": None}])
def test_a_conversation_without_a_passage_is_refused_and_nothing_stored(api, red_round, body):
    make_passage(red_round)
    refused = api.post("/api/tasks/red-team/conversations/", body, format="json")
    assert (refused.status_code, refused.json()) == (400, {"detail": NEEDS_PASSAGE, "code": "bad_context"})
    assert not Conversation.objects.exists()


@pytest.mark.parametrize("kind, as_sent", [("a string", str), ("true or false", lambda pk: True)])
def test_a_passage_id_that_is_not_a_json_integer_is_refused_and_nothing_stored(api, red_round, kind, as_sent):
    context = make_passage(red_round)  # a real passage of the round: "287" is its id, as text
    refused = api.post("/api/tasks/red-team/conversations/", {"context": as_sent(context.pk)}, format="json")
    message = f"Must be a JSON integer (e.g. 12), not {kind}."
    assert (refused.status_code, refused.json()) == (
        400,
        {"detail": f"context: {message}", "code": "bad_context", "context": [message]},
    )
    assert not Conversation.objects.exists()


def test_a_choice_item_with_its_passage_id_as_a_string_is_refused_and_nothing_stored(api, red_round):
    context = make_passage(red_round)
    body = {
        "question": "How long is the Amazon?",
        "answer": "About 6,400 km",
        "negatives": ["7,000", "4,000"],
    }
    as_text = api.post(
        "/api/tasks/red-team/choice-items/", {**body, "context": str(context.pk)}, format="json"
    )
    assert (as_text.status_code, as_text.json()["code"], as_text.json()["detail"]) == (
        400,
        "bad_context",
        f"context: {NOT_AN_INTEGER}",
    )
    left_out = api.post("/api/tasks/red-team/choice-items/", body, format="json")
    assert (left_out.status_code, left_out.json()) == (
        400,
        {
            "detail": "A multiple-choice item needs one of this round's passages (its context); none was given.",
            "code": "bad_context",
        },
    )
    assert not Example.objects.exists()


def _with_answers(api, red_round, n):
    """A conversation started through the API with ``n`` answered turns, stored as ``send_turn`` does."""
    started = _start(api, red_round)
    for i in range(n):
        Turn.objects.create(
            conversation_id=started["id"], index=i, prompt=f"Q{i}", answer=f"A{i}", status="answered"
        )
    return f"/api/conversations/{started['id']}/judgement/"


def test_a_second_judgement_with_other_answers_is_a_409_and_the_same_one_a_200(api, red_round):
    url = _with_answers(api, red_round, 1)
    body = {"rubric": {"supported": "no", "helpful": "2"}, "categories": ["fabrication"], "answered_turns": 1}
    assert api.post(url, body, format="json").status_code == 201
    example = Example.objects.get()
    assert api.post(url, body, format="json").status_code == 200
    other = api.post(url, {"rubric": {"supported": "yes", "helpful": "5"}}, format="json")
    assert (other.status_code, other.json()) == (
        409,
        {
            "detail": f"This conversation was already judged (example {example.pk}: a failure of the model "
            "(supported: no, helpful: 2; categories: fabrication)). Your new answers were not stored.",
            "code": "already_judged",
        },
    )
    example.refresh_from_db()
    assert (example.model_wrong, Example.objects.count()) == (True, 1)


def test_a_judgement_of_fewer_answers_than_the_conversation_has_is_a_409(api, red_round):
    url = _with_answers(api, red_round, 2)
    body = {"rubric": {"supported": "no", "helpful": "2"}, "categories": ["fabrication"]}
    stale = api.post(url, {**body, "answered_turns": 1}, format="json")
    assert (stale.status_code, stale.json()["code"]) == (409, "stale_judgement")
    as_text = api.post(url, {**body, "answered_turns": "2"}, format="json")
    assert (as_text.status_code, as_text.json()) == (
        400,
        {"answered_turns": ["Must be a JSON integer (e.g. 12), not a string."]},
    )
    assert not Example.objects.exists()
    assert api.post(url, {**body, "answered_turns": 2}, format="json").status_code == 201


def test_the_examples_endpoint_refuses_a_red_teaming_task_and_stores_nothing(annotator):
    """A red-teaming task's examples are conversations and multiple-choice items: the classifier
    examples endpoint once stored a body shaped like a QA example (a "rubric" span) as one."""
    round_ = open_round(builtin_task("red-team"))
    passage = make_passage(round_)
    body = {"prompt": "hi", "rubric": {"answer": "The", "answer_start": 0}, "context": passage.pk}
    response = client_for(annotator).post("/api/tasks/red-team/examples/", body, format="json")
    assert response.status_code == 400, response.content
    assert "A red-teaming task takes conversations and multiple-choice items, not examples" in str(
        response.json()
    )
    assert not Example.objects.filter(round=round_).exists()


def test_over_the_turn_rate_a_message_is_a_429_and_another_person_is_not_held_back(
    api, red_round, validator, settings
):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "red_team_turn": "1/min",
        },
    }
    started = _start(api, red_round)
    turns_url = f"/api/conversations/{started['id']}/turns/"
    assert api.post(turns_url, {"prompt": "Hi?"}, format="json").status_code == 201
    refused = api.post(turns_url, {"prompt": "Hi again?"}, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused.json()["code"] == "throttled"  # as the other refusals carry theirs
    assert refused.json()["detail"].startswith(
        "You are sending messages faster than this server allows (1/min per person, refused messages included)."
    )
    assert Turn.objects.count() == 1
    other = client_for(validator)
    context = make_passage(red_round, passage="Another passage.", title="Other")
    theirs = other.post("/api/tasks/red-team/conversations/", {"context": context.pk}, format="json").json()
    assert (
        other.post(f"/api/conversations/{theirs['id']}/turns/", {"prompt": "Hi?"}, format="json").status_code
        == 201
    )


def test_a_round_s_budget_spent_is_a_409_with_code_budget(api, red_round):
    from decimal import Decimal

    from annotation.models import RoundBudget

    RegisteredModel.objects.filter(task=red_round.task).update(
        generation={"max_new_tokens": 12, "price_input_per_million": 2.0, "price_output_per_million": 10.0}
    )
    RoundBudget.objects.create(round=red_round, cap=Decimal("0.000001"))
    started = _start(api, red_round)
    refused = api.post(f"/api/conversations/{started['id']}/turns/", {"prompt": "Hi?"}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "budget"
    assert refused.json()["detail"].startswith(
        "This round's budget for the model is spent (0.000001 of 0.000001 left"
    )
    assert not Turn.objects.exists()
