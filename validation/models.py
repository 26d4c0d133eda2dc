"""Validations: other people's verdicts on examples."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Validation(models.Model):
    """One validator's verdict on one example (docs/domain.md, "Validation").

    Rows are never changed once written: every vote is kept with its time. A person casts at most one
    ordinary vote per example, and an example has at most one owner verdict (``is_owner_verdict``,
    the one that settled it), a row of its own beside the owner's ordinary vote if they cast one.
    """

    class Verdict(models.TextChoices):
        CORRECT = "correct", "Correct"
        INCORRECT = "incorrect", "Incorrect"
        FLAGGED = "flagged", "Flagged"

    example = models.ForeignKey("annotation.Example", on_delete=models.PROTECT, related_name="validations")
    validator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="validations"
    )
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    corrected_label = models.CharField(max_length=100, blank=True)
    reason = models.TextField(blank=True)
    is_owner_verdict = models.BooleanField(default=False)
    # Set by the service from its ``now`` (one time for the vote and the settlement it makes).
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["example", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["example", "validator"],
                condition=Q(is_owner_verdict=False),
                name="validation_one_vote_per_example_and_validator",
            ),
            models.UniqueConstraint(
                fields=["example"],
                condition=Q(is_owner_verdict=True),
                name="validation_one_owner_verdict_per_example",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.validator} → {self.verdict} on example {self.example_id}"


class ValidationClaim(models.Model):
    """An example handed to one validator by the queue and reserved for them until ``expires_at``.

    One row per example at most (the claim is the example's reservation, not a vote): a live claim
    keeps other validators from being served that example; an expired one is simply taken over.
    Claims are ephemeral bookkeeping, so they go with their example (CASCADE), unlike verdicts.
    """

    example = models.OneToOneField(
        "annotation.Example", on_delete=models.CASCADE, related_name="validation_claim"
    )
    validator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="validation_claims"
    )
    expires_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["expires_at"]

    def __str__(self) -> str:
        return f"{self.validator} holds example {self.example_id} until {self.expires_at:%H:%M:%S}"
