"""A vote per turn in the arena (docs/benchmarking.md, "A vote per turn"; FastChat issue #3210): a voter
votes and continues, the preferred answer is kept as the conversation both models read next, the names
stay hidden until the conversation's last vote, each turn's vote counts in the ranking; refusals store
nothing. The chat call is replaced by answers that say which model and turn they are; the rest is real."""

from __future__ import annotations

import random

import pytest

from engine.runtime.generative import Generation
from generative_bench.arena import selectors, services
from generative_bench.models import Battle
from tests.factories.accounts import UserFactory
from tests.factories.arena import remote_pair_task
from tests.helpers.stub_streams import StubStream


@pytest.fixture
def task(db, tmp_path):
    return remote_pair_task(tmp_path)  # max_turns 3, the default


@pytest.fixture
def seen(monkeypatch):
    """Each call answers "reply <n> from #<model id>" (n counts the user messages it read); ``seen``
    holds the messages each call was sent."""
    sent = []

    class Stream(StubStream):
        def __init__(self, model, messages):
            self.model, self.messages = model, messages

        def answer(self):
            sent.append(self.messages)
            n = sum(m["role"] == "user" for m in self.messages)
            return Generation(
                text=f"reply {n} from #{self.model.pk}", finish_reason="stop", model="x", decoding={}
            )

    monkeypatch.setattr(services, "chat_stream", lambda model, messages: Stream(model, messages))
    return sent


def test_vote_and_continue_keeps_the_preferred_answer_and_hides_the_names_until_the_end(task, seen, client):
    voter = UserFactory()
    client.force_login(voter)
    first = services.start_battle(task=task, voter=voter, prompt="Name a river.", rng=random.Random(3))
    a, b = first.model_a, first.model_b
    # Vote B and continue: the next turn is the same two models on the same sides, reading B's answer.
    voted, recorded = services.vote(battle=first, voter=voter, vote="b", follow_up="And a longer one?")
    second = voted.continuation
    assert recorded and not voted.revealed and (second.turn, second.parent_id) == (2, first.pk)
    assert (second.model_a, second.model_b) == (a, b)
    assert second.messages == [
        {"role": "user", "content": "Name a river."},
        {"role": "assistant", "content": f"reply 1 from #{b.pk}"},
        {"role": "user", "content": "And a longer one?"},
    ]
    assert seen[-2:] == [second.messages, second.messages]  # both models read the same conversation
    assert (second.answer_a, second.answer_b) == (f"reply 2 from #{a.pk}", f"reply 2 from #{b.pk}")
    # Names hidden on both turns, on the page and in the API, while the conversation goes on.
    page = client.get(f"/tasks/{task.slug}/arena/battles/{first.pk}/").content.decode()
    assert "The conversation goes on" in page and "alpha" not in page and "bravo" not in page
    body = client.get(f"/tasks/{task.slug}/arena/battles/{second.pk}/").content.decode()
    assert "Turn 2 of at most 3" in body and f"reply 1 from #{b.pk}" in body and "alpha" not in body
    # A tie keeps A's answer; the third turn is the last (max_turns 3): no next message offered.
    voted, _ = services.vote(battle=second, voter=voter, vote="tie", follow_up="Thanks!")
    third = voted.continuation
    assert third.messages[-2:] == [
        {"role": "assistant", "content": f"reply 2 from #{a.pk}"},
        {"role": "user", "content": "Thanks!"},
    ]
    assert (
        'name="follow_up"' not in client.get(f"/tasks/{task.slug}/arena/battles/{third.pk}/").content.decode()
    )
    with pytest.raises(services.ArenaError, match="had its 3 turns") as refused:
        services.vote(battle=third, voter=voter, vote="a", follow_up="More?")
    assert refused.value.code == "invalid"
    third.refresh_from_db()
    assert third.status == "ready"  # refused before anything was stored
    # The last vote without a next message reveals every turn.
    services.vote(battle=third, voter=voter, vote="a")
    assert set(Battle.objects.values_list("revealed", flat=True)) == {True}
    page = client.get(f"/tasks/{task.slug}/arena/battles/{first.pk}/").content.decode()
    assert "alpha" in page and "bravo" in page
    # Each turn is a vote of the ranking: B over A, a tie, A over B.
    assert selectors.arena_summary(task).ranking.n_votes == 3


