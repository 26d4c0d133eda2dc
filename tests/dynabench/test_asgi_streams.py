"""Streamed answers under the production profile's ASGI serving (uvicorn, ``dynabench.asgi``): they stream
as they come (not read whole first), one process carries many at once without a thread each busy, and a
reader who leaves, a server that breaks or stalls mid-answer each leave the turn stored with what came,
its reason and its cost (docs/serving.md, "Many streams per worker").

The remote target is the loopback ``ChatServer`` (tests/helpers/chat_server.py); the ASGI server runs in
a thread of the test process (tests/helpers/asgi_server.py).
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal

import httpx2
import pytest
from rest_framework.authtoken.models import Token

from annotation.models import BudgetCharge, Conversation, RoundBudget, Turn
from annotation.red_team import conversations
from models_registry.models import RegisteredModel
from models_registry.serving import AnswerStream, Generation
from tasks.models import Context
from tests.factories.accounts import UserFactory
from tests.factories.red_team import make_remote_red_team_round
from tests.helpers.asgi_server import AsgiServer
from tests.helpers.chat_server import ChatServer

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "Hello there, friend."
PRICES = {"price_input_per_million": 2.0, "price_output_per_million": 10.0}


@pytest.fixture
def chat_server():
    with ChatServer(None) as server:
        server.reply = lambda request: ANSWER
        yield server


@pytest.fixture
def asgi(settings):
    settings.DYNABENCH_RED_TEAM_TURN_RATE = "10000/min"
    with AsgiServer() as server:
        yield server


def remote_round(base_url: str, chat_model_name: str = "echo", **generation):
    """A red-teaming task whose round 1 targets a model on the chat server at ``base_url``, and its
    passage."""
    round_ = make_remote_red_team_round(base_url, chat_model_name=chat_model_name, generation=generation)
    passage = Context.objects.create(
        task=round_.task, round=round_, data={"title": "T", "passage": "A passage."}
    )
    return round_, passage


def _writer(number: int):
    user = UserFactory(username=f"writer{number}")
    return user, {"Authorization": f"Token {Token.objects.create(user=user).key}"}


def _conversation(http, url, headers, passage) -> int:
    response = http.post(
        f"{url}/api/tasks/red-remote/conversations/", json={"context": passage.pk}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _events(lines):
    """``(name, data)`` of each server-sent event, as the lines of a streamed response arrive."""
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])


def test_a_turn_streams_its_first_piece_while_the_server_is_still_answering(asgi, chat_server):
    _, passage = remote_round(chat_server.base_url)
    chat_server.hold = threading.Event()
    _, headers = _writer(1)
    with httpx2.Client(trust_env=False, timeout=30) as http:
        conversation = _conversation(http, asgi.url, headers, passage)
        turns = f"{asgi.url}/api/conversations/{conversation}/turns/?stream=1"
        with http.stream("POST", turns, json={"prompt": "Hi!"}, headers=headers) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
            events = _events(response.iter_lines())
            assert next(events) == ("turn", {"turn": 0, "conversation": conversation})
            # The first half came while the chat server holds the second: streamed, not read whole first.
            assert next(events) == ("token", {"text": ANSWER[: len(ANSWER) // 2]})
            assert not chat_server.hold.is_set()
            chat_server.hold.set()
            rest = list(events)
    assert rest[0] == ("token", {"text": ANSWER[len(ANSWER) // 2 :]})
    name, done = rest[-1]
    assert name == "done" and done["answer"] == ANSWER and done["status"] == "answered"
    assert done["finish_reason"] == "stop"
    turn = Turn.objects.get(conversation_id=conversation)
    assert (turn.answer, turn.status, turn.generation["output_tokens"]) == (ANSWER, "answered", 2)


def test_one_process_holds_sixty_open_streams_at_once(asgi, chat_server):
    """Sixty people's answers are all under way at the same moment (each has its first piece while the
    chat server holds every second piece), where a gthread worker of 4 threads would hold 4."""
    remote_round(chat_server.base_url)
    passage = Context.objects.get()
    chat_server.hold = threading.Event()
    people = [_writer(n) for n in range(60)]
    firsts = threading.Barrier(len(people) + 1, timeout=60)

    def talk(person):
        _, headers = person
        with httpx2.Client(trust_env=False, timeout=60) as http:
            conversation = _conversation(http, asgi.url, headers, passage)
            turns = f"{asgi.url}/api/conversations/{conversation}/turns/?stream=1"
            with http.stream("POST", turns, json={"prompt": "Hi!"}, headers=headers) as response:
                events = _events(response.iter_lines())
                next(events), next(events)  # the turn, and the first piece
                firsts.wait()
                return [name for name, _ in events][-1]

    with ThreadPoolExecutor(len(people)) as pool:
        ends = [pool.submit(talk, person) for person in people]
        firsts.wait()  # every reader has its first piece: sixty streams open in one server
        assert chat_server.first_sent == 60
        chat_server.hold.set()
        assert [end.result(timeout=60) for end in ends] == ["done"] * 60
    assert Turn.objects.filter(status="answered", answer=ANSWER).count() == 60


def _wait_for(condition, seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.05)


@contextmanager
def _first_half_read(asgi, chat_server, passage):
    """A writer's first message streaming through ``asgi``, its first half read while ``chat_server``
    holds the rest (``chat_server.hold`` lets it go): yields ``(conversation id, the events to come,
    the writer's headers)``; the connection closes on leaving."""
    chat_server.hold = threading.Event()
    _, headers = _writer(1)
    with httpx2.Client(trust_env=False, timeout=30) as http:
        conversation = _conversation(http, asgi.url, headers, passage)
        turns = f"{asgi.url}/api/conversations/{conversation}/turns/?stream=1"
        with http.stream("POST", turns, json={"prompt": "Hi!"}, headers=headers) as response:
            events = _events(response.iter_lines())
            next(events), next(events)
            yield conversation, events, headers


def test_a_streaming_answer_writes_its_text_so_far_to_its_turn_while_it_answers(
    asgi, chat_server, monkeypatch
):
    monkeypatch.setattr(conversations, "CHECKPOINT_SECONDS", 0.0)
    _, passage = remote_round(chat_server.base_url)
    with _first_half_read(asgi, chat_server, passage) as (conversation, events, _):
        # The chat server holds the rest: the first half is written to the turn, still answering (a
        # process killed now would leave it).
        half = ANSWER[: len(ANSWER) // 2]
        _wait_for(lambda: Turn.objects.filter(conversation_id=conversation, answer=half).exists())
        assert Turn.objects.get(conversation_id=conversation).status == "answering"
        chat_server.hold.set()
        list(events)
    turn = Turn.objects.get(conversation_id=conversation)
    assert (turn.answer, turn.status) == (ANSWER, "answered")


def test_a_reader_who_leaves_mid_answer_leaves_the_turn_cut_short_and_charged(asgi, chat_server):
    round_, passage = remote_round(chat_server.base_url, **PRICES)
    RoundBudget.objects.create(round=round_, cap=Decimal("1"))
    with _first_half_read(asgi, chat_server, passage) as (conversation, _, headers):
        pass  # the connection is closed with the chat server still holding the rest
    _wait_for(lambda: Turn.objects.filter(conversation_id=conversation).exclude(status="answering").exists())
    chat_server.hold.set()
    turn = Turn.objects.get(conversation_id=conversation)
    assert (turn.answer, turn.status, turn.generation["finish_reason"]) == (
        ANSWER[: len(ANSWER) // 2],
        "answered",
        "cut_short",
    )
    # No usage came (the server was cut off before its last chunk): the reservation stays charged, once.
    charge = BudgetCharge.objects.get(turn=turn)
    assert charge.spent == charge.reserved and charge.spent > 0
    # The conversation goes on.
    with httpx2.Client(trust_env=False, timeout=30) as http:
        again = http.post(
            f"{asgi.url}/api/conversations/{conversation}/turns/", json={"prompt": "And?"}, headers=headers
        )
    assert again.status_code == 201 and again.json()["answer"] == ANSWER
    assert Conversation.objects.get(pk=conversation).turns.count() == 2


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("fault-cut", "the stream broke off: the chat server could not be reached"),
        (
            "fault-garbage",
            "the stream broke off: the chat server's answer could not be read (JSONDecodeError)",
        ),
        ("fault-stall", "the stream broke off: the chat server did not answer in time"),
    ],
)
def test_a_server_that_breaks_or_stalls_mid_answer_leaves_what_came_and_why(asgi, chat_server, fault, error):
    round_, passage = remote_round(chat_server.base_url, chat_model_name=fault, timeout=1.5, **PRICES)
    RoundBudget.objects.create(round=round_, cap=Decimal("1"))
    _, headers = _writer(1)
    with httpx2.Client(trust_env=False, timeout=30) as http:
        conversation = _conversation(http, asgi.url, headers, passage)
        turns = f"{asgi.url}/api/conversations/{conversation}/turns/?stream=1"
        with http.stream("POST", turns, json={"prompt": "Hi!"}, headers=headers) as response:
            events = list(_events(response.iter_lines()))
    assert [name for name, _ in events] == ["turn", "token", "token", "done"]
    done = events[-1][1]
    assert (done["answer"], done["status"], done["finish_reason"]) == ("Half an answer", "answered", "error")
    assert done["error"] == error
    turn = Turn.objects.get(conversation_id=conversation)
    assert (turn.answer, turn.error) == ("Half an answer", error)
    charge = BudgetCharge.objects.get(turn=turn)
    assert charge.spent == charge.reserved  # no usage came: the worst case is charged, once


class HeldStream(AnswerStream):
    """A local model's answer as the engine streams it (blocking pieces; read by an ASGI worker through
    ``pieces_in_thread``): "Hel", then "lo" once ``hold`` is set."""

    def __init__(self, hold: threading.Event):
        self.hold = hold
        super().__init__()

    def _run(self):
        text = ""
        try:
            for piece in ("Hel", "lo"):
                if piece == "lo":
                    self.hold.wait(30)
                text += piece
                yield piece
        finally:
            self.generation = Generation(
                text=text, finish_reason="stop", model="m", decoding={}, input_tokens=3, output_tokens=2
            )


def test_the_chat_completions_endpoint_streams_a_local_answer_as_it_comes(asgi, smollm2_dir, monkeypatch):
    """``/v1`` serves local models: their blocking stream is pulled by a thread and streamed from the
    event loop, piece by piece."""
    from models_registry.openai_compat import views
    from tests.factories.red_team import make_red_team_round

    round_ = make_red_team_round(smollm2_dir)
    RegisteredModel.objects.filter(pk=round_.targets.get().model_id).update(is_published=True)
    hold = threading.Event()
    monkeypatch.setattr(views, "chat_stream", lambda model, messages, decoding: HeldStream(hold))
    _, headers = _writer(1)
    body = {"model": "red-team/smollm2", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    with httpx2.Client(trust_env=False, timeout=30) as http:
        with http.stream("POST", f"{asgi.url}/v1/chat/completions", json=body, headers=headers) as response:
            assert response.status_code == 200, response.read()
            data = (line[6:] for line in response.iter_lines() if line.startswith("data: "))
            assert json.loads(next(data))["choices"][0]["delta"] == {"role": "assistant", "content": ""}
            assert json.loads(next(data))["choices"][0]["delta"] == {"content": "Hel"}
            assert not hold.is_set()  # the first piece came while the second was held
            hold.set()
            rest = [json.loads(d) if d != "[DONE]" else d for d in data]
    assert rest[0]["choices"][0]["delta"] == {"content": "lo"}
    assert rest[1]["choices"][0]["finish_reason"] == "stop"
    assert rest[-1] == "[DONE]"


def test_an_export_streams_whole_under_asgi(asgi, chat_server, annotator):
    from annotation.models import Example

    round_, _ = remote_round(chat_server.base_url)
    owner, headers = _writer(1)
    round_.task.owners.add(owner)
    for number in range(300):  # more than one trip to the request's thread (256 pieces)
        Example.objects.create(
            round=round_,
            annotator=annotator,
            inputs={"messages": [{"role": "user", "content": f"m{number} é😀"}]},
            target={},
            model_wrong=False,
            metadata={"mode": "conversation"},
        )
    with httpx2.Client(trust_env=False, timeout=30) as http:
        response = http.get(f"{asgi.url}/api/tasks/red-remote/export/?format=jsonl", headers=headers)
    assert response.status_code == 200, response.text
    records = [json.loads(line) for line in response.text.splitlines()]
    assert sorted(r["messages"][0]["content"] for r in records) == sorted(f"m{n} é😀" for n in range(300))


def test_a_side_by_side_first_message_streams_each_answer_in_its_slot(asgi, chat_server):
    from tests.factories.red_team import make_side_by_side_round

    round_ = make_side_by_side_round(chat_server.base_url, names=("alpha", "beta"))
    passage = Context.objects.create(
        task=round_.task, round=round_, data={"title": "T", "passage": "A passage."}
    )
    _, headers = _writer(1)
    with httpx2.Client(trust_env=False, timeout=30) as http:
        response = http.post(
            f"{asgi.url}/api/tasks/red-sbs/conversations/", json={"context": passage.pk}, headers=headers
        )
        conversation = response.json()["id"]
        turns = f"{asgi.url}/api/conversations/{conversation}/turns/?stream=1"
        with http.stream("POST", turns, json={"prompt": "Hi!"}, headers=headers) as streamed:
            events = list(_events(streamed.iter_lines()))
    assert events[0] == ("turn", {"turn": 0, "conversation": conversation, "answers": 2})
    text = {0: "", 1: ""}
    for name, data in events:
        if name == "token":
            text[data["slot"]] += data["text"]
    assert text == {0: ANSWER, 1: ANSWER}
    name, done = events[-1]
    assert name == "done" and [a["answer_of"] for a in done["answers"]] == ["A", "B"]
    assert all(a["status"] == "answered" and "model" not in a["generation"] for a in done["answers"])
    assert sorted(Turn.objects.filter(conversation_id=conversation).values_list("slot", "status")) == [
        (0, "answered"),
        (1, "answered"),
    ]
