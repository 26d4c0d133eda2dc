"""The owners' study API: create, read, update (the entry link and its key), field errors, read-only
fields refused and ``is_open`` on by default in a form body; the admin's entry link. Who gets which status for every role is in tests/dynabench/test_api_permission_table.py."""

from __future__ import annotations

import pytest

from crowd.models import Study
from tests.factories.crowd import make_study

pytestmark = pytest.mark.django_db

BODY = {
    "task": "hate-speech",
    "round": 1,
    "name": "Round 1 on Prolific",
    "platform": "prolific",
    "examples_required": 5,
    "validations_required": 10,
    "reward": "2.50",
    "pay_per_example": "0.125",
    "max_participants": 20,
    "completion_code": "C0DE",
    "consent_text": "I agree.",
}


def test_an_owner_creates_a_study_and_gets_its_exact_entry_link(api, owner, hate_round):
    response = api(owner).post("/api/studies/", BODY, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    study = Study.objects.get()
    assert body["id"] == str(study.public_id)
    assert (
        body["currency"],
        body["reward"],
        body["pay_per_example"],
        body["bonus_per_verified_fooling"],
    ) == (
        "GBP",
        "2.5000",
        "0.1250",
        "0.0000",
    )
    assert len(study.entry_key) >= 32
    assert body["entry_link"] == (
        f"http://testserver/study/{study.public_id}/enter/?key={study.entry_key}"
        "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert body["participants"] == {"active": 0, "completed": 0, "returned": 0, "abandoned": 0}
    assert api(owner).get("/api/studies/").json()["results"][0]["id"] == body["id"]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            {"examples_required": 0, "validations_required": 0},
            "examples_required",
            "at least one example or one validation",
        ),
        ({"currency": "gbp"}, "currency", "three capital letters"),
        ({"reward": "-1"}, "reward", "greater than or equal to 0"),
        ({"platform": "crowdflower"}, "platform", "not a valid choice"),
        ({"completion_code": ""}, "completion_code", "Prolific needs the study's completion code"),
        ({"round": 7}, "round", "hate-speech has no round 7"),
        ({"max_participants": "20"}, "max_participants", "Must be a JSON integer"),
        ({"surprise": 1}, "surprise", "Unknown field"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, owner, hate_round, change, field, message):
    response = api(owner).post("/api/studies/", {**BODY, **change}, format="json")
    assert response.status_code == 400
    assert message in " ".join(response.json()[field])
    assert Study.objects.count() == 0


def test_an_owner_updates_a_study_and_rotates_its_key(api, owner, hate_round):
    study = make_study(hate_round)
    old_key = study.entry_key
    url = f"/api/studies/{study.public_id}/"
    response = api(owner).patch(url, {"is_open": False, "rotate_entry_key": True}, format="json")
    assert response.status_code == 200
    study.refresh_from_db()
    assert study.is_open is False and study.entry_key != old_key
    assert study.entry_key in response.json()["entry_link"]
    moved = api(owner).patch(url, {"round": 2}, format="json")
    assert moved.status_code == 400 and "cannot change" in moved.json()["round"][0]


def test_other_people_cannot_see_or_create_studies_of_the_task(api, outsider, hate_round, owner):
    study = make_study(hate_round)
    assert api(outsider).get("/api/studies/").json()["results"] == []
    assert api(outsider).get(f"/api/studies/{study.public_id}/").status_code == 404
    assert api(outsider).post("/api/studies/", BODY, format="json").status_code == 403
    assert api(owner).get("/api/studies/not-a-uuid/").status_code == 404


def test_the_admin_shows_the_entry_link(client, owner, password, hate_round):
    study = make_study(hate_round, platform="mturk")
    client.login(username=owner.username, password=password)
    page = client.get(f"/admin/crowd/study/{study.pk}/change/")
    assert page.status_code == 200
    assert f"<code>http://testserver/study/{study.public_id}/enter/?key={study.entry_key}</code>" in page.text


def test_the_api_refuses_read_only_fields_and_defaults_is_open_in_a_form_body(api, owner, hate_round):
    body = {
        "task": "hate-speech",
        "round": 1,
        "name": "Form",
        "platform": "prolific",
        "examples_required": 1,
        "max_participants": 2,
        "completion_code": "C",
        "consent_text": "Yes.",
    }
    for extra in ({"entry_key": "mine"}, {"public_id": "x"}, {"created_at": "2020-01-01T00:00:00Z"}):
        response = api(owner).post("/api/studies/", {**body, **extra}, format="json")
        assert response.status_code == 400
        assert list(response.json()) == list(extra)
    assert Study.objects.count() == 0
    created = api(owner).post("/api/studies/", body)  # multipart form, no is_open
    assert created.status_code == 201, created.json()
    assert Study.objects.get().is_open is True
