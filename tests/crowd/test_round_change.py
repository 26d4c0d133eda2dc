"""A study whose round stops collecting (docs/crowd.md, "When the round changes"): the owner's start-round
page warns of it; starting the next round, closing the round or making another round current ends it in
the same transaction: no new entries, every running participant completed (early, when their work was not
done), paid for each example and verdict they made and the reward, told so and sent to the completion
page; nothing more is recorded from them, on the pages or the API."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from annotation.models import Example
from annotation.services import create_example
from crowd.models import LedgerEntry, Participation, Study
from models_registry.round_targets import start_next_round
from tasks.models import Round
from tasks.services import set_current_round
from tests.factories.annotation import make_example
from tests.factories.crowd import PROLIFIC_IDS, enter_as, make_study
from tests.factories.tasks import open_round
from tests.factories.validation import serve, submit_served

pytestmark = pytest.mark.django_db

CREATE = reverse("annotation:create", args=["hate-speech"])
VALIDATE = reverse("validation:validate", args=["hate-speech"])


def _ids(n: int) -> dict:
    return {**PROLIFIC_IDS, "PROLIFIC_PID": f"60a1b2c3d4e5f6071829300{n}", "SESSION_ID": f"session-{n}"}


def _join(client, study, n: int):
    """Participant ``n`` enters through the link and consents; returns their user."""
    entered = client.get(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **_ids(n)})}")
    assert entered.status_code == 302, entered.content
    client.post(f"/study/{study.public_id}/consent/")
    return Participation.objects.get(
        study=study, user__crowd_identity__participant_id=_ids(n)["PROLIFIC_PID"]
    ).user


def _form(client):
    """The hidden fields of the create page's form as served now (the round it was served in too)."""
    page = client.get(CREATE)
    form = page.context["form"]
    return {
        "client_token": form["client_token"].value(),
        "started": form["started"].value(),
        "round": re.search(r'name="round" value="(\d+)"', page.text).group(1),
    }


def _write(client, statement: str, fields: dict | None = None):
    return client.post(CREATE, {"statement": statement, "label": "hateful", **(fields or _form(client))})


def _rows(user):
    return sorted(
        (key.split(":")[0], amount)
        for key, amount in LedgerEntry.objects.filter(worker=user).values_list("event_key", "amount")
    )


@pytest.fixture
def owner_client(client, owner, password):
    from django.test import Client

    admin = Client()
    admin.login(username=owner.username, password=password)
    return admin


def test_the_start_round_page_warns_of_a_live_study(owner_client, hate_task, hate_round, rule_model, client):
    study = make_study(hate_round, name="Hate speech, round 1")
    _join(client, study, 1)
    page = owner_client.get(reverse("admin:tasks_task_start_round", args=[hate_task.pk])).text
    warning = page.split('id="live-studies-warning"')[1].split("</div>")[0]
    assert "Hate speech, round 1" in warning
    assert "1 participant working" in warning
    assert "open to new participants" in warning
    assert "Starting round 2 ends" in warning
    # The other start-round page (the model admin's action) shows the same warning.
    action = owner_client.post(
        "/admin/models_registry/registeredmodel/",
        {"action": "start_next_round_with_models", "_selected_action": [rule_model.pk]},
    ).text
    assert 'id="live-studies-warning"' in action and "1 participant working" in action


def test_no_warning_without_a_live_study(owner_client, hate_task, hate_round, rule_model):
    study = make_study(hate_round, is_open=False)
    page = owner_client.get(reverse("admin:tasks_task_start_round", args=[hate_task.pk])).text
    assert 'id="live-studies-warning"' not in page
    assert study.name not in page


def test_starting_the_next_round_ends_the_study_and_pays_what_was_done(
    owner_client, hate_task, hate_round, rule_model, owner
):
    from django.test import Client

    study = make_study(hate_round)  # 2 examples, 1 validation; 0.50, 0.10, reward 1.00
    writer, idle = Client(), Client()
    writer_user = _join(writer, study, 1)
    idle_user = _join(idle, study, 2)
    assert _write(writer, "they are all vermin").status_code == 302
    open_form = _form(writer)  # the writer's next form, open in the browser as the round changes
    assert "Study: 1 of 2 examples, 0 of 1 validations" in writer.get("/").text

    started = owner_client.post(
        reverse("admin:tasks_task_start_round", args=[hate_task.pk]),
        {"description": "", "models": [rule_model.pk], "round_number": "2"},
    )
    assert started.status_code == 302, started.content
    round_2 = Round.objects.get(task=hate_task, number=2)

    study.refresh_from_db()
    assert study.is_open is False and study.ended_at is not None
    ended = {p.user_id: p for p in Participation.objects.filter(study=study)}
    assert {(p.status, p.ended_early) for p in ended.values()} == {("completed", True)}
    # Paid for what each did, and the reward (approved on Prolific): by hand, the writer 0.50 + 1.00 and
    # the one who had written nothing 1.00.
    assert _rows(writer_user) == [("example", Decimal("0.5000")), ("reward", Decimal("1.0000"))]
    assert _rows(idle_user) == [("reward", Decimal("1.0000"))]

    # Told on the next page, and sent to the completion page from the create page.
    home = writer.get("/").text
    assert "ended early: round 1 of Hate speech closed" in home
    assert (
        "You are paid for what you did (1 of 2 examples, 0 of 1 validations) and for the submission" in home
    )
    assert f'href="/study/{study.public_id}/complete/">Get your completion code</a>' in home
    sent = writer.get(CREATE)
    assert sent.status_code == 302 and sent["Location"].startswith(f"/study/{study.public_id}/complete/")

    # The form left open is refused, with the text kept; nothing lands in round 2, and no row is added.
    first = _write(writer, "keep them out", open_form)
    assert first.status_code == 200
    assert "ended early: round 1 of Hate speech closed" in first.text  # the banner, above the form
    again = _write(writer, "keep them out", {**open_form, "round": str(round_2.pk)})
    assert "ended early: round 1 of Hate speech closed" in again.text
    assert "keep them out" in again.text
    assert not Example.objects.filter(round=round_2).exists()
    assert len(_rows(writer_user)) == 2

    done = writer.get(f"/study/{study.public_id}/complete/")
    assert done.status_code == 200
    assert "C0DE1234" in done.text
    assert "round 1 of Hate speech closed before you finished" in done.text

    # A newcomer is refused with a page that says why.
    refused = Client().get(
        f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **_ids(3)})}"
    )
    assert refused.status_code == 409
    assert "This study has ended: round 1 of Hate speech stopped collecting examples" in refused.text
    assert Participation.objects.filter(study=study).count() == 2


