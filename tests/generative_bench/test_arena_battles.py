"""The arena's battles against the real SmolLM2 (docs/benchmarking.md, "Arena"): two local models of the
same weights with different system prompts, or one local and one remote on the loopback chat server.

A prompt sent from the page is answered by both, shown side by side with no model name in the page;
the vote reveals the names. A resent prompt is one battle, a second vote records nothing, another
user's battle is a 404, a crashed model fails its battle, and a prompt from a round carries its
passage."""

from __future__ import annotations

import re
import threading
import time
import uuid

import pytest
from django.db import connection

from engine.runtime.generative import Generation
from engine.runtime.slots import GENERATION_SLOTS
from generative_bench.arena import services
from generative_bench.models import Battle
from models_registry.generative import chat_stream
from models_registry.models import RegisteredModel
from tasks import qualification
from tests.factories.arena import NAME_A, NAME_B, PIRATE, make_arena, settled_conversation
from tests.helpers.chat_server import ChatServer
from tests.helpers.stub_streams import StubStream

ARENA = "/tasks/red-team/arena/"


@pytest.fixture
def arena(db, smollm2_dir):
    return make_arena(smollm2_dir)


def _greedy(model: RegisteredModel, messages: list[dict]) -> str:
    return chat_stream(model, messages).drain().text


def _start(client, prompt: str, token: str | None = None):
    return client.post(ARENA + "battles/", {"prompt": prompt, "client_token": token or str(uuid.uuid4())})


def test_two_answers_side_by_side_no_name_until_the_vote_then_both_names(client, arena, annotator):
    task, quokka, wombat = arena
    client.force_login(annotator)
    page = client.get(ARENA)
    assert page.status_code == 200
    assert b"Send to two models" in page.content
    assert NAME_A.encode() not in page.content and NAME_B.encode() not in page.content

    prompt = "How long is the Amazon? \U0001f30a\r\nעברית"  # emoji, CRLF, right-to-left
    sent = _start(client, prompt)
    battle = Battle.objects.get()
    assert sent.status_code == 302 and sent["Location"] == f"{ARENA}battles/{battle.pk}/"
    assert battle.status == "ready" and battle.voter == annotator and battle.round == task.current_round
    # CRLF is normalised before the models read it; the emoji and the Hebrew are kept.
    assert battle.messages == [{"role": "user", "content": "How long is the Amazon? \U0001f30a\nעברית"}]
    assert {battle.model_a, battle.model_b} == {quokka, wombat}
    # Each answer is its own model's greedy answer: the pirate's system prompt reached only the pirate.
    assert battle.answer_a == _greedy(battle.model_a, battle.messages)
    assert battle.answer_b == _greedy(battle.model_b, battle.messages)
    assert battle.answer_a != battle.answer_b
    assert battle.generation_a["output_tokens"] <= 8 and battle.generation_b["output_tokens"] <= 8

    shown = client.get(sent["Location"])
    html = shown.content.decode()
    assert shown.status_code == 200
    # Not in the page at all before the vote: not in text, attributes, title or scripts; nor the
    # models' own instructions.
    assert NAME_A not in html and NAME_B not in html and PIRATE not in html
    assert _text(battle.answer_a) in html and _text(battle.answer_b) in html
    for label in ("A is better", "B is better", "Tie", "Both are bad"):
        assert f">{label}</button>" in html

    voted = client.post(f"{ARENA}battles/{battle.pk}/vote/", {"vote": "b"}, follow=True)
    html = voted.content.decode()
    battle.refresh_from_db()
    assert (battle.status, battle.vote) == ("voted", "b") and battle.voted_at is not None
    assert "Your vote is recorded: B is better." in html
    name_a, name_b = battle.model_a.name, battle.model_b.name
    assert re.search(
        rf'Answer A was <strong class="reveal-a">{name_a}</strong>; answer B was '
        rf'<strong class="reveal-b">{name_b}</strong>',
        html,
    )
    assert "Next battle" in html and "A is better</button>" not in html


