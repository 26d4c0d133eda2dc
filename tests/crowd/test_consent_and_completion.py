"""Consent once, the progress banner (naming only the amounts the study asks for), completion (refused
before the work is done, once, per platform; its page says it sends the participant back, with a link),
returning a study (a second return, or one after completing, answered plainly) and abandonment: each frees
the place exactly once."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory

from annotation.services import create_example
from crowd import jobs, services
from crowd.admin import mark_returned_action
from crowd.models import LedgerEntry, Participation
from tests.factories.annotation import make_example
from tests.factories.crowd import MTURK_IDS, PROLIFIC_IDS, enter_as, make_study
from tests.factories.validation import submit_served

pytestmark = pytest.mark.django_db


def _enter(client, study, **ids):
    return client.get(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **ids})}")


def _do_the_work(study, user, annotator):
    for n in range(study.examples_required):
        create_example(
            task=study.round.task, annotator=user, inputs={"statement": f"I love you {n}"}, target="hateful"
        )
    for _ in range(study.validations_required):
        submit_served(example=make_example(study.round, annotator), validator=user, verdict="correct")


def test_consent_is_asked_once_and_its_time_kept(client, study):
    _enter(client, study, **PROLIFIC_IDS)
    page = client.get(f"/study/{study.public_id}/consent/")
    assert page.status_code == 200
    assert "I agree to take part in this study." in page.text
    agreed = client.post(f"/study/{study.public_id}/consent/")
    assert agreed["Location"] == "/tasks/hate-speech/create/"
    first = Participation.objects.get().consented_at
    assert first is not None
    assert client.post(f"/study/{study.public_id}/consent/")["Location"] == "/tasks/hate-speech/create/"
    assert client.get(f"/study/{study.public_id}/consent/").status_code == 302  # shown once
    assert Participation.objects.get().consented_at == first


def test_a_validation_only_study_sends_people_to_the_validate_page(client, hate_round, owner):
    study = make_study(hate_round, examples_required=0, validations_required=3)
    _enter(client, study, **PROLIFIC_IDS)
    assert client.post(f"/study/{study.public_id}/consent/")["Location"] == "/tasks/hate-speech/validate/"


def test_the_banner_shows_progress_and_the_finish_link_when_done(client, study, rule_model, annotator):
    _enter(client, study, **PROLIFIC_IDS)
    user = Participation.objects.get().user
    page = client.get("/")
    assert "Study: 0 of 2 examples, 0 of 1 validations" in page.text
    assert f"/study/{study.public_id}/complete/" not in page.text
    _do_the_work(study, user, annotator)
    page = client.get("/")
    assert "Study: 2 of 2 examples, 1 of 1 validations" in page.text
    assert f'href="/study/{study.public_id}/complete/">Finish</a>' in page.text


def test_completing_before_the_work_is_done_is_refused(client, study, rule_model):
    _enter(client, study, **PROLIFIC_IDS)
    response = client.post(f"/study/{study.public_id}/complete/")
    assert response.status_code == 409
    assert "Not finished yet: 0 of 2 examples, 0 of 1 validations done." in response.text
    assert Participation.objects.get().status == "active"
    assert not LedgerEntry.objects.filter(kind="reward").exists()


def test_prolific_completion_shows_the_code_and_sends_back_once(client, study, rule_model, annotator):
    _enter(client, study, **PROLIFIC_IDS)
    participation = Participation.objects.get()
    _do_the_work(study, participation.user, annotator)
    first = client.post(f"/study/{study.public_id}/complete/")
    again = client.get(f"/study/{study.public_id}/complete/")
    for page in (first, again):
        assert page.status_code == 200
        assert "C0DE1234" in page.text
        assert 'href="https://app.prolific.com/submissions/complete?cc=C0DE1234"' in page.text
    participation.refresh_from_db()
    assert participation.status == "completed" and participation.completed_at == participation.ended_at
    assert list(LedgerEntry.objects.filter(kind="reward").values_list("event_key", flat=True)) == [
        f"reward:{participation.pk}"
    ]
    # Entering again shows the completion page, not the work.
    client.logout()
    assert _enter(client, study, **PROLIFIC_IDS)["Location"] == f"/study/{study.public_id}/complete/"


def test_mturk_completion_is_a_form_the_browser_posts_to_mturk(client, hate_round, owner, annotator):
    study = make_study(hate_round, platform="mturk", examples_required=0, validations_required=1)
    _enter(client, study, **MTURK_IDS)
    _do_the_work(study, Participation.objects.get().user, annotator)
    page = client.post(f"/study/{study.public_id}/complete/")
    assert page.status_code == 200
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page.text
    assert f'name="assignmentId" value="{MTURK_IDS["assignmentId"]}"' in page.text
    assert "https://workersandbox.mturk.com" in page["Content-Security-Policy"]
    assert "X-Frame-Options" not in page  # MTurk shows the HIT in a frame


def test_generic_completion_goes_to_the_completion_url(client, hate_round, owner, annotator):
    study = make_study(
        hate_round,
        platform="generic",
        examples_required=0,
        completion_code="",
        completion_url="https://lab.example/done",
    )
    _enter(client, study, participant_id="p-1")
    _do_the_work(study, Participation.objects.get().user, annotator)
    page = client.post(f"/study/{study.public_id}/complete/")
    assert 'href="https://lab.example/done"' in page.text


def test_returning_frees_the_place_once_and_the_id_cannot_come_back(client, hate_round, owner):
    study = make_study(hate_round, max_participants=1)
    _enter(client, study, **PROLIFIC_IDS)
    assert "Return this study?" in client.get(f"/study/{study.public_id}/return/").text
    client.post(f"/study/{study.public_id}/return/")
    participation = Participation.objects.get()
    ended = participation.ended_at
    assert participation.status == "returned" and ended is not None
    assert "_auth_user_id" not in client.session
    assert services.return_study(participation=participation) is False  # already returned: nothing changes
    participation.refresh_from_db()
    assert participation.ended_at == ended
    # The place is free for someone else, and the one who returned cannot enter again.
    assert _enter(client, study, **{**PROLIFIC_IDS, "PROLIFIC_PID": "next-one"}).status_code == 302
    client.logout()
    back = _enter(client, study, **PROLIFIC_IDS)
    assert back.status_code == 409
    assert "you cannot take part again" in back.text


def test_the_owner_marks_returned_in_the_admin_once(hate_round, owner):
    study = make_study(hate_round)
    from tests.factories.crowd import enter_as

    entry = enter_as(study, "pid-9")
    request = RequestFactory().post("/admin/crowd/participation/")
    request.user = owner
    sent = []
    model_admin = site.get_model_admin(Participation)
    model_admin.message_user = lambda request, message, level=None: sent.append(message)
    queryset = Participation.objects.filter(pk=entry.participation.pk)
    mark_returned_action(model_admin, request, queryset)
    mark_returned_action(model_admin, request, queryset)
    assert sent == ["Marked 1 participation(s) returned.", "Marked 0 participation(s) returned."]
    assert Participation.objects.get().status == "returned"


def test_abandonment_after_the_time_limit_frees_the_place_once(client, hate_round, owner):
    study = make_study(hate_round, max_participants=1, time_limit_minutes=30)
    from tests.factories.crowd import enter_as

    entry = enter_as(study, "slow")
    started = entry.participation.started_at - timedelta(minutes=31)
    Participation.objects.update(started_at=started)
    # The newcomer's entry counts the places and abandons the expired one first.
    assert _enter(client, study, **PROLIFIC_IDS).status_code == 302
    slow = Participation.objects.get(pk=entry.participation.pk)
    assert (slow.status, slow.ended_at) == ("abandoned", started + timedelta(minutes=30))
    assert jobs.abandon_expired_job() == 0  # already decided
    client.logout()
    assert _enter(client, study, **{**PROLIFIC_IDS, "PROLIFIC_PID": "slow"}).status_code == 409


def test_the_scheduled_job_abandons_expired_participations(hate_round, owner):
    study = make_study(hate_round)
    from tests.factories.crowd import enter_as

    enter_as(study, "a")
    enter_as(study, "b")
    Participation.objects.filter(user__crowd_identity__participant_id="a").update(
        started_at=Participation.objects.get(user__crowd_identity__participant_id="a").started_at
        - timedelta(hours=2)
    )
    assert jobs.abandon_expired_job() == 1
    assert jobs.abandon_expired_job() == 0
    assert sorted(Participation.objects.values_list("status", flat=True)) == ["abandoned", "active"]


def test_an_mturk_workers_pages_may_be_framed_by_mturk_only(client, hate_round, owner, rule_model):
    study = make_study(hate_round, platform="mturk")
    entered = _enter(client, study, **MTURK_IDS)
    assert (
        "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com"
        in entered["Content-Security-Policy"]
    )
    client.post(f"/study/{study.public_id}/consent/")
    create = client.get("/tasks/hate-speech/create/")
    assert "X-Frame-Options" not in create
    assert (
        "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com"
        in create["Content-Security-Policy"]
    )


def test_other_pages_stay_unframable(client, study):
    _enter(client, study, **PROLIFIC_IDS)  # Prolific opens studies in a tab of their own
    page = client.get("/tasks/hate-speech/")
    assert page["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page["Content-Security-Policy"]


def test_progress_names_only_the_amounts_asked_for(client, hate_round, owner):
    study = make_study(hate_round, examples_required=2, validations_required=0)
    _enter(client, study, **PROLIFIC_IDS)
    assert "Study: 0 of 2 examples\n" in client.get("/").text
    refused = client.post(f"/study/{study.public_id}/complete/")
    assert "Not finished yet: 0 of 2 examples done." in refused.text
    assert "0 of 0" not in refused.text


def test_the_completion_page_says_it_sends_them_back_with_a_link(client, study):
    entry = enter_as(study, "PID-C", session_id="c-1")
    Participation.objects.filter(pk=entry.participation.pk).update(status="completed")
    client.force_login(entry.user)
    page = client.get(f"/study/{study.public_id}/complete/").text
    assert "In a few seconds you will be sent back to Prolific" in page
    assert "Go back to Prolific now</a>" in page


def test_a_second_return_and_a_completed_return_answer_clearly(client, study, hate_round, owner):
    _enter(client, study, **PROLIFIC_IDS)
    assert client.post(f"/study/{study.public_id}/return/").status_code == 200
    again = client.post(f"/study/{study.public_id}/return/")
    assert again.status_code == 200
    assert "You have already returned this study." in again.text

    done = make_study(hate_round, name="Done", examples_required=1, validations_required=0)
    entry = enter_as(done, "PID-DONE", session_id="d-1")
    Participation.objects.filter(pk=entry.participation.pk).update(status="completed")
    client.force_login(entry.user)
    for response in (
        client.get(f"/study/{done.public_id}/return/"),
        client.post(f"/study/{done.public_id}/return/"),
    ):
        assert "You have completed this study; there is nothing to return." in response.text
    assert Participation.objects.get(pk=entry.participation.pk).status == "completed"
