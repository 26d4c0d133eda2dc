"""The red-teaming pages with the real SmolLM2 as target: a conversation held without JavaScript (post,
redirect, get) and streamed (server-sent events), judged with the rubric; multiple-choice items; the
refusals that keep what was typed."""

from __future__ import annotations

import re
import uuid

import pytest

from annotation.models import Conversation, Example, Turn
from tests.factories.red_team import make_passage, make_red_team_round
from tests.helpers.api import sse_events


@pytest.fixture
def red_round(db, smollm2_dir):
    round_ = make_red_team_round(smollm2_dir)
    make_passage(round_)
    return round_


@pytest.fixture
def page(client, annotator, red_round):
    client.force_login(annotator)
    return client


URL = "/tasks/red-team/red-team/"


def _send(client, prompt, *, conversation=None, token=None, stream=False, context=None):
    data = {"prompt": prompt, "client_token": str(token or uuid.uuid4())}
    if conversation is not None:
        data["conversation"] = conversation
    else:
        data["context"] = context or _context_id()
    headers = {"HTTP_ACCEPT": "text/event-stream"} if stream else {}
    return client.post(URL + "send/", data, **headers)


def _context_id():
    from tasks.models import Context

    return Context.objects.get().pk


def test_the_page_shows_the_goal_the_passage_and_the_message_box(page):
    html = page.get(URL).content.decode()
    assert "Make the model state something about the passage that the passage does not support" in html
    assert "The Amazon river flows through Brazil." in html
    assert 'name="prompt"' in html and "(1 of 3)" in html
    assert 'id="rubric" hidden' in html  # nothing to judge yet
    assert "Model answers are generated and may be wrong, odd or offensive." in html


def test_the_create_page_of_a_red_teaming_task_leads_here(page):
    response = page.get("/tasks/red-team/create/")
    assert (response.status_code, response["Location"]) == (302, URL)


def test_without_javascript_a_message_posts_and_the_page_shows_the_whole_answer(page, annotator):
    token = uuid.uuid4()
    response = _send(page, "How long is the Amazon? 🌊", token=token)
    assert response.status_code == 302 and response["Location"] == URL + "#turn-0"
    turn = Turn.objects.get()
    assert (turn.prompt, turn.status) == ("How long is the Amazon? 🌊", "answered") and turn.answer
    html = page.get(URL).content.decode()
    assert turn.answer.split("\n")[0][:20] in html
    assert "(2 of 3)" in html and 'id="rubric" hidden' not in html
    # The same form sent again (a double click, Back and resend) stores nothing new.
    conversation = Conversation.objects.get()
    assert (
        _send(page, "How long is the Amazon? 🌊", token=token, conversation=conversation.pk).status_code
        == 302
    )
    assert Turn.objects.count() == 1 and Conversation.objects.count() == 1


def test_a_streamed_answer_arrives_as_events_whose_pieces_make_the_stored_answer(page):
    response = _send(page, "Where does the Amazon flow?", stream=True)
    assert response["Content-Type"].startswith("text/event-stream")
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "turn" and names[-1] == "done" and set(names[1:-1]) == {"token"}
    turn = Turn.objects.get()
    assert events[0][1] == {"turn": 0, "conversation": turn.conversation_id}
    assert "".join(data["text"] for name, data in events if name == "token") == turn.answer
    assert events[-1][1]["answer"] == turn.answer and events[-1][1]["status"] == "answered"


def test_an_answer_cut_short_is_said_so_on_the_page(page):
    _send(page, "Tell me about rivers.")
    turn = Turn.objects.get()
    # As a turn whose reader left mid-stream is stored (tests/annotation/test_conversations.py).
    turn.generation = {**turn.generation, "finish_reason": "cut_short", "extra": {}}
    turn.save(update_fields=["generation"])
    html = page.get(URL).content.decode()
    assert "The answer was cut short: the page was left before it finished. What came is kept." in html
    assert "The answer reached its length limit." not in html


