"""An author cannot retract an example once validators settled it: their verdicts, the round's dataset and
any pay made for it stand (a fresh-user test retracted a validated-correct example and the round's verified
count dropped to 0). Flagging it for the owners stays possible."""

from __future__ import annotations

import pytest

from annotation.services import ExampleError, flag_example, retract_example
from tests.factories.annotation import make_example
from tests.helpers.api import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("status", ["validated_correct", "validated_incorrect", "flagged"])
def test_a_settled_example_cannot_be_retracted(hate_round, annotator, status):
    example = make_example(hate_round, annotator, status=status)
    with pytest.raises(ExampleError, match="already settled"):
        retract_example(example=example, user=annotator)
    example.refresh_from_db()
    assert not example.is_retracted and example.retracted_at is None
    flag_example(example=example, user=annotator, reason="I mislabelled it")
    example.refresh_from_db()
    assert example.is_flagged_by_annotator


def test_the_api_answers_400_and_the_page_says_why(client, hate_round, annotator, password):
    example = make_example(hate_round, annotator, status="validated_correct")
    response = client_for(annotator).post(f"/api/examples/{example.pk}/retract/")
    assert response.status_code == 400  # as for a competition round's example
    assert "already settled (validated correct)" in response.json()["non_field_errors"][0]
    assert client.login(username=annotator.username, password=password)
    page = client.post(f"/examples/{example.pk}/retract/", follow=True).text
    assert "can no longer be retracted" in page
    example.refresh_from_db()
    assert not example.is_retracted


def test_a_pending_example_still_can(hate_round, annotator):
    example = make_example(hate_round, annotator)
    assert retract_example(example=example, user=annotator).is_retracted
