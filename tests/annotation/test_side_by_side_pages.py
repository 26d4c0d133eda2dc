"""Several models in one conversation through the red-teaming page (no JavaScript: post, redirect, get;
and streamed) and the API: the answers side by side without names, the ratings form, the choice, the
conversation going on with the chosen model and judged."""

from __future__ import annotations

import re
import uuid

import pytest

from annotation.models import CandidateRating, Conversation, Example, Turn
from tests.factories.red_team import make_passage, make_side_by_side_round
from tests.helpers.api import client_for, sse_events
from tests.helpers.chat_server import ChatServer

URL = "/tasks/red-sbs/red-team/"


@pytest.fixture
def server():
    with ChatServer(None) as running:
        running.reply = lambda body: f"Reply from {body['model']}."
        yield running


@pytest.fixture
def sbs_round(db, server):
    round_ = make_side_by_side_round(server.base_url)
    make_passage(round_)
    return round_


@pytest.fixture
def page(client, annotator, sbs_round):
    client.force_login(annotator)
    return client


def _context_id(sbs_round):
    return sbs_round.contexts.get().pk


def _rate_form(conversation, **fields):
    data = {"conversation": conversation.pk, "chosen": "B"}
    for letter in "AB":
        data.update(
            {f"{letter}-score": "50", f"{letter}-rubric-supported": "yes", f"{letter}-rubric-helpful": "4"}
        )
    data.update(fields)
    return data


def test_the_page_sends_the_first_message_to_two_anonymous_models_then_rates_and_goes_on(
    page, sbs_round, server
):
    shown = page.get(URL).content.decode()
    assert "Your first message goes to 2 models at once, not named." in shown
    response = page.post(
        URL + "send/",
        {"prompt": "Hello", "context": _context_id(sbs_round), "client_token": str(uuid.uuid4())},
    )
    assert response.status_code == 302 and response["Location"].endswith("#answers")
    shown = page.get(URL).content.decode()
    turns = list(Turn.objects.order_by("slot"))
    assert "2 models answered your first message" in shown
    for turn in turns:  # each answer in its own column, named by its letter only
        assert f'id="answer-{turn.slot_letter}"' in shown and turn.answer in shown
    assert "alpha" not in shown.replace("Reply from alpha.", "") and "with alpha" not in shown
    assert 'name="A-score"' in shown and 'name="B-rubric-supported"' in shown and 'name="chosen"' in shown
    assert 'id="send-form"' not in shown  # no second message before the choice
    conversation = Conversation.objects.get()
    # A refusal keeps what was chosen and stores nothing.
    refused = page.post(URL + "rate/", _rate_form(conversation, **{"A-score": "0"}))
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "Answer A: the rating must be a whole number from 1 to 100." in body
    assert re.search(r'id="chosen-B" value="B" required checked', body)
    assert not CandidateRating.objects.exists()
    # A slider never touched is sent with no name (the page's script): no score, refused, not a 50.
    untouched = _rate_form(conversation, **{"A-score": "23"})
    del untouched["B-score"]
    refused = page.post(URL + "rate/", untouched)
    assert refused.status_code == 400
    body = refused.content.decode()
    assert (
        "Answer B: give it a rating from 1 to 100 (on the page, move its slider; one left untouched is no "
        "rating)." in body
    )
    assert re.search(r'id="A-score" value="23" data-output="A-score-value">', body)  # touched: kept
    assert re.search(r'id="B-score" value="50" data-output="B-score-value" data-untouched>', body)
    assert re.search(r'id="B-rubric-supported-1" value="yes" required checked', body)
    assert not CandidateRating.objects.exists()
    response = page.post(URL + "rate/", _rate_form(conversation, **{"A-score": "23", "B-score": "91"}))
    assert response.status_code == 302
    conversation.refresh_from_db()
    assert conversation.model_id == turns[1].model_id
    shown = page.get(URL).content.decode()
    assert "Answer B of 2, the one you chose to go on with (your ratings: A 23, B 91)." in shown
    assert 'id="send-form"' in shown and "(2 of 3)" in shown
    page.post(
        URL + "send/", {"prompt": "More?", "conversation": conversation.pk, "client_token": str(uuid.uuid4())}
    )
    assert server.requests[-1]["model"] == turns[1].model.name
    judged = page.post(
        URL + "judge/",
        {
            "conversation": conversation.pk,
            "rubric-supported": "yes",
            "rubric-helpful": "4",
            "answered_turns": "2",
        },
    )
    assert judged.status_code == 302
    example = Example.objects.get()
    assert [r["score"] for r in example.metadata["side_by_side"]] == [23, 91]
    # Judged, the answers are named to their writer (before, nothing on the page told them apart).
    shown = page.get(URL).content.decode()
    assert (
        f"The models, now that it is judged: answer A was {turns[0].model.name}; answer B was "
        f"{turns[1].model.name}. Here is a new passage." in shown
    )