def test_three_turns_then_the_box_goes_and_a_fourth_is_refused_with_the_text_kept(page):
    _send(page, "One?")
    conversation = Conversation.objects.get()
    _send(page, "Two? עברית", conversation=conversation.pk)
    _send(page, "Three?", conversation=conversation.pk)
    html = page.get(URL).content.decode()
    assert 'name="prompt"' not in html and "This conversation has its 3 messages" in html
    response = _send(page, "Four?", conversation=conversation.pk)
    html = response.content.decode()
    assert response.status_code == 409
    assert "This conversation has its 3 messages; answer the rubric or start a new one." in html
    assert [t.prompt for t in Turn.objects.order_by("index")] == ["One?", "Two? עברית", "Three?"]
    # To the page's script the refusal is plain text with a status.
    refused = _send(page, "Four?", conversation=conversation.pk, stream=True)
    assert refused.status_code == 409 and "answer the rubric" in refused.content.decode()


def test_a_message_over_the_length_limit_is_refused_and_kept_in_the_box(page):
    text = "x" * 10_000
    response = _send(page, text)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Your message is too long: 10,000 characters, at most 4,000 allowed." in html
    assert text in html  # back in the box
    assert not Turn.objects.exists()


def test_judging_a_failure_stores_the_example_and_serves_a_new_passage(page, annotator):
    _send(page, "How long is the Amazon?")
    conversation = Conversation.objects.get()
    form = {"conversation": conversation.pk, "rubric-supported": "no", "rubric-helpful": "3"}
    refused = page.post(URL + "judge/", form)
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "Tag the failure with at least one category." in html
    assert 'value="no" required checked' in html  # the answers chosen are kept
    response = page.post(URL + "judge/", {**form, "category": ["fabrication"]})
    assert response.status_code == 302
    example = Example.objects.get()
    assert example.model_wrong is True and example.target == {"supported": "no", "helpful": "3"}
    assert example.tags == ["fabrication"] and example.metadata["mode"] == "conversation"
    # Sent twice: stored once.
    page.post(URL + "judge/", {**form, "category": ["fabrication"]})
    assert Example.objects.count() == 1
    html = page.get(URL).content.decode()
    assert f"Stored as example {example.pk}" in html and "(1 of 3)" in html


def test_another_users_conversation_is_not_found(page, red_round, validator, client):
    _send(page, "Hello?")
    conversation = Conversation.objects.get()
    client.force_login(validator)
    assert (
        client.post(URL + "judge/", {"conversation": conversation.pk, "rubric-supported": "yes"}).status_code
        == 404
    )
    refused = _send(client, "Mine now?", conversation=conversation.pk, stream=True)
    assert refused.status_code == 404
    assert Turn.objects.count() == 1


def test_leaving_a_conversation_unjudged_starts_a_new_one(page):
    _send(page, "Hello?")
    conversation = Conversation.objects.get()
    page.post(URL + "new/", {"conversation": conversation.pk})
    conversation.refresh_from_db()
    assert conversation.status == "abandoned"
    assert "(1 of 3)" in page.get(URL).content.decode()


def test_a_multiple_choice_item_is_decided_on_the_server_and_shown(page, smollm2):
    context_id = _context_id()
    data = {
        "client_token": str(uuid.uuid4()),
        "context": context_id,
        "question": "How long is the Amazon?",
        "answer": "About 6,400 km",
        "negative": ["About 7,000 km", "About 4,000 miles", ""],
    }
    response = page.post(URL + "choice/", data)
    example = Example.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{URL}choice/?last={example.pk}"
    html = page.get(response["Location"]).content.decode()
    picked, answer = example.metadata["picked"], example.target["answer"]
    items = re.findall(r'<li dir="auto" class="wrap-anywhere">(.*?)</li>', html)
    assert len(items) == 3
    assert [("(correct)" in item, "pick)" in item) for item in items] == [
        (i == answer, i == picked) for i in range(3)
    ]
    assert items[answer].startswith("About 6,400 km <strong>(correct)</strong>")
    # Refused: one negative only; what was typed stays.
    bad = page.post(URL + "choice/", {**data, "client_token": str(uuid.uuid4()), "negative": ["Only one"]})
    html = bad.content.decode()
    assert bad.status_code == 200 and "Write at least 2 wrong answers" in html and 'value="Only one"' in html
    assert Example.objects.count() == 1


