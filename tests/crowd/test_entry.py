"""The entry link: the key, each platform's ids (a malformed one "not valid", a missing one "not
complete"), MTurk's preview, resuming, the link opened again in a second tab keeping the session, a full
or closed study."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model

from crowd.models import CrowdIdentity, Participation, Study
from crowd.services import username_for
from tests.factories.crowd import MTURK_IDS, PROLIFIC_IDS, make_study, study_add_form

pytestmark = pytest.mark.django_db


def _enter(client, study, key=None, **ids):
    query = {"key": study.entry_key if key is None else key, **ids}
    return client.get(f"/study/{study.public_id}/enter/?{urlencode(query)}")


def _nothing_created():
    assert CrowdIdentity.objects.count() == 0
    assert Participation.objects.count() == 0


def test_no_key_or_a_wrong_key_is_refused_and_creates_nothing(client, study):
    no_key = client.get(f"/study/{study.public_id}/enter/?{urlencode(PROLIFIC_IDS)}")
    wrong = _enter(
        client, study, key=study.entry_key[:-1] + ("A" if study.entry_key[-1] != "A" else "B"), **PROLIFIC_IDS
    )
    assert (no_key.status_code, wrong.status_code) == (403, 403)
    assert "its key is missing or wrong" in wrong.text
    _nothing_created()
    assert "_auth_user_id" not in client.session


def test_a_prolific_participant_gets_an_account_a_participation_and_the_consent_page(client, study):
    response = _enter(client, study, **PROLIFIC_IDS)
    assert response.status_code == 302
    assert response["Location"] == f"/study/{study.public_id}/consent/"
    identity = CrowdIdentity.objects.get()
    assert (identity.platform, identity.participant_id) == ("prolific", PROLIFIC_IDS["PROLIFIC_PID"])
    user = identity.user
    assert user.username == username_for("prolific", PROLIFIC_IDS["PROLIFIC_PID"])
    assert not user.has_usable_password()
    participation = Participation.objects.get()
    assert (
        participation.user,
        participation.status,
        participation.session_id,
        participation.platform_study_id,
    ) == (
        user,
        "active",
        "s-1",
        PROLIFIC_IDS["STUDY_ID"],
    )
    assert participation.round_id == study.round_id
    assert int(client.session["_auth_user_id"]) == user.pk


def test_an_mturk_worker_enters_with_the_assignment(client, hate_round, owner):
    study = make_study(hate_round, platform="mturk", name="HIT")
    response = _enter(client, study, **MTURK_IDS)
    assert response.status_code == 302
    participation = Participation.objects.get()
    assert participation.user.crowd_identity.participant_id == MTURK_IDS["workerId"]
    assert (participation.assignment_id, participation.hit_id, participation.turk_submit_to) == (
        MTURK_IDS["assignmentId"],
        MTURK_IDS["hitId"],
        "https://workersandbox.mturk.com",
    )
    assert study.currency == "USD"


def test_mturk_preview_shows_the_task_and_consent_and_creates_nothing(client, hate_round, owner):
    study = make_study(hate_round, platform="mturk", consent_text="Consent text for the preview.")
    response = _enter(client, study, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="3HIT1")
    assert response.status_code == 200
    assert "This is a preview" in response.text
    assert "Consent text for the preview." in response.text
    _nothing_created()
    assert "_auth_user_id" not in client.session


def test_mturk_submit_address_must_be_mturk(client, hate_round, owner):
    study = make_study(hate_round, platform="mturk")
    response = _enter(client, study, **{**MTURK_IDS, "turkSubmitTo": "https://evil.example"})
    assert response.status_code == 400
    assert "turkSubmitTo" in response.text
    _nothing_created()


def test_a_generic_participant_needs_only_participant_id(client, hate_round, owner):
    study = make_study(hate_round, platform="generic", completion_url="https://lab.example/done")
    response = _enter(client, study, participant_id="p-42")
    assert response.status_code == 302
    participation = Participation.objects.get()
    assert (participation.user.crowd_identity.participant_id, participation.session_id) == ("p-42", "")


@pytest.mark.parametrize(
    ("ids", "parameter"),
    [
        ({k: v for k, v in PROLIFIC_IDS.items() if k != "SESSION_ID"}, "SESSION_ID"),
        ({**PROLIFIC_IDS, "PROLIFIC_PID": "has space"}, "PROLIFIC_PID"),
        ({**PROLIFIC_IDS, "PROLIFIC_PID": "x" * 101}, "PROLIFIC_PID"),
        ({**PROLIFIC_IDS, "PROLIFIC_PID": "caf\u00e9"}, "PROLIFIC_PID"),
        ({**PROLIFIC_IDS, "STUDY_ID": "{{%STUDY_ID%}}"}, "STUDY_ID"),
    ],
)
def test_missing_or_malformed_ids_are_a_400_naming_the_parameter(client, study, ids, parameter):
    response = _enter(client, study, **ids)
    assert response.status_code == 400
    assert f"<code>{parameter}</code>" in response.text
    _nothing_created()


def test_a_returning_participant_resumes_the_same_participation(client, study):
    _enter(client, study, **PROLIFIC_IDS)
    first = Participation.objects.get()
    client.post(f"/study/{study.public_id}/consent/")
    client.logout()
    again = _enter(client, study, **PROLIFIC_IDS)  # Prolific re-opens with the same SESSION_ID
    assert again.status_code == 302
    assert again["Location"] == "/tasks/hate-speech/create/"  # consented already: straight to the work
    assert Participation.objects.get().pk == first.pk
    assert CrowdIdentity.objects.count() == 1


def test_someone_signed_in_is_logged_out_and_the_session_rotated(client, study, annotator, password):
    client.login(username=annotator.username, password=password)
    before = client.session.session_key
    _enter(client, study, **PROLIFIC_IDS)
    assert int(client.session["_auth_user_id"]) == CrowdIdentity.objects.get().user_id != annotator.pk
    assert client.session.session_key != before


def test_a_session_without_the_link_is_not_a_participant(client, study):
    """Knowing the participant id is not enough: without the key nobody is let in."""
    _enter(client, study, key="", **PROLIFIC_IDS)
    assert client.get(f"/study/{study.public_id}/consent/").status_code == 404
    assert client.get(f"/study/{study.public_id}/complete/").status_code == 404


def test_a_full_study_refuses_newcomers_but_resumes_its_participants(client, hate_round, owner):
    study = make_study(hate_round, max_participants=1)
    assert _enter(client, study, **PROLIFIC_IDS).status_code == 302
    client.logout()
    full = _enter(client, study, **{**PROLIFIC_IDS, "PROLIFIC_PID": "someone-else"})
    assert full.status_code == 409
    assert "This study is full" in full.text
    assert Participation.objects.count() == 1
    assert not get_user_model().objects.filter(crowd_identity__participant_id="someone-else").exists()
    assert _enter(client, study, **PROLIFIC_IDS).status_code == 302  # the one inside comes back


def test_a_closed_study_takes_nobody_new(client, hate_round, owner):
    study = make_study(hate_round, is_open=False)
    response = _enter(client, study, **PROLIFIC_IDS)
    assert response.status_code == 409
    assert "This study is closed" in response.text
    assert Participation.objects.count() == 0


def test_one_active_study_per_round_at_a_time(client, study, hate_round):
    other = make_study(hate_round, name="Second study")
    assert _enter(client, study, **PROLIFIC_IDS).status_code == 302
    client.logout()
    busy = _enter(client, other, **PROLIFIC_IDS)
    assert busy.status_code == 409
    assert "You are taking part in another study of this round (Hate speech, round 1)" in busy.text
    assert Participation.objects.count() == 1


def test_an_owner_adds_a_study_in_the_admin(client, owner, password, hate_round):
    client.login(username=owner.username, password=password)
    form = study_add_form(hate_round)
    response = client.post("/admin/crowd/study/add/", form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    study = Study.objects.get(name="From the admin")
    assert (study.currency, study.pay_per_example, len(study.entry_key)) == ("USD", Decimal("0.2000"), 43)
    refused = client.post("/admin/crowd/study/add/", {**form, "examples_required": "0", "name": "None"})
    assert "A submission needs at least one example or one validation." in refused.text


@pytest.mark.parametrize(
    ("ids", "title"),
    [
        ({**PROLIFIC_IDS, "PROLIFIC_PID": "x" * 101}, "This study link is not valid"),
        ({**PROLIFIC_IDS, "PROLIFIC_PID": "\U0001f600"}, "This study link is not valid"),
        ({k: v for k, v in PROLIFIC_IDS.items() if k != "PROLIFIC_PID"}, "This study link is not complete"),
    ],
)
def test_a_malformed_id_is_not_valid_and_a_missing_one_not_complete(client, study, ids, title):
    response = _enter(client, study, **ids)
    assert response.status_code == 400
    assert f"<h1>{title}</h1>" in response.text


def test_reopening_the_link_when_signed_in_keeps_the_session_and_csrf_token(client, study):
    _enter(client, study, **PROLIFIC_IDS)
    client.get(f"/study/{study.public_id}/consent/")  # the form in the first tab: sets the CSRF cookie
    session_key = client.session.session_key
    token = client.cookies["csrftoken"].value
    again = _enter(client, study, **PROLIFIC_IDS)
    assert again.status_code == 302 and again["Location"] == f"/study/{study.public_id}/consent/"
    assert client.session.session_key == session_key
    assert "csrftoken" not in again.cookies
    assert client.cookies["csrftoken"].value == token
