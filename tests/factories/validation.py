"""Validation rows written directly (``validation.services.submit_validation`` settles; this does not)."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from tests.factories.accounts import UserFactory


class ValidationFactory(DjangoModelFactory):
    """A "correct" verdict on ``example`` (required) by a new validator; no quorum is counted."""

    class Meta:
        model = "validation.Validation"

    example = None
    validator = factory.SubFactory(UserFactory)
    verdict = "correct"


class GoldItemFactory(DjangoModelFactory):
    """A gold item on ``example`` (required) of its task with the known verdict "correct"."""

    class Meta:
        model = "validation.GoldItem"

    example = None
    task = factory.LazyAttribute(lambda o: o.example.round.task)
    verdict = "correct"


def serve_as_gold(gold, validator, round_=None, *, minutes: int = 30):
    """A gold claim: ``gold`` served to ``validator`` while validating ``round_`` (default its own round)."""
    from datetime import timedelta

    from django.utils import timezone

    from validation.models import GoldClaim

    return GoldClaim.objects.create(
        gold=gold,
        validator=validator,
        round=round_ or gold.example.round,
        expires_at=timezone.now() + timedelta(minutes=minutes),
    )
