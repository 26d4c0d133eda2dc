"""Tasks, rounds and contexts: the base every other app builds on."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from .config import TaskConfig, validate_config
from .json import UnicodeJSONEncoder


class Task(models.Model):
    """A benchmark problem defined by its config (docs/domain.md, "Task")."""

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=200)
    config = models.JSONField(
        encoder=UnicodeJSONEncoder,
        help_text="The task definition; checked against the task config JSON Schema.",
    )
    instructions = models.TextField(blank=True)
    owners = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="owned_tasks", blank=True)
    current_round = models.ForeignKey(
        "tasks.Round",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The one round that accepts examples.",
    )
    validation_quorum = models.PositiveSmallIntegerField(
        default=3, help_text="Matching validations that settle an example."
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(validation_quorum__gte=1), name="task_quorum_at_least_one"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        validate_config(self.config)
        self._check_labels_unchanged()
        if self.current_round_id and self.current_round.task_id != self.pk:
            raise ValidationError({"current_round": "The current round must be one of this task's rounds."})

    def _check_labels_unchanged(self) -> None:
        """Labels are what examples' targets and models' outputs mean: they cannot change under them."""
        if self.pk is None:
            return
        stored = Task.objects.filter(pk=self.pk).values_list("config", flat=True).first() or {}
        before = TaskConfig(stored).labels if stored.get("target_field") else []
        after = TaskConfig(self.config).labels
        if before == after:
            return
        has_examples = self.rounds.filter(examples__isnull=False).exists()
        if has_examples or self.models.exists():
            raise ValidationError(
                {
                    "config": (
                        f"The labels cannot change from {before} to {after}: this task already has "
                        "examples or models that use them. Create a new task for a new label set."
                    )
                }
            )

    @property
    def cfg(self) -> TaskConfig:
        return TaskConfig(self.config)

    @property
    def open_round(self) -> Round | None:
        """The round that accepts examples now: the current round unless it is closed (else None)."""
        current = self.current_round
        return current if current is not None and current.is_open else None

    def is_owner(self, user) -> bool:
        return bool(user.is_authenticated and (user.is_superuser or self.owners.filter(pk=user.pk).exists()))


class Round(models.Model):
    """A numbered phase of a task with its own contexts and target model(s)."""

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="rounds")
    number = models.PositiveIntegerField()
    description = models.TextField(blank=True)
    is_closed = models.BooleanField(default=False, help_text="A closed round accepts no new examples.")
    started_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)

    class Meta:
        ordering = ["task", "number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="round_number_unique_per_task"),
            models.CheckConstraint(condition=Q(number__gte=1), name="round_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.task.slug} round {self.number}"

    @property
    def is_open(self) -> bool:
        """Whether this round accepts examples: it is its task's current round and is not closed. The one
        definition of that rule (``Task.open_round``); the create service checks it again under the
        round's row lock when it stores an example."""
        return not self.is_closed and self.task.current_round_id == self.pk


class Context(models.Model):
    """What an annotator works from in a round: a passage, a premise, a prompt, or nothing at all."""

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="contexts")
    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="contexts")
    data = models.JSONField(
        encoder=UnicodeJSONEncoder, default=dict, blank=True, help_text="Values of the task's context fields."
    )
    tag = models.CharField(max_length=100, blank=True, db_index=True)
    metadata = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    external_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["round", "external_id"],
                condition=~Q(external_id=""),
                name="context_external_id_unique_per_round",
            ),
        ]

    def __str__(self) -> str:
        return f"context {self.pk} ({self.round})"
