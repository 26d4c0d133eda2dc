"""Tasks, rounds and contexts: the base every other app builds on."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from .config import TaskConfig, validate_config
from .json import UnicodeJSONEncoder


def constraint_field_errors(instance: models.Model, messages: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The named ``CheckConstraint``s of ``instance``'s model that ``instance`` breaks, as field errors for
    ``clean()``: ``messages`` maps a constraint name to ``(field, message)``; the result maps each field
    of a broken constraint to its message (empty when none is broken).

    The database constraint stays the guarantee; this only says which field is wrong, in words (Django
    reports a broken constraint above the form, as "Constraint “name” is violated.", on no field). A field
    whose value is not of its type yet is skipped (``clean_fields`` reports it). One query per constraint
    (``CheckConstraint.validate``). Example: ``constraint_field_errors(quiz, {"quiz_pass_mark_in_range":
    ("pass_mark", "...")})`` -> ``{"pass_mark": "..."}`` for ``pass_mark = 0``.
    """
    constraints = {c.name: c for c in instance._meta.constraints}
    errors: dict[str, str] = {}
    for name, (field_name, message) in messages.items():
        field = instance._meta.get_field(field_name)
        try:
            field.to_python(getattr(instance, field.attname))
        except ValidationError:
            continue  # not a value of the field's type: clean_fields reports it
        try:
            constraints[name].validate(type(instance), instance)
        except ValidationError:
            errors[field_name] = message
    return errors


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
    # Qualification and quality control (docs/crowd.md). Empty caps mean no cap.
    daily_example_cap = models.PositiveIntegerField(
        null=True, blank=True, help_text="Examples one worker may write per day (UTC); empty for no cap."
    )
    daily_validation_cap = models.PositiveIntegerField(
        null=True, blank=True, help_text="Validations one worker may cast per day (UTC); empty for no cap."
    )
    requires_allow_list = models.BooleanField(
        default=False, help_text="Only workers on this task's allow list may write and validate."
    )
    gold_share = models.FloatField(
        default=0.0, help_text="Share of the validation queue served from gold items, in [0, 1)."
    )
    gold_accuracy_threshold = models.FloatField(
        null=True,
        blank=True,
        help_text="A validator whose gold accuracy falls below this is held for review.",
    )
    gold_min_answers = models.PositiveSmallIntegerField(
        default=5, help_text="Gold answers needed before the accuracy threshold applies."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(validation_quorum__gte=1), name="task_quorum_at_least_one"),
            models.CheckConstraint(
                condition=Q(gold_share__gte=0) & Q(gold_share__lt=1), name="task_gold_share_in_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        validate_config(self.config)
        self._check_labels_unchanged()
        errors = constraint_field_errors(
            self,
            {
                "task_gold_share_in_range": (
                    "gold_share",
                    "A share of the validation queue, at least 0 and less than 1 (e.g. 0.1); 0 for no gold.",
                )
            },
        )
        if self.current_round_id and self.current_round.task_id != self.pk:
            errors["current_round"] = "The current round must be one of this task's rounds."
        if errors:
            raise ValidationError(errors)

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
        current = self.linked_current_round()
        return current if current is not None and current.is_open else None

    def linked_current_round(self) -> Round | None:
        """``current_round`` (None when unset), its ``task`` set to this task when it is this task's own, so
        that going from the round back to its task (``is_open``, the validation queue) reads nothing
        again: one query a page otherwise."""
        current = self.current_round
        if current is not None and current.task_id == self.pk:
            Round._meta.get_field("task").set_cached_value(current, self)
        return current

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
    # Competition mode (docs/crowd.md, "Competition mode"): a round run as a shared task.
    is_competition = models.BooleanField(
        default=False, help_text="A shared task: a fixed number of examples per participant, no retraction."
    )
    examples_per_participant = models.PositiveIntegerField(
        null=True, blank=True, help_text="In competition mode, the examples each participant writes."
    )

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

    def clean(self) -> None:
        """A competition round needs its fixed number of examples per participant."""
        if self.is_competition and not self.examples_per_participant:
            raise ValidationError(
                {
                    "examples_per_participant": "A competition round needs the number of examples each participant writes."
                }
            )


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


class TaskWorker(models.Model):
    """One person's standing on one task: the task's block or allow list, a hold for review, and how far
    they are through onboarding (tutorial seen, quiz passed). One row per (task, user), created on first
    need; no row means "not listed, not held, not onboarded" (docs/crowd.md, "Qualification").
    """

    class Listing(models.TextChoices):
        NONE = "", "Not listed"
        ALLOWED = "allowed", "On the allow list"
        BLOCKED = "blocked", "On the block list"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="workers")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="task_standings"
    )
    listing = models.CharField(max_length=10, choices=Listing.choices, blank=True, default="")
    listing_reason = models.TextField(blank=True)
    held_at = models.DateTimeField(
        null=True, blank=True, help_text="Held for review (e.g. gold accuracy below the task's threshold)."
    )
    held_reason = models.TextField(blank=True)
    tutorial_seen_at = models.DateTimeField(null=True, blank=True)
    quiz_passed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task", "user"]
        constraints = [
            models.UniqueConstraint(fields=["task", "user"], name="task_worker_one_per_task_and_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} on {self.task.slug}"


class TutorialItem(models.Model):
    """A worked example shown on the task's tutorial before a worker's first example: what was written,
    what the model answered, whether it was fooled, and why (``note``)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="tutorial_items")
    position = models.PositiveSmallIntegerField(default=0)
    text = models.TextField(help_text="The example as an annotator would write it (and its context, if any).")
    label = models.CharField(max_length=100, blank=True, help_text="The label the annotator meant.")
    model_answer = models.CharField(max_length=200, blank=True)
    fooled_model = models.BooleanField(help_text="Whether this example fooled the model.")
    note = models.TextField(blank=True, help_text="Why it did or did not fool the model.")

    class Meta:
        ordering = ["task", "position", "id"]

    def __str__(self) -> str:
        return f"tutorial item {self.position} of {self.task.slug}"


class Quiz(models.Model):
    """A task's qualification quiz: a worker must pass it before writing or validating while it is active."""

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="quiz")
    is_active = models.BooleanField(default=True)
    introduction = models.TextField(blank=True)
    pass_mark = models.FloatField(
        default=1.0, help_text="Share of questions to answer right to pass, in (0, 1]."
    )
    max_attempts = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Attempts allowed per worker; empty for no limit."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "quizzes"
        constraints = [
            models.CheckConstraint(
                condition=Q(pass_mark__gt=0) & Q(pass_mark__lte=1), name="quiz_pass_mark_in_range"
            ),
        ]

    def __str__(self) -> str:
        return f"quiz of {self.task.slug}"

    def clean(self) -> None:
        errors = constraint_field_errors(
            self,
            {
                "quiz_pass_mark_in_range": (
                    "pass_mark",
                    "A share of the questions, more than 0 and at most 1 (e.g. 0.75).",
                )
            },
        )
        if self.max_attempts == 0:  # no worker could ever pass
            errors["max_attempts"] = "At least one attempt; leave empty for no limit."
        if errors:
            raise ValidationError(errors)


class QuizQuestion(models.Model):
    """One multiple-choice question: ``choices`` is a list of strings, ``answer`` one of them."""

    quiz = models.ForeignKey(Quiz, on_delete=models.CASCADE, related_name="questions")
    position = models.PositiveSmallIntegerField(default=0)
    text = models.TextField()
    choices = models.JSONField(encoder=UnicodeJSONEncoder, default=list)
    answer = models.CharField(max_length=500)
    explanation = models.TextField(blank=True, help_text="Shown after the attempt.")

    class Meta:
        ordering = ["quiz", "position", "id"]

    def __str__(self) -> str:
        return f"question {self.position} of {self.quiz}"

    def clean(self) -> None:
        if (
            not isinstance(self.choices, list)
            or len(self.choices) < 2
            or not all(isinstance(c, str) and c.strip() for c in self.choices)
        ):
            raise ValidationError(
                {"choices": "Give at least two non-empty choices, as a JSON list of strings."}
            )
        if len({c.strip() for c in self.choices}) < len(self.choices):  # "a" and "a " look the same
            raise ValidationError({"choices": "Each choice must be different."})
        if self.answer not in self.choices:
            raise ValidationError({"answer": "The answer must be one of the choices, exactly."})


class QuizAttempt(models.Model):
    """One worker's attempt at a quiz, kept whether passed or failed."""

    quiz = models.ForeignKey(Quiz, on_delete=models.CASCADE, related_name="attempts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quiz_attempts")
    answers = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, help_text="Question id → choice.")
    n_correct = models.PositiveSmallIntegerField()
    n_questions = models.PositiveSmallIntegerField()
    passed = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["quiz", "user", "created_at"]

    def __str__(self) -> str:
        return f"{self.user}: {self.n_correct}/{self.n_questions} on {self.quiz}"