def test_judged_conversations_and_choice_items_count_in_the_session_tally(page):
    _send(page, "How long is the Amazon?")
    conversation = Conversation.objects.get()
    page.post(
        URL + "judge/",
        {
            "conversation": conversation.pk,
            "rubric-supported": "no",
            "rubric-helpful": "3",
            "category": ["fabrication"],
        },
    )
    judged = Example.objects.get()
    outcome = page.get(f"/examples/{judged.pk}/")
    assert outcome.context["tally"]["text"] == "1 of 1 fooled the model in this session."
    page.post(
        URL + "choice/",
        {
            "client_token": str(uuid.uuid4()),
            "context": _context_id(),
            "question": "How long is the Amazon?",
            "answer": "About 6,400 km",
            "negative": ["About 7,000 km", "About 4,000 miles"],
        },
    )
    item = Example.objects.exclude(pk=judged.pk).get()
    fooled = 1 + int(item.model_wrong)  # the judged failure, and the item if the target picked wrong
    tally = page.get(f"/examples/{item.pk}/").context["tally"]
    assert (tally["written"], tally["text"]) == (2, f"{fooled} of 2 fooled the model in this session.")


def test_the_judge_form_carries_the_answers_shown_and_a_stale_or_second_judgement_is_refused(page):
    assert 'name="answered_turns" value="0"' in page.get(URL).content.decode()
    _send(page, "How long is the Amazon?")
    conversation = Conversation.objects.get()
    assert 'name="answered_turns" value="1"' in page.get(URL).content.decode()
    # Another tab went on with the conversation: its second answer is stored, this page showed one.
    Turn.objects.create(conversation=conversation, index=1, prompt="Sure?", answer="Yes.", status="answered")
    form = {
        "conversation": conversation.pk,
        "rubric-supported": "no",
        "rubric-helpful": "3",
        "category": ["fabrication"],
        "answered_turns": "1",
    }
    stale = page.post(URL + "judge/", form)
    html = stale.content.decode()
    assert stale.status_code == 409 and not Example.objects.exists()
    assert "The conversation has 2 answered message(s), but the page you judged from showed 1" in html
    assert "Yes." in html and 'name="answered_turns" value="2"' in html  # now shown, to judge
    # The answers chosen come back chosen, the category ticked too.
    assert 'value="fabrication" checked' in html
    assert page.post(URL + "judge/", {**form, "answered_turns": "2"}).status_code == 302
    example = Example.objects.get()
    assert f"Stored as example {example.pk}" in page.get(URL).content.decode()  # the redirect's page
    # A second judgement with other answers (a second tab, a changed mind): refused, saying the stored one.
    second = page.post(
        URL + "judge/", {**form, "answered_turns": "2", "rubric-supported": "yes", "category": []}
    )
    html = second.content.decode()
    assert second.status_code == 409
    assert (
        f"This conversation was already judged (example {example.pk}: a failure of the model (supported: "
        "no, helpful: 3; categories: fabrication)). Your new answers were not stored."
    ) in html
    assert "Stored as example" not in html
    example.refresh_from_db()
    assert (example.target, Example.objects.count()) == ({"supported": "no", "helpful": "3"}, 1)


def test_over_the_turn_rate_a_message_is_refused_429_and_kept_in_the_box(page, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "red_team_turn": "2/min",
        },
    }
    first = _send(page, "Hello?")
    conversation = Conversation.objects.get().pk
    _send(page, "Again?", conversation=conversation)
    third = _send(page, "Third time?", conversation=conversation)
    assert third.status_code == 429 and 1 <= int(third["Retry-After"]) <= 60
    body = third.content.decode()
    assert "faster than this server allows (2/min per person)" in body and "Third time?" in body
    assert first.status_code == 302 and Turn.objects.count() == 2
