"""The replay API (``generative_bench/replay/api.py``): a task owner asks for a replay (201, then 409 while
it runs, a refused model a 400 naming its rule), reads it and its answers page by page; anyone else hears
403 on the task's round and the 404 of a missing id on the replay. The model runs as a stand-in."""

from __future__ import annotations

import pytest

from generative_bench.models import Replay
from models_registry.models import RegisteredModel
from tests.generative_bench.replay_world import install_stand_in, replay_world
from tests.helpers.api import client_for

pytestmark = pytest.mark.django_db

URL = "/api/tasks/red-team/rounds/1/replays/"


@pytest.fixture
def world(smollm2_dir, owner, monkeypatch):
    world = replay_world(smollm2_dir)
    world["task"].owners.add(owner)
    install_stand_in(monkeypatch)
    return world


def test_an_owner_replays_a_round_and_reads_its_answers(world, owner, django_capture_on_commit_callbacks):
    api = client_for(owner)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = api.post(URL, {"model": world["second"].pk, "target_turns": "regenerate"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert {k: body[k] for k in ("task", "round", "model", "model_name", "target_turns", "status")} == {
        "task": "red-team",
        "round": 1,
        "model": world["second"].pk,
        "model_name": "second",
        "target_turns": "regenerate",
        "status": "queued",
    }
    again = api.post(URL, {"model": world["second"].pk, "target_turns": "regenerate"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_running"
    for callback in queued:  # the job, inline
        callback()
    replay = api.get(f"/api/replays/{body['id']}/").json()
    assert (replay["status"], replay["total"], replay["done"], replay["failed"]) == ("done", 4, 4, 0)
    page = api.get(f"/api/replays/{body['id']}/answers/?page_size=3").json()
    assert page["count"] == 4 and len(page["results"]) == 3 and page["next"]
    first = page["results"][0]
    assert first["example"] == world["one"].pk and first["status"] == "ok"
    assert first["answer"] == "answer to How long is the Amazon? 🌊" and first["cost"] == "0.00100000"
    assert first["tokens"] == 4 and first["attempts"] == 1
    rest = api.get(page["next"]).json()["results"]
    assert [a["example"] for a in page["results"] + rest] == sorted(
        world[n].pk for n in ("one", "two", "rtl", "item")
    )
    assert [a["picked"] for a in rest] == [1] and rest[0]["correct"] is True


def test_what_an_owner_may_not_replay_is_a_400_naming_the_rule(world, owner, hate_round):
    api = client_for(owner)
    failing = RegisteredModel.objects.create(task=world["task"], name="broken", path="/x", status="failed")
    refused = api.post(URL, {"model": failing.pk}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "not_ready"
    other = RegisteredModel.objects.create(task=hate_round.task, name="clf", status="ready")
    assert api.post(URL, {"model": other.pk}, format="json").json() == {
        "model": ["No such model of this task."]
    }
    typo = api.post(URL, {"model": world["second"].pk, "turns": "keep"}, format="json")
    assert typo.status_code == 400 and "turns" in typo.json()
    wrong = api.post(URL, {"model": world["second"].pk, "target_turns": "both"}, format="json")
    assert wrong.status_code == 400 and "target_turns" in wrong.json()
    assert api.post("/api/tasks/red-team/rounds/2/replays/", {"model": 1}, format="json").status_code == 404
    assert not Replay.objects.exists()


def test_anyone_but_the_tasks_owners_is_refused_and_sees_no_replay(world, owner, annotator):
    replay = Replay.objects.create(round=world["round"], model=world["second"])
    outsider = client_for(annotator)
    assert outsider.post(URL, {"model": world["second"].pk}, format="json").status_code == 403
    assert outsider.get(f"/api/replays/{replay.pk}/").status_code == 404
    assert outsider.get(f"/api/replays/{replay.pk}/answers/").status_code == 404
    assert client_for(None).get(f"/api/replays/{replay.pk}/").status_code == 401
    assert client_for(owner).get(f"/api/replays/{replay.pk}/").status_code == 200
    assert client_for(owner).get("/api/replays/-1/").status_code == 404
