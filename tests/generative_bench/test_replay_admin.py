"""The replay admin (``generative_bench/replay/admin.py``): a task owner asks for a replay with the add
form (through ``request_replay``: refused models said on their field), resumes, cancels and opens it for
rating from the list; the answers are read-only and show no key source."""

from __future__ import annotations

import pytest
from django.utils import timezone

from generative_bench.models import Replay, ReplayAnswer
from models_registry.models import RegisteredModel
from tests.generative_bench.replay_world import install_stand_in, replay_world

pytestmark = pytest.mark.django_db

ADD = "/admin/generative_bench/replay/add/"
LIST = "/admin/generative_bench/replay/"


@pytest.fixture
def world(smollm2_dir, owner, monkeypatch):
    world = replay_world(smollm2_dir)
    world["task"].owners.add(owner)
    install_stand_in(monkeypatch)
    return world


def test_an_owner_asks_for_a_replay_resumes_it_and_opens_it_for_rating(
    world, owner, client, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    assert client.get(ADD).status_code == 200
    form = {"round": world["round"].pk, "model": world["second"].pk, "target_turns": "keep"}
    with django_capture_on_commit_callbacks(execute=True):  # the job runs inline once the request commits
        response = client.post(ADD, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    replay = Replay.objects.get()
    assert (replay.status, replay.done, replay.requested_by) == ("done", 4, owner)
    page = client.get(f"{LIST}{replay.pk}/change/").content.decode()
    assert "4 / 4" in page

    with django_capture_on_commit_callbacks(execute=True):
        client.post(LIST, {"action": "resume_replays", "_selected_action": [replay.pk]})
    replay.refresh_from_db()
    assert replay.status == "done" and ReplayAnswer.objects.filter(replay=replay).count() == 4

    client.post(LIST, {"action": "open_for_rating", "_selected_action": [replay.pk]})
    assert ReplayAnswer.objects.filter(replay=replay, rating_example__isnull=False).count() == 3

    Replay.objects.filter(pk=replay.pk).update(status="running")
    client.post(LIST, {"action": "cancel_replays", "_selected_action": [replay.pk]})
    assert Replay.objects.get(pk=replay.pk).status == "cancelled"


def test_the_add_form_says_why_a_model_is_refused(world, owner, client):
    client.force_login(owner)
    Replay.objects.create(
        round=world["round"], model=world["second"], status="running", started_at=timezone.now()
    )
    remote = RegisteredModel.objects.create(
        task=world["task"],
        name="remote",
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        endpoint_url="http://127.0.0.1:9/v1",
        chat_model_name="m",
        api_key_env="SECRET_KEY_VARIABLE",
        status="ready",
    )
    page = client.post(
        ADD, {"round": world["round"].pk, "model": world["second"].pk, "target_turns": "keep"}
    ).content.decode()
    assert "is already running" in page
    assert Replay.objects.count() == 1
    Replay.objects.update(status="done")
    replay = Replay.objects.create(round=world["round"], model=remote)
    answers = client.get(f"/admin/generative_bench/replayanswer/?replay__id__exact={replay.pk}")
    assert answers.status_code == 200 and "SECRET_KEY_VARIABLE" not in answers.content.decode()
    assert client.get(f"{LIST}{replay.pk}/change/").status_code == 200
    assert "SECRET_KEY_VARIABLE" not in client.get(f"{LIST}{replay.pk}/change/").content.decode()
