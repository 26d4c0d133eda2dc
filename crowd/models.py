"""Crowd studies: a round's work offered on a crowd platform (Prolific, MTurk or any other), the people
who came through its entry link, and what they are owed (docs/crowd.md, "Crowd studies").

Money is ``Decimal`` end to end (four decimal places stored, so a per-event rate such as 0.125 is
exact); it is rounded half-up to two places only where it is shown or exported (``crowd.money``).
"""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

#: Amounts: up to 99,999,999.9999 in the study currency.
MONEY = {"max_digits": 12, "decimal_places": 4}
ZERO = Decimal("0")

#: Entry keys are 43 url-safe characters (32 random bytes).
ENTRY_KEY_BYTES = 32


def new_entry_key() -> str:
    """A fresh per-study secret for the entry link: 43 url-safe random characters."""
    return secrets.token_urlsafe(ENTRY_KEY_BYTES)


class Platform(models.TextChoices):
    PROLIFIC = "prolific", "Prolific"
    MTURK = "mturk", "Amazon Mechanical Turk"
    GENERIC = "generic", "Other (generic link)"


#: The currency a new study gets when none is given (ISO 4217).
DEFAULT_CURRENCY = {Platform.PROLIFIC: "GBP", Platform.MTURK: "USD", Platform.GENERIC: "USD"}


#: A study's fields that cannot change once anyone has entered it (``Study.clean``), and why.
LIVE_FIXED = (
    "platform",
    "currency",
    "reward",
    "pay_per_example",
    "pay_per_validation",
    "bonus_per_verified_fooling",
    "examples_required",
    "validations_required",
)
LIVE_FIXED_MESSAGE = "This study has participants: its pay and amounts are fixed; create a new study instead."


