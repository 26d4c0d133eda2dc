"""Datasets models are scored on, their items, scores, and leaderboard forks and snapshots."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Dataset(models.Model):
    """A set of labelled items a model is evaluated on (docs/domain.md, "Scoring dataset").

    Round datasets are built from a round's settled examples; static test sets (HateCheck,
    HatemojiCheck) and imported sets keep their own items in ``DatasetItem``.
    """

    class Kind(models.TextChoices):
        ROUND = "round", "Round examples"
        STATIC = "static", "Static test set"
        IMPORTED = "imported", "Imported file"
        PERTURBED = "perturbed", "Perturbed copy"

    class Access(models.TextChoices):
        SCORING = "scoring", "Scoring (ranked on the leaderboard)"
        STANDARD = "standard", "Standard (shown on model pages)"
        HIDDEN = "hidden", "Hidden (owners only)"

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="datasets")
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    access = models.CharField(max_length=20, choices=Access.choices, default=Access.STANDARD)
    round = models.ForeignKey(
        "tasks.Round", null=True, blank=True, on_delete=models.PROTECT, related_name="datasets"
    )
    split = models.CharField(max_length=10, blank=True)
    description = models.TextField(blank=True)
    licence = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=500, blank=True, help_text="Where the data came from (URL@commit).")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "name"]
        constraints = [models.UniqueConstraint(fields=["task", "slug"], name="dataset_slug_unique_per_task")]

    def __str__(self) -> str:
        return self.name


class DatasetItem(models.Model):
    """One labelled input of a dataset: ``inputs`` by field name, ``target`` as in ``Example.target``."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="items")
    example = models.ForeignKey(
        "annotation.Example", null=True, blank=True, on_delete=models.PROTECT, related_name="dataset_items"
    )
    external_id = models.CharField(max_length=200)
    inputs = models.JSONField()
    target = models.JSONField()
    tags = models.JSONField(default=list, blank=True, help_text="E.g. ['functionality:derog_neg_emote_h'].")
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dataset", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "external_id"], name="dataset_item_external_id_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.slug}:{self.external_id}"


class Score(models.Model):
    """A model's evaluation on a dataset: ``perf`` plus ``metrics`` (throughput, memory, fairness...)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    model = models.ForeignKey(
        "models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="scores"
    )
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="scores")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    perf = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    per_tag = models.JSONField(default=dict, blank=True)
    error_message = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(
        default=0,
        help_text="Times a worker claimed this evaluation (scheduling.sweep_evaluations caps reruns).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # While running: the worker's heartbeat (scheduling.heartbeat); a running Score whose heartbeat stopped
    # was cut off with its worker.
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset", "-perf"]
        constraints = [
            models.UniqueConstraint(fields=["model", "dataset"], name="score_one_per_model_and_dataset"),
            models.CheckConstraint(
                condition=Q(perf__isnull=True) | (Q(perf__gte=0) & Q(perf__lte=1)),
                name="score_perf_in_unit_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} on {self.dataset}: {self.perf}"


class LeaderboardFork(models.Model):
    """A named set of leaderboard weights saved by a task owner ("fork"), shared at its own URL.

    ``metric_weights`` maps metric names (``perf``, ``throughput``, ...) to weights >= 0;
    ``dataset_weights`` maps scoring dataset ids (as strings, JSON keys) to weights >= 0. Datasets added
    after the fork was saved get the default weight 1 when it is shown.
    """

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="leaderboard_forks")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    metric_weights = models.JSONField(default=dict, blank=True)
    dataset_weights = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="leaderboard_forks",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "name"]
        constraints = [
            models.UniqueConstraint(fields=["task", "slug"], name="leaderboard_fork_slug_unique_per_task")
        ]

    def __str__(self) -> str:
        return f"{self.task_id and self.task.slug} fork {self.name}"


class LeaderboardSnapshot(models.Model):
    """A frozen copy of a leaderboard table (``data``: what ``leaderboards.selectors`` computed then).

    Immutable: saving an existing snapshot again raises ``ValueError``. ``data`` is computed as a
    visitor who is not logged in sees the leaderboard (published models only, anonymous ones masked).
    """

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="leaderboard_snapshots")
    name = models.CharField(max_length=200)
    data = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="leaderboard_snapshots",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.task_id and self.task.slug} snapshot {self.name}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise ValueError("A leaderboard snapshot is immutable once saved.")
        super().save(*args, **kwargs)