def test_the_streamed_first_message_names_each_answers_slot(page, sbs_round):
    response = page.post(
        URL + "send/",
        {"prompt": "Hello", "context": _context_id(sbs_round), "client_token": str(uuid.uuid4())},
        HTTP_ACCEPT="text/event-stream",
    )
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "turn" and names[-1] == "done"
    assert events[0][1]["answers"] == 2
    tokens = [data for name, data in events if name == "token"]
    by_slot = {0: "", 1: ""}
    for data in tokens:
        by_slot[data["slot"]] += data["text"]
    done = events[-1][1]
    assert [a["answer_of"] for a in done["answers"]] == ["A", "B"]
    assert [by_slot[0], by_slot[1]] == [a["answer"] for a in done["answers"]]
    assert all("model" not in a["generation"] for a in done["answers"])


def test_the_api_answers_rates_and_goes_on(sbs_round, annotator, server):
    api = client_for(annotator)
    started = api.post(
        "/api/tasks/red-sbs/conversations/", {"context": _context_id(sbs_round)}, format="json"
    ).json()
    assert (started["side_by_side"], started["model"], started["answers"], started["chosen"]) == (
        2,
        None,
        [],
        None,
    )
    url = f"/api/conversations/{started['id']}/"
    first = api.post(url + "turns/", {"prompt": "Hi"}, format="json")
    assert first.status_code == 201, first.content
    answers = first.json()["answers"]
    assert [a["answer_of"] for a in answers] == ["A", "B"]
    # Nothing tells the models apart before the judgement: no name, and of the record its finish only.
    assert all(a["answer"].startswith("Reply from ") for a in answers)
    assert [(a["model"], a["generation"]) for a in answers] == [(None, {"finish_reason": "stop"})] * 2
    refused = api.post(url + "turns/", {"prompt": "Next"}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (409, "choose_first")
    good = {"supported": "yes", "helpful": "4"}
    bad_body = api.post(
        url + "ratings/", {"ratings": {"A": {"score": "70", "rubric": good}}, "chosen": "A"}, format="json"
    )
    assert bad_body.status_code == 400 and "score" in bad_body.json()["ratings"]["A"]
    out_of_range = api.post(
        url + "ratings/",
        {"ratings": {"A": {"score": 101, "rubric": good}, "B": {"score": 5, "rubric": good}}, "chosen": "A"},
        format="json",
    )
    assert out_of_range.status_code == 400 and out_of_range.json() == {
        "detail": "Answer A: the rating must be a whole number from 1 to 100.",
        "code": "invalid",
    }
    missing = api.post(
        url + "ratings/", {"ratings": {"A": {"score": 70, "rubric": good}}, "chosen": "A"}, format="json"
    )
    assert missing.status_code == 400 and missing.json() == {
        "detail": "Rate answer B too.",
        "code": "invalid",
    }
    ratings = {
        "ratings": {"A": {"score": 70, "rubric": good}, "B": {"score": 40, "rubric": good}},
        "chosen": "A",
    }
    rated = api.post(url + "ratings/", ratings, format="json")
    assert rated.status_code == 201, rated.content
    assert (rated.json()["chosen"], rated.json()["model"], len(rated.json()["turns"])) == ("A", None, 1)
    assert api.post(url + "ratings/", ratings, format="json").status_code == 200
    second = api.post(url + "turns/", {"prompt": "Next"}, format="json")
    assert (
        second.status_code == 201
        and second.json()["index"] == 1
        and "model" not in second.json()["generation"]
    )
    judged = api.post(url + "judgement/", {"rubric": good}, format="json")
    assert judged.status_code == 201
    after = api.get(url).json()
    chosen_model = Turn.objects.get(slot=0).model.name
    assert after["model"] == chosen_model and after["answers"][0]["model"] == chosen_model
    assert after["answers"][1]["model"] == Turn.objects.get(slot=1).model.name != chosen_model
    assert after["answers"][0]["generation"]["decoding"]["max_new_tokens"] == 16


def test_another_users_conversation_cannot_be_rated_through_the_api(sbs_round, annotator, validator):
    api = client_for(annotator)
    started = api.post(
        "/api/tasks/red-sbs/conversations/", {"context": _context_id(sbs_round)}, format="json"
    ).json()
    api.post(f"/api/conversations/{started['id']}/turns/", {"prompt": "Hi"}, format="json")
    other = client_for(validator)
    response = other.post(
        f"/api/conversations/{started['id']}/ratings/", {"ratings": {}, "chosen": "A"}, format="json"
    )
    assert response.status_code == 404
