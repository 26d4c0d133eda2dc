"""Registered models and which of them are a round's targets."""

from __future__ import annotations

import copy

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from engine.runtime import runtimes


class RegisteredModel(models.Model):
    """A model registered for a task: weights on disk (``save_pretrained`` format) or, later, an endpoint.

    The model card lives in ``card`` (JSON): backbone, preprocessing, training rounds and sizes,
    parameter count, licence, paper link, description and measured accuracies.
    """

    class Source(models.TextChoices):
        LOCAL_DIR = "local_dir", "Local directory"
        UPLOAD = "upload", "Uploaded zip"
        HUB = "hub", "Model hub id"
        ENDPOINT = "endpoint", "Remote inference endpoint"
        CHAT_ENDPOINT = "chat_endpoint", "OpenAI-compatible chat server"

    class Status(models.TextChoices):
        UPLOADED = "uploaded", "Uploaded"
        CHECKING = "checking", "Checking"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    class Recheck(models.TextChoices):
        """A ready model checked again (admin "Check again") stays ready and keeps serving meanwhile."""

        NONE = "", "Not being checked again"
        QUEUED = "queued", "Check again queued"
        RUNNING = "running", "Being checked again"

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="models")
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="models"
    )
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.LOCAL_DIR)
    path = models.CharField(max_length=1000, blank=True, help_text="Directory of the save_pretrained model.")
    endpoint_url = models.URLField(blank=True)
    endpoint_secret = models.CharField(max_length=200, blank=True)
    # A generative model on an OpenAI-compatible chat server (docs/generative.md): the server's name for
    # it, and where the API key is read at call time. The key itself is never stored.
    chat_model_name = models.CharField(
        max_length=200, blank=True, help_text="The model name the chat server expects."
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="The environment variable on the server that holds the API key (the key is never stored).",
    )
    api_key_file = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Or a file on the server whose first line is the API key (the key is never stored).",
    )
    generation = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "A generative model's settings: system_prompt, temperature, top_p, max_new_tokens, stop, seed, "
            "timeout (seconds), price_input_per_million, price_output_per_million."
        ),
    )
    backbone = models.CharField(max_length=200, blank=True)
    parameter_count = models.BigIntegerField(null=True, blank=True, help_text="Counted from the weights.")
    card = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.UPLOADED)
    error_message = models.TextField(blank=True)
    recheck = models.CharField(
        max_length=10,
        choices=Recheck.choices,
        default=Recheck.NONE,
        blank=True,
        help_text="A ready model being checked again: it serves and is evaluated as before until the check ends.",
    )
    is_published = models.BooleanField(
        default=False,
        help_text="Shown on the leaderboard to everyone; a new model is unpublished until its owner publishes it.",
    )
    is_anonymous = models.BooleanField(default=False)
    allow_pickle = models.BooleanField(default=False, help_text="Allow non-safetensors checkpoints.")
    runtime = models.CharField(
        max_length=20,
        choices=runtimes.CHOICES,
        default=runtimes.TORCH,
        help_text=(
            "What serves and evaluates the model: PyTorch, or its ONNX export (fp32 or int8 weights), "
            "chosen at registration from how well the export agrees with PyTorch (docs/onnx.md)."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    answers_changed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When what produces its answers last changed (weights path, server, server model name or "
        "generation settings); null: never since it was registered. The arena counts a rating's votes "
        "from here.",
    )

    #: The fields whose change changes the model's answers (``answers_changed_at``).
    ANSWER_FIELDS = ("source", "path", "endpoint_url", "chat_model_name", "generation", "runtime")

    class Meta:
        ordering = ["task", "name"]
        verbose_name = "model"
        constraints = [
            models.UniqueConstraint(fields=["task", "name"], name="model_name_unique_per_task"),
            models.CheckConstraint(
                condition=Q(parameter_count__isnull=True) | Q(parameter_count__gte=0),
                name="model_parameter_count_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        """Save; a change of any of ``ANSWER_FIELDS`` since the row was read stamps ``answers_changed_at``
        (every path that edits a model, the admin's included, goes through here)."""
        read = getattr(self, "_answers_as_read", None)
        if read and any(getattr(self, f) != value for f, value in read.items()):
            self.answers_changed_at = timezone.now()
            fields = kwargs.get("update_fields")
            if fields is not None:
                kwargs["update_fields"] = {*fields, "answers_changed_at"}
            self._answers_as_read = {f: copy.deepcopy(getattr(self, f)) for f in read}
        super().save(*args, **kwargs)

    @classmethod
    def from_db(cls, db, field_names, values):
        instance = super().from_db(db, field_names, values)
        # What it answered with when read, so that save() knows whether that changed.
        instance._answers_as_read = {
            f: copy.deepcopy(getattr(instance, f)) for f in cls.ANSWER_FIELDS if f in field_names
        }
        return instance

    @property
    def public_name(self) -> str:
        """The name shown beside an example's answers, to anyone: "Anonymous model" for an anonymous model,
        else its name (the leaderboard numbers anonymous models apart, "Anonymous model N", where it knows
        the viewer: ``leaderboards.selectors``)."""
        return "Anonymous model" if self.is_anonymous else self.name


class RoundTarget(models.Model):
    """One target model of a round; several rows make an ensemble (the task's ensemble rule decides)."""

    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="targets")
    model = models.ForeignKey(RegisteredModel, on_delete=models.PROTECT, related_name="round_targets")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["round", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "model"], name="round_target_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.model} → {self.round}"
