"""The arena's API (generative_bench/arena/api.py) against the real SmolLM2: a battle on a prompt and on a
round's example, with no model name in the answer until the vote; a resent battle and a second vote;
another user's battle; refused bodies; the public ranking."""

from __future__ import annotations

import json
import uuid

import pytest

from generative_bench.models import Battle
from tests.factories.arena import NAME_A, NAME_B, PIRATE, make_arena, settled_conversation, stored_battle
from tests.helpers.api import client_for

BATTLES = "/api/tasks/red-team/battles/"


@pytest.fixture
def arena(db, smollm2_dir):
    return make_arena(smollm2_dir)


def test_a_battle_through_the_api_names_no_model_until_the_vote(arena, annotator):
    api = client_for(annotator)
    token = str(uuid.uuid4())
    created = api.post(BATTLES, {"prompt": "Name a river. 🌊", "client_token": token}, format="json")
    assert created.status_code == 201, created.content
    battle = Battle.objects.get()
    body = created.json()
    raw = created.content.decode()
    assert NAME_A not in raw and NAME_B not in raw and PIRATE not in raw
    assert body["models"] is None and body["generation_a"] is None and body["generation_b"] is None
    assert (body["id"], body["status"], body["task"], body["round"], body["example"]) == (
        battle.pk,
        "ready",
        "red-team",
        1,
        None,
    )
    assert (body["answer_a"], body["answer_b"]) == (battle.answer_a, battle.answer_b)
    assert body["messages"] == [{"role": "user", "content": "Name a river. 🌊"}]

    again = api.post(BATTLES, {"prompt": "Name a river. 🌊", "client_token": token}, format="json")
    assert (again.status_code, again.json()["id"], Battle.objects.count()) == (200, battle.pk, 1)

    voted = api.post(f"/api/battles/{battle.pk}/vote/", {"vote": "both_bad"}, format="json")
    assert voted.status_code == 200
    result = voted.json()
    assert result["models"] == {"a": battle.model_a.name, "b": battle.model_b.name}
    assert (result["vote"], result["status"], result["recorded"]) == ("both_bad", "voted", True)
    assert result["generation_a"]["output_tokens"] == battle.generation_a["output_tokens"]
    assert "model" not in result["generation_a"]  # the runner's name; "models" says what may be shown
    second = api.post(f"/api/battles/{battle.pk}/vote/", {"vote": "a"}, format="json").json()
    assert (second["vote"], second["recorded"]) == ("both_bad", False)


def test_a_battle_on_a_settled_conversation_of_the_task(arena, annotator, validator):
    task, _, _ = arena
    example = settled_conversation(task.current_round, validator, first="Where is it? 🗺️")
    pending = settled_conversation(task.current_round, validator, status="pending", passage=example.context)
    api = client_for(annotator)
    refused = api.post(BATTLES, {"example": pending.pk}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {
        "detail": "No settled conversation of this task has that id.",
        "code": "invalid",
    }
    assert api.post(BATTLES, {"example": 10**30}, format="json").status_code == 400
    created = api.post(BATTLES, {"example": example.pk}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["example"] == example.pk
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "Where is it? 🗺️"


def test_refused_bodies_store_nothing(arena, annotator):
    api = client_for(annotator)
    cases = [
        ({"prompt": "x" * 10_000}, 400, "Your prompt is too long: 10,000 characters, at most 4,000 allowed."),
        ({"prompt": "a", "example": 1}, 400, None),
        ({}, 400, None),
        ({"prompt": 12}, 400, None),
        ({"prompt": "a", "model": 1}, 400, None),  # unknown field
    ]
    for body, status, detail in cases:
        response = api.post(BATTLES, body, format="json")
        assert response.status_code == status, (body, response.content)
        if detail:
            assert response.json() == {"detail": detail, "code": "invalid"}
    surrogate = api.post(BATTLES, data='{"prompt": "bad \\ud800"}', content_type="application/json")
    assert surrogate.status_code == 400
    assert not Battle.objects.exists()


def test_another_users_battle_is_a_404_and_a_failed_one_a_409(arena, annotator, validator):
    task, a, b = arena
    battle = stored_battle(task, annotator, a, b)
    stranger = client_for(validator)
    response = stranger.post(f"/api/battles/{battle.pk}/vote/", {"vote": "a"}, format="json")
    assert (response.status_code, response.json()) == (404, {"detail": "No such battle."})
    missing = client_for(annotator).post("/api/battles/999999999/vote/", {"vote": "a"}, format="json")
    assert missing.status_code == 404 and missing.json() == response.json()  # the same 404: no id oracle
    Battle.objects.filter(pk=battle.pk).update(status="failed", error="Answer A failed: boom.")
    failed = client_for(annotator).post(f"/api/battles/{battle.pk}/vote/", {"vote": "a"}, format="json")
    assert (failed.status_code, failed.json()) == (
        409,
        {"detail": "Answer A failed: boom.", "code": "not_ready"},
    )
    bad = client_for(annotator).post(f"/api/battles/{battle.pk}/vote/", {"vote": "c"}, format="json")
    assert bad.status_code == 400


def test_the_ranking_api_is_public(arena, annotator):
    task, a, b = arena
    for outcome in ("a", "a", "tie"):
        battle = stored_battle(task, annotator, a, b)
        client_for(annotator).post(f"/api/battles/{battle.pk}/vote/", {"vote": outcome}, format="json")
    body = client_for(None).get("/api/tasks/red-team/arena/ranking/").json()
    assert [r["name"] for r in body["rows"]] == [NAME_A, NAME_B]
    assert [r["votes"] for r in body["rows"]] == [3, 3] and body["n_votes"] == 3
    # 2.5 wins to 0.5 with the prior's pseudo-tie: 3 : 1, so 400 log10(3) = 190.85 points apart.
    assert body["rows"][0]["score"] - body["rows"][1]["score"] == pytest.approx(190.85, abs=0.01)
    assert body["pairs"] == [
        {"model_id": a.pk, "name": NAME_A, "votes": [None, 3]},
        {"model_id": b.pk, "name": NAME_B, "votes": [3, None]},
    ]
    assert json.loads(json.dumps(body))["left_out"] == {"held": 0, "blocked": 0, "not_anonymous": 0}
