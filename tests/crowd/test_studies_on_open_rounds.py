"""Studies collect in the task's open round: the API refuses a study on a round that is closed or not
the current one, naming why, and the admin's add form offers the open rounds only."""

from __future__ import annotations

import pytest

from crowd.models import Study
from tests.factories.tasks import open_round

pytestmark = pytest.mark.django_db


def test_a_study_on_a_closed_or_non_current_round_is_refused(api, owner, hate_task, hate_round):
    body = {
        "task": "hate-speech",
        "name": "S",
        "platform": "prolific",
        "examples_required": 1,
        "max_participants": 2,
        "completion_code": "C",
        "consent_text": "Yes.",
    }
    round_2 = open_round(hate_task, 2)  # now current: round 1 is not
    old = api(owner).post("/api/studies/", {**body, "round": 1}, format="json")
    assert old.status_code == 400
    assert old.json()["round"] == [
        "Round 1 is not the task's current round; studies collect in the open round."
    ]
    round_2.is_closed = True
    round_2.save()
    closed = api(owner).post("/api/studies/", {**body, "round": 2}, format="json")
    assert closed.json()["round"] == ["Round 2 is closed; studies collect in the open round."]
    assert Study.objects.count() == 0


def test_the_admin_offers_open_rounds_only_for_a_new_study(client, owner, password, hate_task, hate_round):
    round_2 = open_round(hate_task, 2)
    client.login(username=owner.username, password=password)
    choices = list(client.get("/admin/crowd/study/add/").context["adminform"].form.fields["round"].queryset)
    assert choices == [round_2]
