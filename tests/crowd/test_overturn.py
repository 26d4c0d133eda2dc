"""An owner overturning a settled example (``validation.services.overturn_verdict``, the Example admin's
"Overturn" actions): what it refuses, and the ledger reconciled through ``example_settled``."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.models import Example
from crowd.models import LedgerEntry
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.crowd import enter_as
from tests.factories.validation import submit_served
from validation.models import Validation
from validation.services import VerdictError, overturn_verdict, submit_validation

pytestmark = pytest.mark.django_db


def _quorum(example, verdict):
    for _ in range(3):
        submit_served(example=example, validator=UserFactory(), verdict=verdict)


@pytest.mark.parametrize(
    ("setup", "who", "verdict", "code"),
    [
        ("pending", "owner", "correct", "not_settled"),
        ("correct", "validator", "incorrect", "not_owner"),
        ("correct", "owner", "correct", "settled"),
        ("owner_settled", "owner", "incorrect", "settled"),
        ("correct", "owner", "maybe", "invalid"),
    ],
)
def test_refusals(hate_round, annotator, owner, validator, setup, who, verdict, code):
    example = make_example(hate_round, annotator)
    if setup == "correct":
        _quorum(example, "correct")
    elif setup == "owner_settled":
        submit_validation(example=example, validator=owner, verdict="correct", owner_mode=True)
    with pytest.raises(VerdictError) as refused:
        overturn_verdict(
            example=example, owner={"owner": owner, "validator": validator}[who], verdict=verdict
        )
    assert refused.value.code == code


def test_overturn_keeps_the_votes_and_stamps_the_owner_verdict(hate_round, annotator, owner):
    example = make_example(hate_round, annotator)
    _quorum(example, "correct")
    outcome = overturn_verdict(example=example, owner=owner, verdict="flagged", reason="spam")
    example.refresh_from_db()
    assert (outcome.settled, example.status, example.settled_at) == (
        True,
        "flagged",
        outcome.validation.created_at,
    )
    assert list(Validation.objects.filter(example=example).values_list("verdict", "is_owner_verdict")) == [
        ("correct", False),
        ("correct", False),
        ("correct", False),
        ("flagged", True),
    ]


def test_the_admin_action_overturns_and_reverses_the_bonus(
    client, owner, password, study, hate_task, rule_model
):
    from annotation.services import create_example

    user = enter_as(study, "pid-1").user
    example, _ = create_example(
        task=hate_task, annotator=user, inputs={"statement": "I love you"}, target="hateful"
    )
    _quorum(example, "correct")
    client.login(username=owner.username, password=password)
    asked = client.post(
        "/admin/annotation/example/",
        {"action": "overturn_incorrect", "_selected_action": [example.pk]},
        follow=True,
    )
    # The action asks first (tests/validation/test_overturn_confirm.py); its form's POST overturns.
    assert "Overturn 1 example to validated incorrect?" in asked.text
    assert Example.objects.get(pk=example.pk).status == "validated_correct"
    page = client.post(
        "/admin/annotation/example/overturn/", {"verdict": "incorrect", "ids": [example.pk]}, follow=True
    )
    assert "Overturned 1 example(s) to incorrect." in page.text
    assert Example.objects.get(pk=example.pk).status == "validated_incorrect"
    assert list(LedgerEntry.objects.order_by("id").values_list("event_key", "amount")) == [
        (f"example:{example.pk}", Decimal("0.5000")),
        (f"bonus:{example.pk}:1", Decimal("0.2500")),
        (f"reversal:bonus:{example.pk}:1", Decimal("-0.2500")),
    ]
