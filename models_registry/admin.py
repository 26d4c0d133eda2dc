"""Admin for registered models and round targets (task owners see their tasks' rows)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from tasks.admin import TaskOwnedAdmin

from .models import RegisteredModel, RoundTarget


class RoundTargetInline(admin.TabularInline):
    model = RoundTarget
    extra = 0
    fields = ["round", "position"]
    raw_id_fields = ["round"]


@admin.register(RegisteredModel)
class RegisteredModelAdmin(TaskOwnedAdmin):
    """Models with their status, size and dev accuracy (from the card); the card is shown read-only."""

    list_display = [
        "name",
        "task",
        "status",
        "parameter_count",
        "dev_accuracy",
        "backbone",
        "owner",
        "updated_at",
    ]
    list_select_related = ["task", "owner"]
    list_filter = [("task", admin.RelatedOnlyFieldListFilter), "status", "source", "is_published"]
    search_fields = ["name", "backbone", "path", "error_message"]
    readonly_fields = [
        "parameter_count",
        "card_pretty",
        "status",
        "error_message",
        "created_at",
        "updated_at",
    ]
    exclude = ["card"]
    raw_id_fields = ["owner"]
    inlines = [RoundTargetInline]

    @admin.display(description="Dev accuracy")
    def dev_accuracy(self, obj: RegisteredModel) -> str:
        value = (obj.card or {}).get("dev_accuracy")
        return f"{value:.1%}" if isinstance(value, int | float) else "–"

    @admin.display(description="Model card")
    def card_pretty(self, obj: RegisteredModel) -> str:
        text = json.dumps(obj.card or {}, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)


@admin.register(RoundTarget)
class RoundTargetAdmin(TaskOwnedAdmin):
    """Which models are each round's targets, in ensemble order."""

    task_path = "round__task"
    list_display = ["round", "model", "position", "model_status"]
    list_select_related = ["round__task", "model"]
    list_filter = [("round__task", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["model__name"]
    raw_id_fields = ["model", "round"]

    @admin.display(description="Model status", ordering="model__status")
    def model_status(self, obj: RoundTarget) -> str:
        return obj.model.get_status_display()
