"""Overturning a settled example asks first (issue 29): the Example admin's "Overturn ..." actions only
lead to a confirmation page; its GET shows what will change and changes nothing; its POST overturns
(``validation.services.overturn_verdict``)."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse

from annotation.models import Example
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Task
from tasks.services import ensure_round, set_current_round
from tests.factories.annotation import make_example
from validation.models import Validation

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:annotation_example_changelist")
CONFIRM = "/admin/annotation/example/overturn/"


@pytest.fixture
def settled(hate_round, annotator):
    """Settled validated correct by quorum: three 'correct' votes (rows written directly)."""
    return make_example(hate_round, annotator, status="validated_correct")


@pytest.fixture
def owner_client(client, owner, password):
    assert client.login(username=owner.username, password=password)
    return client


def _status(example):
    return Example.objects.get(pk=example.pk).status


def test_the_action_only_leads_to_the_confirmation(owner_client, settled):
    response = owner_client.post(
        CHANGELIST, {"action": "overturn_incorrect", "_selected_action": [settled.pk]}
    )
    assert response.status_code == 302
    assert response["Location"] == f"{CONFIRM}?verdict=incorrect&ids={settled.pk}"
    assert _status(settled) == "validated_correct" and not Validation.objects.exists()


def test_get_shows_what_will_change_and_changes_nothing(owner_client, settled, hate_round, annotator):
    pending = make_example(hate_round, annotator)
    page = owner_client.get(CONFIRM, {"verdict": "incorrect", "ids": f"{settled.pk},{pending.pk}"})
    assert page.status_code == 200
    text = page.text
    assert "Overturn 1 example to validated incorrect?" in text
    assert f"<td>{settled.pk}</td>" in text
    assert "<td>Validated correct</td><td>Validated incorrect</td>" in text
    assert "A bonus already paid to its author for it is reversed." in text
    assert f"Example {pending.pk} is left as it is: This example is not settled yet" in text
    assert 'method="post"' in text and 'name="verdict" value="incorrect"' in text
    assert f'name="ids" value="{settled.pk}"' in text  # only the example that will change is posted
    assert (_status(settled), _status(pending)) == ("validated_correct", "pending")
    assert not Validation.objects.exists()


def test_post_overturns(owner_client, owner, settled):
    page = owner_client.post(CONFIRM, {"verdict": "incorrect", "ids": str(settled.pk)}, follow=True)
    assert page.redirect_chain[-1][0] == CHANGELIST
    assert "Overturned 1 example(s) to incorrect." in page.text
    assert _status(settled) == "validated_incorrect"
    assert list(Validation.objects.values_list("validator", "verdict", "is_owner_verdict")) == [
        (owner.pk, "incorrect", True)
    ]


def test_another_owners_examples_are_neither_shown_nor_overturned(owner_client, annotator):
    other = Task.objects.create(slug="other", name="Other", config=copy.deepcopy(HATE_SPEECH_CONFIG))
    round_ = ensure_round(task=other, number=1)
    set_current_round(task=other, round_=round_)
    foreign = make_example(round_, annotator, status="validated_correct")
    page = owner_client.get(CONFIRM, {"verdict": "incorrect", "ids": str(foreign.pk)})
    assert page.status_code == 200 and "Nothing to overturn" in page.text
    owner_client.post(CONFIRM, {"verdict": "incorrect", "ids": str(foreign.pk)})
    assert _status(foreign) == "validated_correct" and not Validation.objects.exists()


@pytest.mark.parametrize("query", [{"verdict": "maybe", "ids": "1"}, {"verdict": "correct", "ids": "x"}])
def test_a_bad_address_is_a_404(owner_client, settled, query):
    assert owner_client.get(CONFIRM, query).status_code == 404
