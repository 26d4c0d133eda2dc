"""Every vote is kept with its time: an owner verdict is a new row, never an overwrite of a vote.

Times are fixed by passing ``now`` to the services (as ``next_example(now=...)`` is tested).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction

from tests.factories.annotation import make_example
from tests.factories.validation import serve, submit_served
from validation import selectors
from validation.models import Validation

T0 = datetime(2025, 3, 4, 10, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _rows(example):
    return list(
        example.validations.order_by("id").values_list(
            "validator", "verdict", "corrected_label", "is_owner_verdict", "created_at"
        )
    )


@pytest.fixture
def example(hate_round, annotator):
    return make_example(hate_round, annotator)


def test_an_owner_verdict_keeps_the_owners_own_earlier_vote_and_its_time(example, owner, validator):
    submit_served(example=example, validator=owner, verdict="correct", now=_at(1))
    submit_served(example=example, validator=validator, verdict="incorrect", now=_at(2))
    outcome = submit_served(
        example=example,
        validator=owner,
        verdict="incorrect",
        corrected_label="not-hateful",
        owner_mode=True,
        now=_at(3),
    )
    assert (outcome.settled, outcome.status) == (True, "validated_incorrect")
    assert _rows(example) == [
        (owner.pk, "correct", "", False, _at(1)),
        (validator.pk, "incorrect", "", False, _at(2)),
        (owner.pk, "incorrect", "not-hateful", True, _at(3)),
    ]
    example.refresh_from_db()
    assert (example.status, example.settled_at) == ("validated_incorrect", _at(3))


def test_quorum_settles_at_the_time_of_the_deciding_vote(example, validator, crowd):
    for minutes, user in enumerate((validator, crowd[0], crowd[1]), start=1):
        submit_served(example=example, validator=user, verdict="correct", now=_at(minutes))
    example.refresh_from_db()
    assert (example.status, example.settled_at) == ("validated_correct", _at(3))
    assert [row[-1] for row in _rows(example)] == [_at(1), _at(2), _at(3)]


def test_a_pending_example_has_no_settled_time(example, validator):
    submit_served(example=example, validator=validator, verdict="correct", now=_at(1))
    example.refresh_from_db()
    assert (example.status, example.settled_at) == ("pending", None)


def test_the_owners_ordinary_vote_still_counts_as_theirs_in_agreement(hate_task, example, owner, validator):
    submit_served(example=example, validator=owner, verdict="correct", now=_at(1))
    submit_served(example=example, validator=owner, verdict="flagged", owner_mode=True, now=_at(2))
    [row] = selectors.annotator_round_stats(hate_task, user=owner)
    # Two verdicts given; the ordinary one disagrees with the settled status, the owner verdict is left out.
    assert (row.validations, row.judged_settled, row.agreeing) == (2, 1, 0)


def test_one_ordinary_vote_per_person_and_one_owner_verdict_per_example(example, owner, validator):
    Validation.objects.create(example=example, validator=owner, verdict="correct")
    Validation.objects.create(example=example, validator=owner, verdict="flagged", is_owner_verdict=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Validation.objects.create(example=example, validator=owner, verdict="incorrect")
    with pytest.raises(IntegrityError), transaction.atomic():
        Validation.objects.create(
            example=example, validator=validator, verdict="correct", is_owner_verdict=True
        )
    assert example.validations.count() == 2


def test_an_owner_verdict_through_the_api_is_a_new_row(api, example, owner):
    url = f"/api/examples/{example.pk}/validations/"
    serve(
        example, owner
    )  # the owner's ordinary vote is a vote: served first; the owner verdict needs no serving
    first = api(owner).post(url, {"verdict": "correct"}, format="json").json()
    second = api(owner).post(url, {"verdict": "flagged", "owner_mode": True}, format="json").json()
    assert second["id"] != first["id"] and second["settled"] is True
    assert list(example.validations.order_by("id").values_list("id", "verdict", "is_owner_verdict")) == [
        (first["id"], "correct", False),
        (second["id"], "flagged", True),
    ]