def _text(answer: str) -> str:
    """How the page writes an answer's first line (escaped by the template)."""
    from django.utils.html import escape

    return escape(answer.split("\n")[0])


def test_a_resent_prompt_is_one_battle_and_a_second_vote_records_nothing(client, arena, annotator):
    client.force_login(annotator)
    token = str(uuid.uuid4())
    first = _start(client, "Where does the Amazon flow?", token)
    again = _start(client, "Where does the Amazon flow?", token)
    battle = Battle.objects.get()
    assert first["Location"] == again["Location"] == f"{ARENA}battles/{battle.pk}/"
    url = f"{ARENA}battles/{battle.pk}/vote/"
    client.post(url, {"vote": "tie"})
    second = client.post(url, {"vote": "a"}, follow=True)
    battle.refresh_from_db()
    assert battle.vote == "tie"
    assert "Your vote on this battle was already recorded (Tie); it counts once." in second.content.decode()
    assert Battle.objects.filter(status="voted").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_tabs_voting_at_once_record_one_vote(smollm2_dir, annotator):
    from tests.factories.arena import stored_battle

    task, quokka, wombat = make_arena(smollm2_dir)
    battle = stored_battle(task, annotator, quokka, wombat)
    barrier = threading.Barrier(2)
    results: list[tuple[str, bool]] = []

    def tab(choice: str):
        try:
            barrier.wait()
            stored, recorded = services.vote(battle=battle, voter=annotator, vote=choice)
            results.append((stored.vote, recorded))
        finally:
            connection.close()

    threads = [threading.Thread(target=tab, args=(v,)) for v in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    battle.refresh_from_db()
    # One UPDATE ... WHERE status = 'ready' matched: its vote is stored, and both tabs are told it.
    assert sorted(r for _, r in results) == [False, True]
    assert {v for v, _ in results} == {battle.vote}
    assert battle.vote == next(v for v, r in results if r)


def test_another_users_battle_is_a_404(client, arena, annotator, validator):
    task, quokka, wombat = arena
    from tests.factories.arena import stored_battle

    battle = stored_battle(task, annotator, quokka, wombat)
    client.force_login(validator)
    assert client.get(f"{ARENA}battles/{battle.pk}/").status_code == 404
    assert client.post(f"{ARENA}battles/{battle.pk}/vote/", {"vote": "a"}).status_code == 404
    assert client.get(f"{ARENA}battles/99999999999999999999/").status_code == 404
    battle.refresh_from_db()
    assert battle.status == "ready" and battle.vote == ""
    with pytest.raises(services.ArenaError) as refused:
        services.vote(battle=battle, voter=validator, vote="a")
    assert refused.value.code == "not_found"


def test_a_prompt_from_a_round_carries_its_passage(client, arena, annotator, validator):
    task, _, _ = arena
    example = settled_conversation(task.current_round, validator, first="Which country? 🇧🇷")
    client.force_login(annotator)
    page = client.get(ARENA)
    assert (
        b"Use a prompt from round 1</button>" in page.content and b"(1 settled conversation)" in page.content
    )
    sent = client.post(ARENA + "battles/", {"round": "1", "client_token": str(uuid.uuid4())})
    battle = Battle.objects.get()
    assert sent["Location"] == f"{ARENA}battles/{battle.pk}/"
    assert battle.source_example == example and battle.round == task.current_round
    # The passage as the red-teaming target read it (annotation.chat_format.context_message), then the
    # conversation's first message only.
    assert battle.messages == [
        {
            "role": "system",
            "content": "Article: Amazon\n\nPassage: The Amazon river flows through Brazil. It is about "
            "6,400 km long.",
        },
        {"role": "user", "content": "Which country? 🇧🇷"},
    ]
    shown = client.get(sent["Location"]).content.decode()
    assert "The passage both models read" in shown and "from round 1" in shown


def _remote(task, server, chat_model_name: str, *, max_new_tokens: int) -> RegisteredModel:
    """A ready, published remote model of ``task`` on the loopback ``server`` named
    ``remote-<chat_model_name>`` (a ``fault-*`` name picks the server's misbehaviour), greedy."""
    return RegisteredModel.objects.create(
        task=task,
        name=f"remote-{chat_model_name}",
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        endpoint_url=server.base_url,
        chat_model_name=chat_model_name,
        status="ready",
        is_published=True,
        generation={"max_new_tokens": max_new_tokens, "temperature": 0.0},
    )


def test_a_crashed_remote_model_fails_the_battle_and_takes_no_vote(
    client, db, smollm2_dir, smollm2, annotator
):
    task, local, pirate = make_arena(smollm2_dir)
    pirate.delete()
    with ChatServer(smollm2) as server:
        remote = _remote(task, server, "fault-401", max_new_tokens=8)
        battle = services.start_battle(task=task, voter=annotator, prompt="Hello?", client_token=uuid.uuid4())
    assert {battle.model_a, battle.model_b} == {local, remote}
    side = "A" if battle.model_a == remote else "B"
    assert battle.status == "failed"
    assert battle.error == (
        f"Answer {side} failed: the chat server answered 401 unauthorized: check the API key the operator "
        "named. No vote is taken on this battle; start another."
    )
    with pytest.raises(services.ArenaError) as refused:
        services.vote(battle=battle, voter=annotator, vote="a")
    assert refused.value.code == "not_ready"
    client.force_login(annotator)
    page = client.get(f"{ARENA}battles/{battle.pk}/").content.decode()
    assert "failed: the chat server answered 401" in page and "A is better" not in page


def test_an_answer_cut_short_fails_the_battle(arena, annotator, monkeypatch):
    # A voter would compare a whole answer with a piece of one: no vote is taken.
    task, quokka, wombat = arena

    class CutShort(StubStream):
        def __init__(self, model, messages):
            self.model = model

        def answer(self):
            finish = "cut_short" if self.model == wombat else "stop"
            return Generation(text="Half an", finish_reason=finish, model=self.model.name, decoding={})

    monkeypatch.setattr(services, "chat_stream", CutShort)
    battle = services.start_battle(task=task, voter=annotator, prompt="Hello?", client_token=uuid.uuid4())
    side = "A" if battle.model_a == wombat else "B"
    assert battle.status == "failed"
    assert battle.error == (
        f"Answer {side} failed: it was cut short. No vote is taken on this battle; start another."
    )


def test_one_local_and_one_remote_model_answer_alike(db, smollm2_dir, smollm2, annotator, monkeypatch):
    """The loopback server serves the same SmolLM2: the remote answer equals the local one, token for
    token, and each keeps its own system prompt (the remote model is sent the pirate's)."""
    # The server runs in this process and its answer takes a generation slot here, while the local
    # answer holds one until it is read to its end: with the tests' one slot, the two answers read
    # together would wait on each other. A real remote server has its own.
    monkeypatch.setattr(GENERATION_SLOTS, "size", 2)
    task, local, pirate = make_arena(smollm2_dir)
    pirate.delete()
    with ChatServer(smollm2) as server:
        remote = RegisteredModel.objects.create(
            task=task,
            name="remote-smol",
            source=RegisteredModel.Source.CHAT_ENDPOINT,
            endpoint_url=server.base_url,
            chat_model_name="smollm2",
            status="ready",
            generation={"max_new_tokens": 8, "temperature": 0.0, "system_prompt": PIRATE},
        )
        battle = services.start_battle(task=task, voter=annotator, prompt="Name a river.")
        sent = server.requests[-1]["messages"]
    assert battle.status == "ready"
    answers = {battle.model_a: battle.answer_a, battle.model_b: battle.answer_b}
    assert sent[0] == {"role": "system", "content": PIRATE}
    local_pirate = RegisteredModel(task=task, name="x", path=str(smollm2_dir), generation=remote.generation)
    assert answers[remote] == _greedy(local_pirate, battle.messages)
    assert answers[local] == _greedy(local, battle.messages)


def test_fewer_than_two_ready_models_are_refused_and_nothing_is_stored(client, arena, annotator):
    task, quokka, wombat = arena
    wombat.status = "failed"
    wombat.save(update_fields=["status"])
    client.force_login(annotator)
    page = client.get(ARENA)
    assert b"The arena needs two ready generative models; this task has 1." in page.content
    refused = _start(client, "Hello?")
    assert refused.status_code == 409
    assert "The arena needs two ready generative models; this task has 1." in refused.content.decode()
    assert not Battle.objects.exists()


def test_refused_prompts_keep_the_text_and_store_nothing(client, arena, annotator):
    client.force_login(annotator)
    long = _start(client, "x" * 10_000)
    assert long.status_code == 400
    assert "Your prompt is too long: 10,000 characters, at most 4,000 allowed." in long.content.decode()
    blank = _start(client, " \u200b\n")
    assert blank.status_code == 400 and b"no visible character" in blank.content
    control = _start(client, "bad \u202e override")
    assert control.status_code == 400
    assert "bad \u202e override" in control.content.decode()  # kept in the box
    with pytest.raises(services.ArenaError) as surrogate:
        services.start_battle(task=arena[0], voter=annotator, prompt="bad \ud800")
    assert surrogate.value.code == "invalid"
    with pytest.raises(services.ArenaError) as both:
        services.start_battle(task=arena[0], voter=annotator, prompt="a", messages=[])
    assert both.value.code == "invalid"
    assert not Battle.objects.exists()


def test_who_may_battle(client, arena, annotator, blocked, outsider, hate_task):
    task, quokka, wombat = arena
    assert client.get(ARENA).status_code == 302  # to the log-in page
    client.force_login(blocked)
    page = client.get(ARENA)
    assert page.status_code == 403
    assert "Your account is blocked from voting in the arena." in page.content.decode()
    assert b"Send to two models" not in page.content
    assert _start(client, "Hi").status_code == 403 and not Battle.objects.exists()
    qualification.hold_for_review(task=task, user=outsider, reason="gold accuracy 40%")
    client.force_login(outsider)
    held = client.get(ARENA)
    assert held.status_code == 403 and b"An owner is reviewing your work on this task" in held.content
    client.force_login(annotator)
    assert client.get("/tasks/hate-speech/arena/").status_code == 404  # not a red-teaming task
    assert client.get("/tasks/hate-speech/arena/ranking/").status_code == 404


def test_both_answers_are_asked_together_not_one_after_another(db, annotator):
    """Each remote server holds its answer after the first piece until both answers have begun: asked
    one after another, the second would wait for the first's whole answer."""
    from tests.factories.red_team import make_side_by_side_round

    with ChatServer(None) as server:
        server.reply = lambda body: f"{body['model']} says hello"
        server.hold = threading.Event()
        round_ = make_side_by_side_round(server.base_url, names=("alpha", "beta"))
        RegisteredModel.objects.filter(task=round_.task).update(is_published=True)
        seen = []

        def release_when_both_began():
            deadline = time.monotonic() + 5
            while server.first_sent < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(server.first_sent)
            server.hold.set()

        watcher = threading.Thread(target=release_when_both_began)
        watcher.start()
        battle = services.start_battle(task=round_.task, voter=annotator, prompt="Hello?")
        watcher.join()
    assert seen == [2]  # both answers were under way at once
    assert battle.status == "ready"
    assert {battle.answer_a, battle.answer_b} == {"alpha says hello", "beta says hello"}


def test_a_model_that_fails_while_the_other_answers_fails_the_battle_in_its_own_name(
    db, smollm2_dir, smollm2, annotator
):
    """The failing answer is named, not the one stopped because of it (stopped, it keeps what came)."""
    task, local, pirate = make_arena(smollm2_dir, max_new_tokens=24)
    pirate.delete()
    with ChatServer(smollm2) as server:
        remote = _remote(task, server, "fault-garbage", max_new_tokens=24)
        battle = services.start_battle(task=task, voter=annotator, prompt="Count to ten.")
    side = "A" if battle.model_a == remote else "B"
    assert battle.status == "failed"
    assert battle.error.startswith(f"Answer {side} failed: the stream broke off")