def test_a_participant_whose_work_was_done_completes_normally(
    client, hate_task, hate_round, rule_model, annotator
):
    study = make_study(hate_round, validations_required=1)
    user = enter_as(study, "pid-done").user
    for n in range(2):
        create_example(task=hate_task, annotator=user, inputs={"statement": f"they {n}"}, target="hateful")
    submit_served(example=make_example(hate_round, annotator), validator=user, verdict="correct")
    start_next_round(task=hate_task, description="", models=[rule_model])
    participation = Participation.objects.get(user=user)
    assert (participation.status, participation.ended_early) == ("completed", False)
    # 2 x 0.50 + 0.10 + 1.00
    assert sum(LedgerEntry.objects.filter(worker=user).values_list("amount", flat=True)) == Decimal("2.10")
    # They had not asked for their code yet: the banner gives it.
    client.force_login(user)
    banner = client.get("/").text
    assert "ended when round 1 of Hate speech closed; your submission is complete." in banner
    assert f'href="/study/{study.public_id}/complete/">Get your completion code</a>' in banner
    assert "C0DE1234" in client.get(f"/study/{study.public_id}/complete/").text


def test_a_participant_past_the_time_limit_is_abandoned_not_rewarded(hate_task, hate_round, rule_model):
    study = make_study(hate_round, time_limit_minutes=30)
    entry = enter_as(study, "pid-slow")
    create_example(task=hate_task, annotator=entry.user, inputs={"statement": "they"}, target="hateful")
    started = entry.participation.started_at - timedelta(minutes=31)
    Participation.objects.filter(pk=entry.participation.pk).update(started_at=started)
    start_next_round(task=hate_task, description="", models=[rule_model])
    slow = Participation.objects.get(pk=entry.participation.pk)
    assert (slow.status, slow.ended_at) == ("abandoned", started + timedelta(minutes=30))
    assert _rows(entry.user) == [("example", Decimal("0.5000"))]  # no reward


def test_closing_the_round_in_the_round_admin_ends_its_studies(owner_client, hate_round, rule_model):
    study = make_study(hate_round)
    user = enter_as(study, "pid-1").user
    owner_client.post("/admin/tasks/round/", {"action": "close_rounds", "_selected_action": [hate_round.pk]})
    study.refresh_from_db()
    assert study.is_open is False
    assert Participation.objects.get(user=user).status == "completed"


def test_another_current_round_ends_the_studies_of_the_old_one(hate_task, hate_round, rule_model):
    study = make_study(hate_round)
    user = enter_as(study, "pid-1").user
    set_current_round(task=hate_task, round_=open_round(hate_task, 2))
    study.refresh_from_db()
    assert study.is_open is False
    assert Participation.objects.get(user=user).status == "completed"


def test_the_api_refuses_an_ended_participant_and_stores_nothing(
    api, hate_task, hate_round, rule_model, annotator
):
    study = make_study(hate_round)
    user = enter_as(study, "pid-1").user
    example = make_example(hate_round, annotator)
    serve(example, user)  # served before the round changed
    start_next_round(task=hate_task, description="", models=[rule_model])
    written = api(user).post(
        "/api/tasks/hate-speech/examples/", {"statement": "they", "label": "hateful"}, format="json"
    )
    assert written.status_code == 403
    body = written.json()
    assert (body["code"], body["url"]) == ("study", f"/study/{study.public_id}/complete/")
    assert "ended early: round 1 of Hate speech closed" in body["detail"]
    # Their claim went with the study: through the API the id now answers as any id not served to them
    # (the validate page, which knows the task, says the study ended: test_study_across_round_change.py).
    voted = api(user).post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json")
    assert (voted.status_code, voted.json()) == (404, {"detail": "No such example."})
    assert Example.objects.filter(annotator=user).count() == 0
    assert example.validations.count() == 0
    assert _rows(user) == [("reward", Decimal("1.0000"))]


def test_a_study_of_an_ended_round_cannot_be_reopened(api, owner, hate_task, hate_round, rule_model):
    study = make_study(hate_round)
    start_next_round(task=hate_task, description="", models=[rule_model])
    response = api(owner).patch(f"/api/studies/{study.public_id}/", {"is_open": True}, format="json")
    assert response.status_code == 400
    assert response.json()["is_open"] == [
        "Round 1 no longer collects examples, so this study cannot take participants again; "
        "create a study on the open round instead."
    ]
    assert Study.objects.get(pk=study.pk).is_open is False
    shown = api(owner).get(f"/api/studies/{study.public_id}/").json()
    assert (shown["is_open"], shown["ended_at"] is not None) == (False, True)