class Study(models.Model):
    """A round's work offered on a crowd platform: what one submission is, what it pays, who may enter.

    One submission is ``examples_required`` examples written and ``validations_required`` verdicts cast
    in the round (either may be 0, not both). ``reward`` is paid once per completed submission (by the
    platform itself on Prolific and MTurk); ``pay_per_example`` and ``pay_per_validation`` per event,
    up to the required amounts; ``bonus_per_verified_fooling`` per example of the submission settled
    validated_correct that fooled the model. ``public_id`` is in every URL; ``entry_key`` is the
    secret the entry link carries (``crowd.links.entry_link``). Prolific needs ``completion_code``; a
    generic study a code or a URL; MTurk neither (the completion page posts the assignment to MTurk).
    When its round stops collecting, the study ends with it (``crowd.services.end_study``: closed,
    ``ended_at`` set, its running participants completed and paid).
    """

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="studies")
    name = models.CharField(max_length=200)
    platform = models.CharField(max_length=10, choices=Platform.choices)
    examples_required = models.PositiveIntegerField(default=0, help_text="Examples one submission writes.")
    validations_required = models.PositiveIntegerField(default=0, help_text="Verdicts one submission casts.")
    reward = models.DecimalField(**MONEY, default=ZERO, help_text="Paid per completed submission.")
    pay_per_example = models.DecimalField(**MONEY, default=ZERO)
    pay_per_validation = models.DecimalField(**MONEY, default=ZERO)
    bonus_per_verified_fooling = models.DecimalField(
        **MONEY, default=ZERO, help_text="Per example settled validated correct that fooled the model."
    )
    currency = models.CharField(
        max_length=3,
        blank=True,
        validators=[RegexValidator(r"^[A-Z]{3}\Z", "An ISO 4217 code: three capital letters, e.g. GBP.")],
        help_text="ISO 4217; empty for the platform's default (GBP on Prolific, USD otherwise).",
    )
    max_participants = models.PositiveIntegerField(help_text="Active and completed participations at most.")
    completion_code = models.CharField(max_length=100, blank=True)
    completion_url = models.URLField(blank=True, help_text="Where a finished participant is sent.")
    time_limit_minutes = models.PositiveIntegerField(
        default=60, help_text="An active participation older than this is abandoned."
    )
    consent_text = models.TextField()
    is_open = models.BooleanField(default=True)
    entry_key = models.CharField(max_length=64, default=new_entry_key, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When its round stopped collecting examples and the study ended with it (docs/crowd.md).",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(
                condition=Q(examples_required__gt=0) | Q(validations_required__gt=0),
                name="study_requires_some_work",
            ),
            models.CheckConstraint(
                condition=Q(reward__gte=0)
                & Q(pay_per_example__gte=0)
                & Q(pay_per_validation__gte=0)
                & Q(bonus_per_verified_fooling__gte=0),
                name="study_amounts_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(max_participants__gte=1), name="study_max_participants_positive"
            ),
            models.CheckConstraint(condition=Q(time_limit_minutes__gte=1), name="study_time_limit_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if not self.currency and self.platform:
            self.currency = DEFAULT_CURRENCY[Platform(self.platform)]
        super().save(*args, **kwargs)

    def clean(self) -> None:
        """The study's rules, for the admin form and the API (``StudySerializer.validate``): some work per
        submission; the completion code or URL the platform needs; a new study (or one moved) collects in
        an open round (``Round.is_open``), and a closed study of a round that no longer collects cannot be
        opened again; once anyone has entered, the pay and amounts and the round are fixed and
        ``max_participants`` cannot go below the places taken. Raises ``ValidationError``
        (field → message)."""
        errors: dict[str, str] = {}
        if not self.examples_required and not self.validations_required:
            errors["examples_required"] = "A submission needs at least one example or one validation."
        if self.platform == Platform.GENERIC and not self.completion_code and not self.completion_url:
            errors["completion_code"] = "Give a completion code, a completion URL, or both."
        if self.platform == Platform.PROLIFIC and not self.completion_code:
            errors["completion_code"] = "Prolific needs the study's completion code."
        stored = Study.objects.filter(pk=self.pk).first() if self.pk else None
        if self.round_id and (stored is None or stored.round_id != self.round_id) and not self.round.is_open:
            why = "is closed" if self.round.is_closed else "is not the task's current round"
            errors["round"] = f"Round {self.round.number} {why}; studies collect in the open round."
        if stored is not None:
            errors.update(self._live_errors(stored))
            if self.is_open and not stored.is_open and self.round_id and not self.round.is_open:
                errors["is_open"] = (
                    f"Round {self.round.number} no longer collects examples, so this study cannot take "
                    "participants again; create a study on the open round instead."
                )
        if errors:
            raise ValidationError(errors)

    def _live_errors(self, stored: Study) -> dict[str, str]:
        """Changes refused once anyone has entered the study (``stored`` is its saved row): the pay and
        amounts (``LIVE_FIXED``), the round, and ``max_participants`` below the places taken."""
        if not self.participations.exists():
            return {}
        errors = {
            name: LIVE_FIXED_MESSAGE
            for name in LIVE_FIXED
            if getattr(self, name) != getattr(stored, name) and not (name == "currency" and not self.currency)
        }
        if self.round_id != stored.round_id:
            errors["round"] = "This study has participants: its round is fixed; create a new study instead."
        taken = self.participations.filter(
            status__in=(Participation.Status.ACTIVE, Participation.Status.COMPLETED)
        ).count()
        if self.max_participants is not None and self.max_participants < taken:
            errors["max_participants"] = (
                f"{taken} places are taken (active or completed participants); the study cannot hold fewer."
            )
        return errors

    @property
    def time_limit(self) -> timedelta:
        return timedelta(minutes=self.time_limit_minutes)


class CrowdIdentity(models.Model):
    """A crowd worker's passwordless account: one per (platform, participant id), made on first entry."""

    platform = models.CharField(max_length=10, choices=Platform.choices)
    participant_id = models.CharField(max_length=100)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="crowd_identity"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["platform", "participant_id"]
        verbose_name_plural = "crowd identities"
        constraints = [
            models.UniqueConstraint(
                fields=["platform", "participant_id"], name="crowd_identity_unique_per_platform"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_platform_display()} {self.participant_id}"


class Participation(models.Model):
    """One person's go at one study (at most one per study and person: a freed slot is not re-entered).

    ``round`` repeats ``study.round`` so that the database can keep one active participation per person
    and round: the ledger pays an event under it (``crowd.ledger``). ``ended_early``: completed when the
    study ended with its round, before the submission's work was done.
    """

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        COMPLETED = "completed", "Completed"
        RETURNED = "returned", "Returned"
        ABANDONED = "abandoned", "Abandoned (time limit passed)"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="participations")
    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="participations"
    )
    session_id = models.CharField(
        max_length=100, blank=True, help_text="Prolific SESSION_ID or generic session_id."
    )
    platform_study_id = models.CharField(max_length=100, blank=True, help_text="Prolific STUDY_ID.")
    assignment_id = models.CharField(max_length=100, blank=True, help_text="MTurk assignmentId.")
    hit_id = models.CharField(max_length=100, blank=True, help_text="MTurk hitId.")
    turk_submit_to = models.URLField(blank=True, help_text="MTurk turkSubmitTo (www or workersandbox).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    started_at = models.DateTimeField()
    consented_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(
        null=True, blank=True, help_text="When it stopped counting: completed, returned, or the time limit."
    )
    ended_early = models.BooleanField(
        default=False,
        help_text="Completed when the study's round stopped collecting, before the submission's work was "
        "done.",
    )

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="participation_one_per_study_and_user"),
            models.UniqueConstraint(
                fields=["round", "user"],
                condition=Q(status="active"),
                name="participation_one_active_per_round_and_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.study} ({self.status})"

    @property
    def deadline(self):
        return self.started_at + self.study.time_limit


class PaymentBatch(models.Model):
    """One run of ``export_payments``: the file it wrote (kept, so it can be downloaded again)."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="payment_batches")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    content = models.TextField(help_text="The exported file, in the platform's format.")
    n_workers = models.PositiveIntegerField(default=0)
    n_entries = models.PositiveIntegerField(default=0, help_text="Ledger rows this batch marked paid.")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "payment batches"

    def __str__(self) -> str:
        return f"payment batch {self.pk} of {self.study}"


class LedgerEntry(models.Model):
    """One amount owed to one worker for one event (docs/crowd.md, "Pay ledger").

    ``event_key`` names the event: ``example:<example id>``, ``validation:<validation id>``,
    ``bonus:<example id>:<n>``, ``reversal:example:<example id>``, ``reversal:bonus:<example id>:<n>``,
    ``reward:<participation id>``. Unique with the worker, so a recount, a retried request or a double
    click never records an event twice. Rows are never changed, only marked paid; a correction is a
    reversal row with the negative amount.
    """

    class Kind(models.TextChoices):
        EXAMPLE = "example", "Example"
        VALIDATION = "validation", "Validation"
        BONUS = "bonus", "Bonus (verified model-fooling example)"
        REWARD = "reward", "Reward (completed submission)"
        REVERSAL = "reversal", "Reversal"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="ledger_entries")
    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="ledger_entries")
    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="ledger_entries")
    worker = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="ledger_entries"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    event_key = models.CharField(max_length=100)
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    batch = models.ForeignKey(
        PaymentBatch, null=True, blank=True, on_delete=models.PROTECT, related_name="entries"
    )

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "ledger entries"
        constraints = [
            models.UniqueConstraint(
                fields=["event_key", "worker"], name="ledger_entry_one_per_event_and_worker"
            )
        ]
        indexes = [models.Index(fields=["study", "paid_at"]), models.Index(fields=["participation", "kind"])]

    def __str__(self) -> str:
        return f"{self.event_key} → {self.worker}: {self.amount} {self.currency}"
