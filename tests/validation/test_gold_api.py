"""The gold API (owners only) and the admin actions: mark, list, retire, accuracy; bad input is a 400
with field messages."""

from __future__ import annotations

import pytest

from tests.factories.annotation import make_example
from tests.factories.validation import GoldItemFactory
from tests.helpers.api import client_for
from validation.models import GoldAnswer, GoldItem

pytestmark = pytest.mark.django_db

URL = "/api/tasks/hate-speech/gold/"


def test_an_owner_marks_lists_and_deletes_a_gold_item(owner, hate_round, annotator):
    example = make_example(hate_round, annotator, status="validated_correct")
    client = client_for(owner)
    created = client.post(
        URL, {"example": example.pk, "verdict": "correct", "note": "clearly hateful"}, format="json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["example"], body["round"], body["verdict"], body["answers"], body["retired_at"]) == (
        example.pk,
        1,
        "correct",
        0,
        None,
    )
    listed = client.get(URL).json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == body["id"]
    again = client.post(URL, {"example": example.pk, "verdict": "incorrect"}, format="json")
    assert again.status_code == 409
    assert client.delete(f"{URL}{body['id']}/").status_code == 204
    assert not GoldItem.objects.exists()  # nobody answered it: deleted


def test_an_answered_gold_item_is_retired_not_deleted(owner, hate_round, annotator, validator):
    gold = GoldItemFactory(example=make_example(hate_round, annotator, status="validated_correct"))
    GoldAnswer.objects.create(gold=gold, validator=validator, verdict="correct", is_correct=True)
    assert client_for(owner).delete(f"{URL}{gold.pk}/").status_code == 204
    gold.refresh_from_db()
    assert gold.retired_at is not None
    accuracy = client_for(owner).get(URL + "accuracy/").json()
    assert accuracy == [
        {"validator": "validator", "answered": 1, "correct": 1, "accuracy": 1.0, "held": False}
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"example": 999999, "verdict": "correct"}, "example"),
        ({"example": "x", "verdict": "correct"}, "example"),
        ({"verdict": "correct"}, "example"),
        ({"example": "{example}", "verdict": "maybe"}, "verdict"),
        ({"example": "{example}", "verdict": "correct", "note": "bell \u0007"}, "note"),
        ({"example": "{example}", "verdict": "correct", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_400_with_field_messages(owner, hate_round, annotator, body, field):
    example = make_example(hate_round, annotator)
    body = {k: (example.pk if v == "{example}" else v) for k, v in body.items()}
    response = client_for(owner).post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()


def test_a_retracted_example_cannot_be_gold(owner, hate_round, annotator):
    example = make_example(hate_round, annotator, is_retracted=True)
    response = client_for(owner).post(URL, {"example": example.pk, "verdict": "correct"}, format="json")
    assert response.status_code == 400 and "example" in response.json()


def test_an_example_of_another_task_is_refused(owner, sentiment_task, annotator):
    from tests.factories.tasks import open_round

    other = make_example(open_round(sentiment_task), annotator, label="positive")
    response = client_for(owner).post(URL, {"example": other.pk, "verdict": "correct"}, format="json")
    assert response.status_code == 400 and "example" in response.json()


def test_non_owners_are_refused(validator, hate_round, annotator):
    gold = GoldItemFactory(example=make_example(hate_round, annotator))
    client = client_for(validator)
    assert client.get(URL).status_code == 403
    assert (
        client.post(URL, {"example": gold.example_id, "verdict": "correct"}, format="json").status_code == 403
    )
    assert client.delete(f"{URL}{gold.pk}/").status_code == 403
    assert client.get(URL + "accuracy/").status_code == 403
    assert client_for(None).get(URL).status_code == 401


def test_the_example_admin_marks_gold(client, owner, password, hate_round, annotator):
    example = make_example(hate_round, annotator, status="validated_incorrect")
    client.login(username="owner", password=password)
    response = client.post(
        "/admin/annotation/example/",
        {"action": "gold_incorrect", "_selected_action": [example.pk]},
        follow=True,
    )
    assert response.status_code == 200
    gold = GoldItem.objects.get()
    assert (gold.example, gold.verdict, gold.created_by, gold.task_id) == (
        example,
        "incorrect",
        owner,
        hate_round.task_id,
    )
    page = client.get(f"/admin/tasks/task/{hate_round.task_id}/gold-accuracy/")
    assert page.status_code == 200 and b"gold-accuracy" in page.content
    assert client.get("/admin/validation/golditem/").status_code == 200
