"""Admin for validations: read-only (verdicts are written by the validation service, which keeps counts)."""

from __future__ import annotations

from django.contrib import admin

from tasks.admin import TaskOwnedAdmin

from .models import Validation


@admin.register(Validation)
class ValidationAdmin(TaskOwnedAdmin):
    """Validations of the owner's tasks' examples."""

    task_path = "example__round__task"
    list_display = [
        "id",
        "example",
        "validator",
        "verdict",
        "corrected_label",
        "is_owner_verdict",
        "created_at",
    ]
    list_select_related = ["example__round__task", "validator"]
    list_filter = ["verdict", "is_owner_verdict", ("example__round", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["validator__username", "reason"]
    readonly_fields = [
        "example",
        "validator",
        "verdict",
        "corrected_label",
        "reason",
        "is_owner_verdict",
        "created_at",
    ]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False
