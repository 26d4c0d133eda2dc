"""Admin for datasets, their items and scores (task owners see their tasks' rows).

The loop's records and actions (training jobs, releases, probes) and the Task admin's "Dashboard" tool
are ``cycle/admin.py``.
"""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django.db.models import Count
from django.utils.text import Truncator

from leaderboards.scheduling import retry_evaluations
from tasks.admin import TaskOwnedAdmin

from .models import Dataset, DatasetItem, Score


@admin.register(Dataset)
class DatasetAdmin(TaskOwnedAdmin):
    """Datasets with their item counts (computed, read-only)."""

    owners_can_add = True
    list_display = ["name", "slug", "task", "kind", "access", "round", "item_count", "created_at"]
    list_select_related = ["task", "round__task"]
    list_filter = [("task", admin.RelatedOnlyFieldListFilter), "kind", "access"]
    search_fields = ["name", "slug", "source"]
    readonly_fields = ["item_count", "created_at"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_items=Count("items"))

    @admin.display(description="Items", ordering="n_items")
    def item_count(self, obj) -> int:
        return getattr(obj, "n_items", 0)


@admin.register(DatasetItem)
class DatasetItemAdmin(TaskOwnedAdmin):
    """Dataset items, searchable by id, text and tag."""

    task_path = "dataset__task"
    list_display = ["external_id", "dataset", "short_inputs", "target"]
    list_select_related = ["dataset"]
    list_filter = [("dataset", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["external_id", "inputs", "tags"]
    raw_id_fields = ["example"]

    @admin.display(description="Inputs")
    def short_inputs(self, obj) -> str:
        return Truncator(" | ".join(str(v) for v in (obj.inputs or {}).values())).chars(80)


@admin.register(Score)
class ScoreAdmin(TaskOwnedAdmin):
    """Scores of models on datasets; written by evaluation jobs, so read-only here."""

    task_path = "dataset__task"
    list_display = ["model", "dataset", "status", "perf", "short_error", "updated_at"]
    list_select_related = ["model", "dataset"]
    list_filter = ["status", ("dataset", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["model__name", "dataset__name"]
    readonly_fields = [
        "model",
        "dataset",
        "status",
        "perf",
        "metrics",
        "per_tag",
        "error_message",
        "created_at",
        "updated_at",
    ]

    actions = ["retry_failed_evaluations"]

    @admin.display(description="Error")
    def short_error(self, obj) -> str:
        return Truncator(obj.error_message).chars(80)

    def has_add_permission(self, request):
        return False

    @admin.action(description="Retry failed evaluations")
    def retry_failed_evaluations(self, request, queryset):
        """Set the selected failed Scores of tasks the user owns back to pending and queue them."""
        ids = [
            score.pk
            for score in queryset.filter(status=Score.Status.FAILED).select_related("dataset__task")
            if score.dataset.task.is_owner(request.user)
        ]
        with transaction.atomic():
            queued = retry_evaluations(ids)
        skipped = queryset.count() - len(queued)
        message = f"{len(queued)} failed evaluation(s) queued again."
        if skipped:
            message += f" {skipped} selected score(s) were not failed (or not yours) and were left alone."
        self.message_user(request, message)
