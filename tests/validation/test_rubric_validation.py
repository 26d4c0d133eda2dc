"""Validation of red-teaming examples: a conversation's validators answer the rubric without seeing the
author's answers (unanchored), their answers give their verdict, and the quorum settles it; a
multiple-choice item gets a plain verdict with its marked answer shown."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.services import ensure_round, set_current_round
from tests.factories.accounts import UserFactory
from tests.factories.validation import serve
from validation.models import Validation

pytestmark = pytest.mark.django_db

MESSAGES = [
    {"role": "user", "content": "How long is the Amazon?"},
    {"role": "assistant", "content": "It is 9,000 km long and flows through Peru."},
]


@pytest.fixture
def red_round(db):
    task = Task.objects.create(slug="red-team", name="Red-team", config=RED_TEAM_CONFIG, validation_quorum=3)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    return round_


@pytest.fixture
def conversation_example(red_round, annotator):
    context = Context.objects.create(
        task=red_round.task,
        round=red_round,
        data={"title": "Amazon", "passage": "The Amazon is 6,400 km long."},
    )
    return Example.objects.create(
        round=red_round,
        context=context,
        annotator=annotator,
        inputs={"messages": MESSAGES},
        target={"supported": "no", "helpful": "4"},
        model_wrong=True,
        tags=["fabrication"],
        metadata={"mode": "conversation", "turns": 1, "model": "smollm2", "cost": None},
    )


def _validators(n, prefix="judge"):
    return [UserFactory(username=f"{prefix}{i}") for i in range(n)]


def test_the_validate_page_shows_the_conversation_and_the_rubric_but_not_the_authors_answers(
    client, conversation_example
):
    judge = _validators(1)[0]
    client.force_login(judge)
    html = client.get("/tasks/red-team/validate/").content.decode()
    assert "Is the model's output good enough?" in html
    assert "It is 9,000 km long and flows through Peru." in html and "The Amazon is 6,400 km long." in html
    assert 'name="rubric-supported"' in html and 'name="rubric-helpful"' in html
    # Unanchored: neither the author's answers nor their category appear.
    assert "fabrication" not in html and "Adds a detail" not in html
    assert "The author&#x27;s intended" not in html


def test_three_validators_rubric_answers_settle_the_failure_as_verified(client, conversation_example):
    judges = _validators(3)
    answers = [
        {"rubric-supported": "no", "rubric-helpful": "2"},  # failed: agrees with the author
        {"rubric-supported": "yes", "rubric-helpful": "5"},  # not failed: disagrees
        {"rubric-supported": "yes", "rubric-helpful": "1"},  # failed by "helpful": agrees
    ]
    for judge, form in zip(judges, answers, strict=True):
        serve(conversation_example, judge)
        client.force_login(judge)
        client.post(
            "/tasks/red-team/validate/?round=1",
            {"example": conversation_example.pk, "verdict": "incorrect", "round": 1, **form},
        )
    votes = list(Validation.objects.order_by("created_at", "id"))
    # The verdict comes from the answers, whatever button value was sent.
    assert [(v.verdict, v.rubric_answers) for v in votes] == [
        ("correct", {"supported": "no", "helpful": "2"}),
        ("incorrect", {"supported": "yes", "helpful": "5"}),
        ("correct", {"supported": "yes", "helpful": "1"}),
    ]
    conversation_example.refresh_from_db()
    assert conversation_example.status == "pending"  # 2 matching of a quorum of 3
    fourth = _validators(1, prefix="fourth")[0]
    serve(conversation_example, fourth)
    client.force_login(fourth)
    client.post(
        "/tasks/red-team/validate/?round=1",
        {
            "example": conversation_example.pk,
            "verdict": "correct",
            "round": 1,
            "rubric-supported": "no",
            "rubric-helpful": "3",
        },
    )
    conversation_example.refresh_from_db()
    assert conversation_example.status == "validated_correct"


def test_a_rubric_left_unanswered_is_refused_and_nothing_stored(client, conversation_example):
    judge = _validators(1)[0]
    serve(conversation_example, judge)
    client.force_login(judge)
    response = client.post(
        "/tasks/red-team/validate/?round=1",
        {"example": conversation_example.pk, "verdict": "correct", "round": 1, "rubric-supported": "no"},
        follow=True,
    )
    html = response.content.decode()
    assert (
        "rubric: answer &#x27;How well does the answer address the message? (1 not at all, 5 fully)&#x27;."
        in html
    )
    assert not Validation.objects.exists()


def test_a_flag_needs_no_rubric(client, conversation_example):
    judge = _validators(1)[0]
    serve(conversation_example, judge)
    client.force_login(judge)
    client.post(
        "/tasks/red-team/validate/?round=1",
        {"example": conversation_example.pk, "verdict": "flagged", "round": 1},
    )
    assert list(Validation.objects.values_list("verdict", "rubric_answers")) == [("flagged", {})]


def test_a_multiple_choice_item_shows_its_marked_answer_and_takes_a_plain_verdict(
    client, red_round, annotator
):
    context = Context.objects.create(
        task=red_round.task, round=red_round, data={"passage": "Paris is in France."}
    )
    item = Example.objects.create(
        round=red_round,
        context=context,
        annotator=annotator,
        inputs={"question": "Where is Paris?", "options": ["Spain", "France", "Italy"]},
        target={"answer": 1},
        model_wrong=True,
        metadata={"mode": "multiple_choice", "picked": 2},
    )
    judge = _validators(1)[0]
    client.force_login(judge)
    html = client.get("/tasks/red-team/validate/").content.decode()
    assert "Is the multiple-choice item right?" in html
    assert "France <strong>(the author's correct answer)</strong>" in html
    assert "Italy <em>(the model's pick)</em>" in html
    client.post("/tasks/red-team/validate/?round=1", {"example": item.pk, "verdict": "correct", "round": 1})
    assert list(Validation.objects.values_list("verdict", "rubric_answers")) == [("correct", {})]


def test_the_validator_is_never_told_whether_their_answers_agreed_with_the_authors(
    client, api, conversation_example
):
    """The verdict a rubric gives says whether the validator's answers agreed with the author's: shown,
    then undone, a validator could answer again to agree. The page's undo offer, the API's answer to the
    vote and a second vote's message name no verdict; the verdict stored is still the rubric's
    ("incorrect" here, though the button's value posted is "correct")."""
    [judge, other] = _validators(2, prefix="banner")
    serve(conversation_example, judge)
    client.force_login(judge)
    # The author judged the output failed; these answers say it did not.
    response = client.post(
        "/tasks/red-team/validate/?round=1",
        {"example": conversation_example.pk, "verdict": "correct", "round": 1,
         "rubric-supported": "yes", "rubric-helpful": "5"},
        follow=True,
    )  # fmt: skip
    assert Validation.objects.get(validator=judge).verdict == "incorrect"
    html = response.content.decode()
    assert f"Your answers on example {conversation_example.pk} are recorded." in html
    assert "incorrect" not in html and "Your verdict on example" not in html
    again = client.post(
        "/tasks/red-team/validate/?round=1",
        {"example": conversation_example.pk, "verdict": "correct", "round": 1,
         "rubric-supported": "no", "rubric-helpful": "1"},
        follow=True,
    ).content.decode()  # fmt: skip
    assert f"Your answers on example {conversation_example.pk} were already recorded" in again
    assert "incorrect" not in again

    serve(conversation_example, other)
    voted = api(other).post(
        f"/api/examples/{conversation_example.pk}/validations/",
        {"rubric": {"supported": "yes", "helpful": "5"}},
        format="json",
    )
    assert voted.status_code == 201
    assert voted.json()["verdict"] is None
    assert Validation.objects.get(validator=other).verdict == "incorrect"
