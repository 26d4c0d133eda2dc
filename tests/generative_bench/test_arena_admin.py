"""The arena's admin (generative_bench/arena/admin.py): battles listed read-only, to the task's owners."""

from __future__ import annotations

import pytest

from tests.factories.accounts import UserFactory
from tests.factories.arena import add_model, stored_battle
from tests.factories.red_team import make_red_team_round

LIST = "/admin/generative_bench/battle/"


@pytest.fixture
def battle(db, tmp_path, annotator):
    task = make_red_team_round(tmp_path, slug="red-team").task
    battle = stored_battle(task, annotator, add_model(task, "otter-chat"), add_model(task, "heron-chat"))
    battle.status, battle.vote = "voted", "tie"
    battle.save(update_fields=["status", "vote"])
    return battle


def test_the_tasks_owner_lists_its_battles_and_changes_nothing(client, battle):
    owner = UserFactory(username="arena-owner", is_staff=True)
    battle.task.owners.add(owner)
    client.force_login(owner)
    listing = client.get(LIST).content.decode()
    for text in ("otter-chat", "heron-chat", "annotator", "Tie"):
        assert text in listing
    assert "Add battle" not in listing
    detail = client.get(f"{LIST}{battle.pk}/change/")
    assert detail.status_code == 200
    assert b'name="vote"' not in detail.content  # read-only: no field to edit
    assert client.post(f"{LIST}{battle.pk}/change/", {"vote": "a"}).status_code == 403
    assert client.get(f"{LIST}add/").status_code == 403
    assert client.get(f"{LIST}{battle.pk}/delete/").status_code == 403
    battle.refresh_from_db()
    assert battle.vote == "tie"


def test_another_tasks_owner_sees_none(client, battle, owner):
    client.force_login(owner)  # staff, owner of hate-speech only
    listing = client.get(LIST)
    assert listing.status_code == 200 and b"otter-chat" not in listing.content
    assert client.get(f"{LIST}{battle.pk}/change/").status_code in (302, 404)