def test_refused_follow_ups_store_nothing_and_a_double_click_starts_one_turn(task, seen, client):
    voter = UserFactory()
    battle = services.start_battle(task=task, voter=voter, prompt="Hi", rng=random.Random(1))
    for vote, follow_up, why in (
        ("both_bad", "Again?", "none to keep"),
        ("a", "   ", "Your next message has no visible character"),
        ("a", "bad\x00text", "Your next message"),
    ):
        with pytest.raises(services.ArenaError, match=why):
            services.vote(battle=battle, voter=voter, vote=vote, follow_up=follow_up)
        battle.refresh_from_db()
        assert battle.status == "ready" and battle.vote == ""
    assert Battle.objects.count() == 1
    # Through the API: vote and continue, then the same request again (a double click).
    client.force_login(voter)
    url = f"/api/battles/{battle.pk}/vote/"
    first = client.post(url, {"vote": "a", "follow_up": "Go on 🌊"}, content_type="application/json").json()
    again = client.post(url, {"vote": "b", "follow_up": "Other"}, content_type="application/json").json()
    assert first["recorded"] and not again["recorded"] and first["models"] is None
    assert first["continuation"] == again["continuation"] and Battle.objects.count() == 2
    following = client.get(f"/tasks/{task.slug}/arena/battles/{first['continuation']}/")
    assert following.status_code == 200
    nxt = Battle.objects.get(pk=first["continuation"])
    assert nxt.messages[-1] == {"role": "user", "content": "Go on 🌊"} and nxt.turn == 2
    # The page form: vote and finish on the second turn reveals both.
    response = client.post(f"/tasks/{task.slug}/arena/battles/{nxt.pk}/vote/", {"vote": "b", "follow_up": ""})
    assert response.status_code == 302
    shown = client.post(
        url.replace(str(battle.pk), str(nxt.pk)), {"vote": "a"}, content_type="application/json"
    )
    assert shown.json()["models"] is not None and not shown.json()["recorded"]


def test_a_failed_next_turn_ends_the_conversation_and_reveals_it(task, monkeypatch):
    voter = UserFactory()
    monkeypatch.setattr(
        services,
        "chat_stream",
        lambda model, messages: type(
            "S",
            (StubStream,),
            {
                "answer": lambda self: Generation(
                    text="ok" if len(messages) == 1 else "",
                    finish_reason="stop" if len(messages) == 1 else "error",
                    model="x",
                    decoding={},
                    error="" if len(messages) == 1 else "the server stopped",
                )
            },
        )(),
    )
    battle = services.start_battle(task=task, voter=voter, prompt="Hi", rng=random.Random(2))
    voted, _ = services.vote(battle=battle, voter=voter, vote="a", follow_up="More")
    assert voted.continuation.status == "failed" and voted.revealed


def test_a_battle_can_be_read_again_through_the_api(task, seen, client):
    """``GET /api/battles/<id>/``: the caller's own battle as it is now (no names before the reveal), for a
    client that lost the answer to its POST; another user's battle is a 404, as a missing one."""
    voter = UserFactory()
    battle = services.start_battle(task=task, voter=voter, prompt="Hi", rng=random.Random(4))
    services.vote(battle=battle, voter=voter, vote="a", follow_up="More?")
    client.force_login(voter)
    body = client.get(f"/api/battles/{battle.pk}/").json()
    assert (body["status"], body["vote"], body["turn"], body["models"]) == ("voted", "a", 1, None)
    assert body["continuation"] == Battle.objects.get(parent=battle).pk
    client.force_login(UserFactory())
    assert client.get(f"/api/battles/{battle.pk}/").status_code == 404
    assert client.get("/api/battles/0/").status_code == 404


def test_a_second_tab_that_voted_and_wrote_after_the_first_is_told_both_were_not_taken(task, seen, client):
    voter = UserFactory()
    battle = services.start_battle(task=task, voter=voter, prompt="Hi", rng=random.Random(1))
    client.force_login(voter)
    url = f"/tasks/{task.slug}/arena/battles/{battle.pk}/vote/"
    first = client.post(url, {"vote": "a", "follow_up": "Tab one:\r\n go on"})
    same = client.post(url, {"vote": "a", "follow_up": "Tab one:\r\n go on"}, follow=True)  # a double click
    other = client.post(url, {"vote": "b", "follow_up": "Tab two asks this"}, follow=True)  # another tab
    nxt = Battle.objects.get(parent=battle)
    assert first["Location"] == f"/tasks/{task.slug}/arena/battles/{nxt.pk}/"
    assert nxt.messages[-1]["content"] == "Tab one:\n go on" and Battle.objects.count() == 2
    said = "Your vote on this battle was already recorded (A is better); it counts once."
    assert said in same.content.decode()
    assert "was not sent" not in same.content.decode()
    assert (
        said + " Your next message here was not sent: this conversation went on with the one sent first."
        in other.content.decode()
    )
    assert other.redirect_chain[-1][0] == f"/tasks/{task.slug}/arena/battles/{nxt.pk}/"
