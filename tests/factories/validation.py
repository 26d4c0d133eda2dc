"""Validation rows written directly (``validation.services.submit_validation`` settles; this does not),
and the claims that serve an example to a validator, without which their verdict does not count."""

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


def serve(example, validator, *, minutes: int = 10):
    """The queue's claim: ``example`` served to ``validator`` for ``minutes`` (taking over any claim on it,
    as after its expiry), so that their verdict counts (``validation.services.served_to``)."""
    from datetime import timedelta

    from django.utils import timezone

    from validation.models import ValidationClaim

    claim, _ = ValidationClaim.objects.update_or_create(
        example=example,
        defaults={"validator": validator, "expires_at": timezone.now() + timedelta(minutes=minutes)},
    )
    return claim


def submit_served(*, example, validator, **verdict):
    """``validation.services.submit_validation`` on ``example`` served to ``validator`` first (``serve``);
    owner-mode verdicts need no serving and are sent as they are."""
    from validation.services import submit_validation

    if not verdict.get("owner_mode"):
        serve(example, validator)
    return submit_validation(example=example, validator=validator, **verdict)


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
