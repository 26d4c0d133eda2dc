"""A request that would wait for the target beyond the process's bound (engine/runtime/slots.py,
"The line is bounded") is refused at once, 503 with ``Retry-After`` and how many wait, before anything
is stored: on the red-teaming API, the page (with and without its script) and multiple-choice items."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from annotation.models import Conversation, Example, Turn
from annotation.red_team.conversations import send_turn
from engine.runtime.slots import GENERATION_SLOTS, QueueFull
from tests.factories.red_team import make_passage, make_red_team_round
from tests.helpers.api import client_for
from tests.helpers.slots import full_generation_line

URL = "/tasks/red-team/red-team/"
BUSY = "The model is busy: 2 answers are waiting for it on this server already; try again in about {} s"


def said(seconds: int, kept: bool = True) -> str:
    """The refusal's message with the line full of 2 waiters, told ``seconds`` to wait; with ``kept``, the
    place of a named requester (a red-teamer's message) kept for ``seconds`` + 20 s."""
    return BUSY.format(seconds) + (f"; your place in line is kept for {seconds + 20} s." if kept else ".")


@pytest.fixture
def red_round(db, smollm2_dir):
    return make_red_team_round(smollm2_dir)


@pytest.fixture
def full_line():
    """The process's line bounded at 2 waiters and full: one generation holds the slot, two wait. Yields
    the seconds a first refusal tells (``GENERATION_SLOTS.retry_after`` before any is kept)."""
    with full_generation_line(2):
        yield GENERATION_SLOTS.retry_after()


def _refused_with_retry_after(response, seconds: int) -> None:
    assert response.status_code == 503
    assert response["Retry-After"] == str(seconds)


@pytest.mark.parametrize("stream", [False, True])
def test_the_api_answers_503_with_the_lines_length_and_stores_no_turn(
    red_round, annotator, full_line, stream
):
    api = client_for(annotator)
    started = api.post(
        "/api/tasks/red-team/conversations/", {"context": make_passage(red_round).pk}, format="json"
    )
    assert started.status_code == 201  # starting a conversation generates nothing
    headers = {"HTTP_ACCEPT": "text/event-stream"} if stream else {}
    refused = api.post(
        f"/api/conversations/{started.json()['id']}/turns/",
        {"prompt": "How long is the Amazon?", "client_token": str(uuid.uuid4())},
        format="json",
        **headers,
    )
    _refused_with_retry_after(refused, full_line)
    assert refused["Content-Type"] == "application/json"  # no stream began
    assert refused.json() == {
        "detail": said(full_line),
        "code": "queue_full",
        "waiting": 2,
        "kept": full_line + 20,
    }
    assert not Turn.objects.exists()
    assert len(GENERATION_SLOTS._line) == 2  # the refused request left nothing in line


def test_the_page_without_its_script_says_why_keeps_the_message_and_stores_nothing(
    client, annotator, red_round, full_line
):
    client.force_login(annotator)
    context = make_passage(red_round)
    data = {"prompt": "How long is the Amazon?", "client_token": str(uuid.uuid4()), "context": context.pk}
    refused = client.post(URL + "send/", data)
    _refused_with_retry_after(refused, full_line)
    html = refused.content.decode()
    assert said(full_line) in html
    assert "How long is the Amazon?</textarea>" in html  # the message stays in the box
    assert not Conversation.objects.exists() and not Turn.objects.exists()


def test_the_pages_script_gets_the_reason_as_text(client, annotator, red_round, full_line):
    client.force_login(annotator)
    context = make_passage(red_round)
    data = {"prompt": "How long is the Amazon?", "client_token": str(uuid.uuid4()), "context": context.pk}
    refused = client.post(URL + "send/", data, HTTP_ACCEPT="text/event-stream")
    _refused_with_retry_after(refused, full_line)
    assert refused["Content-Type"] == "text/plain; charset=utf-8"
    assert refused.content.decode() == said(full_line)
    assert not Conversation.objects.exists() and not Turn.objects.exists()


def test_a_second_message_of_an_open_conversation_is_refused_the_same_way(
    client, annotator, red_round, full_line
):
    client.force_login(annotator)
    conversation = Conversation.objects.create(
        round=red_round,
        annotator=annotator,
        model=red_round.targets.get().model,
        context=make_passage(red_round),
    )
    data = {"prompt": "How long?", "client_token": str(uuid.uuid4()), "conversation": conversation.pk}
    refused = client.post(URL + "send/", data)
    _refused_with_retry_after(refused, full_line)
    assert said(full_line) in refused.content.decode() and not Turn.objects.exists()


def test_a_multiple_choice_item_is_refused_with_what_was_typed_and_not_stored(
    client, annotator, red_round, full_line
):
    context = make_passage(red_round)
    body = {
        "context": context.pk,
        "question": "How long is the Amazon?",
        "answer": "About 6,400 km",
        "negatives": ["About 7,000 km", "About 4,000 miles"],
        "client_token": str(uuid.uuid4()),
    }
    refused = client_for(annotator).post("/api/tasks/red-team/choice-items/", body, format="json")
    _refused_with_retry_after(refused, full_line)
    # An item is scored as it is checked, with no promise before: no place is kept.
    busy = {"detail": said(full_line, kept=False), "code": "queue_full", "waiting": 2, "kept": None}
    assert refused.json() == busy
    client.force_login(annotator)
    page = client.post(
        URL + "choice/",
        {**body, "negative": body["negatives"], "client_token": str(uuid.uuid4())},
    )
    _refused_with_retry_after(page, full_line)
    html = page.content.decode()
    assert said(full_line, kept=False) in html and 'value="About 7,000 km"' in html
    assert not Example.objects.exists()


def test_a_refused_red_teamer_keeps_the_place_that_frees_from_another_who_comes_after(
    red_round, annotator, password
):
    from tests.factories.accounts import UserFactory

    holder = GENERATION_SLOTS.join()
    assert GENERATION_SLOTS.wait(holder, 0)
    waiter = GENERATION_SLOTS.join()
    GENERATION_SLOTS.max_waiting = 1
    late = UserFactory(username="late", password=password)
    now = [0.0]
    GENERATION_SLOTS._clock = lambda: now[0]  # moved by hand: the time told to come back
    try:
        conversations = {}
        for who in (annotator, late):
            started = client_for(who).post(
                "/api/tasks/red-team/conversations/", {"context": make_passage(red_round).pk}, format="json"
            )
            conversations[who.pk] = Conversation.objects.get(pk=started.json()["id"])

        def send(who):
            return client_for(who).post(
                f"/api/conversations/{conversations[who.pk].pk}/turns/",
                {"prompt": "How long is the Amazon?", "client_token": str(uuid.uuid4())},
                format="json",
            )

        first = send(annotator)
        assert first.status_code == 503 and first.json()["waiting"] == 1
        GENERATION_SLOTS.leave(waiter)  # a place frees up
        now[0] = int(first["Retry-After"])  # the time the first was told to come back has come
        refused = send(late)  # it is kept for the one refused first
        assert refused.status_code == 503 and refused.json()["waiting"] == 1
        assert not Turn.objects.exists()
        stream = send_turn(  # the first comes back: stored, its answer promised a place
            conversation=conversations[annotator.pk], annotator=annotator, prompt="How long is the Amazon?"
        )
        assert [t.conversation_id for t in Turn.objects.all()] == [conversations[annotator.pk].pk]
        assert list(GENERATION_SLOTS._returning) == [late.pk]
        del stream
    finally:
        GENERATION_SLOTS.withdraw()
        GENERATION_SLOTS.max_waiting = None
        GENERATION_SLOTS._returning.clear()
        GENERATION_SLOTS._clock = time.monotonic
        GENERATION_SLOTS.leave(holder)


def test_a_message_refused_for_another_reason_gives_its_place_in_line_back(client, annotator, red_round):
    """The page promised the request a place before it started the conversation; the text was then
    refused (too long): at the request's end the place is free again, not counted as waiting for 30 s."""
    holder = GENERATION_SLOTS.join()
    assert GENERATION_SLOTS.wait(holder, 0)
    GENERATION_SLOTS.max_waiting = 1
    try:
        client.force_login(annotator)
        data = {
            "prompt": "x" * 10_000,
            "client_token": str(uuid.uuid4()),
            "context": make_passage(red_round).pk,
        }
        assert client.post(URL + "send/", data).status_code == 400
        seen = []  # counted from another thread: a thread's own promise is not in its count
        other = threading.Thread(target=lambda: seen.append(GENERATION_SLOTS.waiting()))
        other.start()
        other.join()
        assert seen == [0]
    finally:
        GENERATION_SLOTS.max_waiting = None
        GENERATION_SLOTS.leave(holder)


@pytest.fixture
def side_by_side_round(db, smollm2_dir):
    """A red-teaming round whose first messages are answered by two local registrations of SmolLM2."""
    import copy

    from models_registry.models import RegisteredModel, RoundTarget
    from tasks.builtin_configs import RED_TEAM_CONFIG

    config = copy.deepcopy(RED_TEAM_CONFIG)
    config["red_team"]["side_by_side"] = {"models": 2}
    generation = {"max_new_tokens": 32, "temperature": 0.0}
    round_ = make_red_team_round(smollm2_dir, config=config, generation=generation)
    second = RegisteredModel.objects.create(
        task=round_.task, name="smollm2-too", path=str(smollm2_dir), status="ready", generation=generation
    )
    RoundTarget.objects.create(round=round_, model=second, position=1)
    return round_


def test_a_side_by_side_message_takes_a_place_for_each_answer_or_is_refused_whole(
    side_by_side_round, annotator
):
    # Room for one more waiter, two answers to ask: refused before anything is stored (before, one
    # place was promised, and the second answer was stored failed with "The model is busy").
    api = client_for(annotator)
    started = api.post(
        "/api/tasks/red-team/conversations/", {"context": make_passage(side_by_side_round).pk}, format="json"
    )
    assert started.status_code == 201
    with full_generation_line(2):
        GENERATION_SLOTS.max_waiting = 3
        conversation = Conversation.objects.get(pk=started.json()["id"])
        with pytest.raises(QueueFull):  # the service refuses before it stores (nothing generated yet)
            send_turn(conversation=conversation, annotator=annotator, prompt="How long is the Amazon?")
        GENERATION_SLOTS.withdraw()
        refused = api.post(
            f"/api/conversations/{started.json()['id']}/turns/",
            {"prompt": "How long is the Amazon?", "client_token": str(uuid.uuid4())},
            format="json",
        )
        assert refused.status_code == 503 and refused.json()["code"] == "queue_full"
        assert not Turn.objects.exists()
        assert len(GENERATION_SLOTS._line) == 2


def test_with_one_slot_the_answer_in_line_is_not_asked_while_the_other_is_generated(
    side_by_side_round, annotator
):
    # A process with one generation slot (the tests', a job's): answer B waits in line while A is
    # generated. Asking B for a piece blocks up to a second each time, so B is asked again only once A
    # has ended: before, every piece of A came a second apart, one "queued" piece of B between each two.
    from annotation.red_team.conversations import start_conversation
    from models_registry.serving import Waiting

    assert GENERATION_SLOTS.size == 1
    conversation = start_conversation(
        round_=side_by_side_round, annotator=annotator, context=make_passage(side_by_side_round)
    )
    streams = send_turn(conversation=conversation, annotator=annotator, prompt="How long is the Amazon?")
    pieces = list(streams.pieces())
    queued = [slot for slot, piece in pieces if isinstance(piece, Waiting)]
    assert queued in ([], [1])  # at most once, while A was generated
    texts = [slot for slot, piece in pieces if piece and not isinstance(piece, Waiting)]
    assert texts == sorted(texts) and set(texts) == {0, 1}  # all of A, then all of B
    assert [t.status for t in (Turn.objects.get(pk=t.pk) for t in streams.turns)] == ["answered"] * 2
