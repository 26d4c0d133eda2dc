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
    # A red-teaming conversation's verdict comes from the validator's own answers to the task's rubric
    # (tasks/rubric.py), kept here: {question name: answer}; empty for every other verdict.
    rubric_answers = models.JSONField(default=dict, blank=True)
    # In uncertainty mode (tasks/uncertainty.py) the validator gives the target themselves, unanchored:
    # a label, or {"answer": str, "answer_start": int} for a span; the verdict says whether it agrees
    # with the author's. None for every other verdict.
    given_target = models.JSONField(null=True, blank=True)
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


class GoldItem(models.Model):
    """An example of the task whose verdict its owners know, mixed into validators' queues to measure
    them (docs/crowd.md, "Gold items"). Any round of the task, normally an example already settled.

    A gold item is served like any other example (``validation.gold.selectors.gold_queue_for``) and a
    verdict on it is a ``GoldAnswer``, never a ``Validation``: it changes no vote count, quorum, MER,
    vMER or agreement. ``retired_at`` set: no longer served (the answers stay for gold accuracy).
    """

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="gold_items")
    example = models.ForeignKey("annotation.Example", on_delete=models.PROTECT, related_name="gold_items")
    verdict = models.CharField(
        max_length=10, choices=Validation.Verdict.choices, help_text="The known verdict."
    )
    note = models.TextField(blank=True, help_text="For owners: why this is the verdict.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    retired_at = models.DateTimeField(null=True, blank=True, help_text="No longer served when set.")

    class Meta:
        ordering = ["task", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["example"],
                condition=Q(retired_at__isnull=True),
                name="gold_item_one_active_per_example",
            ),
        ]

    def __str__(self) -> str:
        return f"gold {self.verdict} on example {self.example_id}"


class GoldAnswer(models.Model):
    """One validator's verdict on a gold item, kept apart from ``Validation`` (docs/crowd.md, "Gold
    items"). ``is_correct``: ``verdict`` equals the gold item's verdict when answered."""

    gold = models.ForeignKey(GoldItem, on_delete=models.PROTECT, related_name="answers")
    validator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gold_answers"
    )
    verdict = models.CharField(max_length=10, choices=Validation.Verdict.choices)
    corrected_label = models.CharField(max_length=100, blank=True)
    reason = models.TextField(blank=True)
    is_correct = models.BooleanField()
    # The round the validator was validating when served it (their statistics count it there, as a vote).
    round = models.ForeignKey(
        "tasks.Round", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["gold", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["gold", "validator"], name="gold_answer_one_per_gold_and_validator"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.validator} → {self.verdict} on {self.gold}"


class GoldClaim(models.Model):
    """A gold item served to one validator in ``round`` (the round they were validating), until
    ``expires_at``: the record that what they were served was gold, so their verdict becomes a
    ``GoldAnswer``. Not exclusive, unlike ``ValidationClaim``: many validators may hold the same gold
    item at once. At most one per validator and round (the queue's one-claim-per-round rule)."""

    gold = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="claims")
    validator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gold_claims"
    )
    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="+")
    expires_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["expires_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["validator", "round"], name="gold_claim_one_per_validator_and_round"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.validator} holds {self.gold} until {self.expires_at:%H:%M:%S}"
