"""Defects a tester found: participations bound to their platform session, live study fields fixed,
studies only on open rounds."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlencode

import pytest

from crowd.models import CrowdIdentity, Participation, Study
from tests.factories.crowd import MTURK_IDS, PROLIFIC_IDS, enter_as, make_study
from tests.factories.tasks import open_round

pytestmark = pytest.mark.django_db

OTHER_SESSION = "This place was opened from another session on Prolific; open the study from Prolific itself."


def _enter(client, study, **ids):
    return client.get(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **ids})}")


# 1. Impersonation by changing the participant id --------------------------------------------------


def test_another_session_id_for_an_existing_participation_is_refused_and_logs_nobody_in(
    client, study, django_user_model
):
    assert _enter(client, study, **PROLIFIC_IDS).status_code == 302
    client.logout()
    users_before = django_user_model.objects.count()
    stolen = _enter(client, study, **{**PROLIFIC_IDS, "SESSION_ID": "someone-elses-session"})
    assert stolen.status_code == 409
    assert OTHER_SESSION in stolen.text
    assert "_auth_user_id" not in client.session
    assert (Participation.objects.count(), CrowdIdentity.objects.count()) == (1, 1)
    assert django_user_model.objects.count() == users_before
    assert Participation.objects.get().session_id == "s-1"  # still bound to the first session


def test_the_same_session_id_resumes(client, study):
    _enter(client, study, **PROLIFIC_IDS)
    user_id = int(client.session["_auth_user_id"])
    client.logout()
    again = _enter(client, study, **PROLIFIC_IDS)
    assert again.status_code == 302
    assert int(client.session["_auth_user_id"]) == user_id


def test_the_participant_signed_in_already_may_come_back_with_another_session_id(client, study):
    _enter(client, study, **PROLIFIC_IDS)
    user_id = int(client.session["_auth_user_id"])
    again = _enter(client, study, **{**PROLIFIC_IDS, "SESSION_ID": "s-2"})
    assert again.status_code == 302
    assert int(client.session["_auth_user_id"]) == user_id


def test_mturk_binds_the_assignment(client, hate_round, owner):
    study = make_study(hate_round, platform="mturk")
    _enter(client, study, **MTURK_IDS)
    client.logout()
    other = _enter(client, study, **{**MTURK_IDS, "assignmentId": "3ASSIGN0000000000999"})
    assert other.status_code == 409
    assert "another session on MTurk" in other.text
    assert "_auth_user_id" not in client.session


def test_a_generic_session_id_binds_when_the_first_entry_had_one(client, hate_round, owner):
    bound = make_study(hate_round, platform="generic", completion_code="G", name="bound")
    _enter(client, bound, participant_id="p-1", session_id="gs-1")
    client.logout()
    assert _enter(client, bound, participant_id="p-1").status_code == 409  # missing session id
    assert _enter(client, bound, participant_id="p-1", session_id="gs-1").status_code == 302


def test_a_generic_entry_without_a_session_id_is_not_bound(client, hate_round, owner):
    study = make_study(hate_round, platform="generic", completion_code="G")
    _enter(client, study, participant_id="p-2")
    client.logout()
    assert _enter(client, study, participant_id="p-2", session_id="anything").status_code == 302


# 3. Live study fields -------------------------------------------------------------------------------


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


# 4. Studies collect in the open round ---------------------------------------------------------------


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
