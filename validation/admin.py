"""Admin for validations: read-only (verdicts are written by the validation service, which keeps counts).

Also adds the owner-verdict actions to the Example admin (``annotation.admin``, an extension through
``dynabench.admin_extensions``): settle the selected examples as correct, incorrect or flagged.
"""

from __future__ import annotations

from django.contrib import admin, messages

from annotation.models import Example
from dynabench.admin_extensions import extend_admin
from tasks.admin import TaskOwnedAdmin

from .models import Validation
from .services import VerdictError, submit_validation


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


def _settle(modeladmin, request, queryset, verdict: str) -> None:
    """Owner verdict on each selected example through the validation service (it checks ownership)."""
    settled, refused = 0, []
    for example in queryset.select_related("round__task"):
        try:
            outcome = submit_validation(
                example=example, validator=request.user, verdict=verdict, owner_mode=True
            )
        except VerdictError as exc:
            refused.append(f"example {example.pk}: " + " ".join(m for ms in exc.errors.values() for m in ms))
        else:
            settled += outcome.settled
    modeladmin.message_user(request, f"Settled {settled} example(s) as {verdict}.", messages.SUCCESS)
    if refused:
        modeladmin.message_user(request, "Not settled: " + "; ".join(refused[:20]), messages.WARNING)


@admin.action(description="Settle as validated correct (owner verdict)")
def settle_correct(modeladmin, request, queryset):
    _settle(modeladmin, request, queryset, "correct")


@admin.action(description="Settle as validated incorrect (owner verdict)")
def settle_incorrect(modeladmin, request, queryset):
    _settle(modeladmin, request, queryset, "incorrect")


@admin.action(description="Settle as flagged (owner verdict)")
def settle_flagged(modeladmin, request, queryset):
    _settle(modeladmin, request, queryset, "flagged")


extend_admin(Example, actions=[settle_correct, settle_incorrect, settle_flagged])
