"""The Example admin's owner-verdict actions settle through the validation service."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse

from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Task
from tasks.services import ensure_round, set_current_round
from tests.factories.annotation import make_example
from validation.models import Validation

CHANGELIST = reverse("admin:annotation_example_changelist")


def _act(client, action, examples):
    return client.post(
        CHANGELIST, {"action": action, "_selected_action": [e.pk for e in examples]}, follow=True
    )


@pytest.mark.parametrize(
    ("action", "status"),
    [
        ("settle_correct", "validated_correct"),
        ("settle_incorrect", "validated_incorrect"),
        ("settle_flagged", "flagged"),
    ],
)
def test_owner_settles_selected_examples(client, owner, password, hate_round, annotator, action, status):
    examples = [make_example(hate_round, annotator), make_example(hate_round, annotator, model_wrong=False)]
    client.login(username=owner.username, password=password)
    page = _act(client, action, examples)
    assert page.status_code == 200
    assert "Settled 2 example(s)" in page.text
    for e in examples:
        e.refresh_from_db()
        assert e.status == status
    assert Validation.objects.filter(validator=owner, is_owner_verdict=True).count() == 2


def test_already_settled_and_retracted_are_reported(client, owner, password, hate_round, annotator):
    done = make_example(hate_round, annotator, status="flagged")
    gone = make_example(hate_round, annotator, is_retracted=True)
    client.login(username=owner.username, password=password)
    page = _act(client, "settle_correct", [done, gone])
    assert "Settled 0 example(s)" in page.text
    assert f"example {done.pk}: This example is already settled (flagged)." in page.text
    assert f"example {gone.pk}: This example was retracted by its author." in page.text


def test_owner_cannot_settle_another_tasks_examples(client, owner, password, annotator):
    other = Task.objects.create(slug="other", name="Other", config=copy.deepcopy(HATE_SPEECH_CONFIG))
    round_ = ensure_round(task=other, number=1)
    set_current_round(task=other, round_=round_)
    foreign = make_example(round_, annotator)
    client.login(username=owner.username, password=password)
    _act(client, "settle_correct", [foreign])
    foreign.refresh_from_db()
    assert foreign.status == "pending" and not Validation.objects.exists()
