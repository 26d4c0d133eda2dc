"""Database constraints hold the invariants even when application code is bypassed."""

import uuid

import pytest
from django.db import IntegrityError, transaction
from django.db.models.deletion import ProtectedError

from annotation.models import Example
from tasks.models import Round
from validation.models import Validation

pytestmark = pytest.mark.django_db


def _example(round_, annotator=None, **extra) -> Example:
    return Example.objects.create(
        round=round_, annotator=annotator, inputs={"statement": "text"}, target="hateful", **extra
    )


def test_one_round_number_per_task(hate_round):
    with pytest.raises(IntegrityError), transaction.atomic():
        Round.objects.create(task=hate_round.task, number=1)


def test_round_number_must_be_positive(hate_task):
    with pytest.raises(IntegrityError), transaction.atomic():
        Round.objects.create(task=hate_task, number=0)


def test_one_example_per_annotator_and_client_token(hate_round, annotator, validator):
    token = uuid.uuid4()
    _example(hate_round, annotator, client_token=token)
    _example(hate_round, validator, client_token=token)  # another annotator may reuse a token
    _example(hate_round, annotator)  # no token: no constraint
    _example(hate_round, annotator)
    with pytest.raises(IntegrityError), transaction.atomic():
        _example(hate_round, annotator, client_token=token)
    assert Example.objects.count() == 4


def test_one_validation_per_example_and_validator(hate_round, annotator, validator):
    example = _example(hate_round, annotator)
    Validation.objects.create(example=example, validator=validator, verdict="correct")
    with pytest.raises(IntegrityError), transaction.atomic():
        Validation.objects.create(example=example, validator=validator, verdict="incorrect")


def test_deleting_a_round_with_examples_is_refused(hate_round, annotator):
    _example(hate_round, annotator)
    with pytest.raises(ProtectedError):
        hate_round.delete()
    assert Example.objects.filter(round=hate_round).count() == 1


def test_deleting_a_validator_with_validations_is_refused(hate_round, annotator, validator):
    Validation.objects.create(example=_example(hate_round, annotator), validator=validator, verdict="flagged")
    with pytest.raises(ProtectedError):
        validator.delete()
