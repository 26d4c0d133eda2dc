"""A study's pay, amounts, currency and platform are fixed once someone entered it: the API refuses a
change with a message that says to create a new study, and lowers ``max_participants`` no further than
the places taken; the admin shows those fields, and the round, read-only."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.factories.crowd import enter_as

pytestmark = pytest.mark.django_db


LIVE = "This study has participants: its pay and amounts are fixed; create a new study instead."


def test_the_api_refuses_changing_pay_and_amounts_once_someone_entered(api, owner, study):
    url = f"/api/studies/{study.public_id}/"
    assert api(owner).patch(url, {"reward": "5.00"}, format="json").status_code == 200  # nobody yet
    enter_as(study, "PID-1", session_id="s-1")
    enter_as(study, "PID-2", session_id="s-2")
    for field, value in [
        ("reward", "9.00"),
        ("pay_per_example", "1.00"),
        ("pay_per_validation", "1.00"),
        ("bonus_per_verified_fooling", "1.00"),
        ("examples_required", 7),
        ("validations_required", 7),
        ("currency", "EUR"),
        ("platform", "generic"),
    ]:
        response = api(owner).patch(url, {field: value}, format="json")
        assert response.status_code == 400, field
        assert response.json()[field] == [LIVE]
    too_few = api(owner).patch(url, {"max_participants": 1}, format="json")
    assert too_few.status_code == 400
    assert "2 places are taken" in too_few.json()["max_participants"][0]
    assert api(owner).patch(url, {"max_participants": 2, "name": "Renamed"}, format="json").status_code == 200
    study.refresh_from_db()
    assert (study.reward, study.max_participants, study.name) == (Decimal("5.0000"), 2, "Renamed")


def test_the_admin_shows_live_fields_read_only(client, owner, password, study):
    client.login(username=owner.username, password=password)
    url = f"/admin/crowd/study/{study.pk}/change/"
    assert 'name="reward"' in client.get(url).text
    enter_as(study, "PID-1", session_id="s-1")
    page = client.get(url).text
    for field in ("reward", "pay_per_example", "platform", "currency", "examples_required", "round"):
        assert f'name="{field}"' not in page, field
    assert 'name="max_participants"' in page
