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
