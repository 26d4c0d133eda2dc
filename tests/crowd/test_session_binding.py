"""A participation is bound to the platform session it was opened from (Prolific's SESSION_ID, MTurk's
assignment, a generic link's session_id when its first entry had one): the same participant id with
another session is refused (409) and signs nobody in, the same session resumes, and a participant
already signed in may come back from another session."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from crowd.models import CrowdIdentity, Participation
from tests.factories.crowd import MTURK_IDS, PROLIFIC_IDS, make_study

pytestmark = pytest.mark.django_db

OTHER_SESSION = "This place was opened from another session on Prolific; open the study from Prolific itself."


def _enter(client, study, **ids):
    return client.get(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **ids})}")


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
