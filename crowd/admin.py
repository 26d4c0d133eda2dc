"""Admin of crowd studies for their task's owners: studies (with the exact entry link, a new key, the
payment export), participations ("mark returned"), the ledger and payment batches (read-only)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import F
from django.http import HttpResponse
from django.utils.html import format_html

from tasks.admin import TaskOwnedAdmin

from . import payments, services
from .links import entry_link
from .models import LIVE_FIXED, LedgerEntry, Participation, PaymentBatch, Study


@admin.action(description="Export unpaid payments (and mark them paid)")
def export_payments_action(modeladmin, request, queryset):
    """One study at a time: the file downloads, and its rows are marked paid."""
    studies = list(queryset[:2])
    if len(studies) != 1:
        modeladmin.message_user(request, "Select exactly one study to export.", messages.WARNING)
        return None
    export = payments.export_payments(study=studies[0], user=request.user)
    if export.batch is None:
        modeladmin.message_user(request, "Nothing to pay.", messages.INFO)
        return None
    response = HttpResponse(export.content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="payments-{studies[0].public_id}-{export.batch.pk}.csv"'
    )
    return response


@admin.action(description="Give the selected studies a new entry key (old links stop working)")
def rotate_entry_key_action(modeladmin, request, queryset):
    for study in queryset:
        services.rotate_entry_key(study=study)
    modeladmin.message_user(request, f"New entry keys for {queryset.count()} study(ies).", messages.SUCCESS)


def validation_warnings(study: Study) -> list[str]:
    """Why a study's required validations may not be reachable: the task's quorum needs more validators
    than the study has participants besides the author, or the task serves only model-fooling examples
    for validation."""
    if not study.validations_required:
        return []
    task = study.round.task
    warnings = []
    if task.validation_quorum > study.max_participants - 1:
        warnings.append(
            f"Examples cannot settle among the participants alone: quorum {task.validation_quorum} needs "
            f"{task.validation_quorum} validators besides the author, and this study has "
            f"{study.max_participants} place(s)."
        )
    if not task.cfg.validate_non_fooling:
        warnings.append(
            f"{task.name} validates only model-fooling examples: participants can validate only the "
            "examples that fooled the model, so they may find nothing to validate for a while."
        )
    return warnings


@admin.register(Study)
class StudyAdmin(TaskOwnedAdmin):
    task_path = "round__task"
    owners_can_add = True
    list_display = ["name", "round", "platform", "is_open", "max_participants", "created_at"]
    list_filter = ["platform", "is_open"]
    list_select_related = ["round__task"]
    search_fields = ["name"]
    readonly_fields = ["public_id", "entry_link_shown", "entry_key", "created_at"]
    fields = [
        "name",
        "round",
        "platform",
        "examples_required",
        "validations_required",
        "reward",
        "pay_per_example",
        "pay_per_validation",
        "bonus_per_verified_fooling",
        "currency",
        "max_participants",
        "completion_code",
        "completion_url",
        "time_limit_minutes",
        "consent_text",
        "is_open",
        "public_id",
        "entry_key",
        "entry_link_shown",
        "created_at",
    ]
    actions = [export_payments_action, rotate_entry_key_action]

    def get_form(self, request, obj=None, **kwargs):
        self._request = request
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        """A study with participants shows its pay, amounts and round read-only (``Study.clean``)."""
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk is not None and obj.participations.exists():
            fields += ["round", *LIVE_FIXED]
        return fields

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """A new study picks among open rounds only (``Round.is_open``: current and not closed)."""
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        adding = getattr(request.resolver_match, "url_name", "") == "crowd_study_add"
        if db_field.name == "round" and adding and field is not None:
            field.queryset = field.queryset.filter(is_closed=False, task__current_round=F("pk"))
        return field

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        for warning in validation_warnings(obj):
            messages.warning(request, warning)

    @admin.display(description="Entry link")
    def entry_link_shown(self, obj: Study) -> str:
        if obj.pk is None:
            return "Shown once the study is saved."
        request = getattr(self, "_request", None)
        base = request.build_absolute_uri("/") if request is not None else ""
        return format_html("<code>{}</code>", entry_link(obj, base))


@admin.action(description="Mark returned (frees the place)")
def mark_returned_action(modeladmin, request, queryset):
    freed = sum(services.return_study(participation=p) for p in queryset)
    modeladmin.message_user(request, f"Marked {freed} participation(s) returned.", messages.SUCCESS)


@admin.register(Participation)
class ParticipationAdmin(TaskOwnedAdmin):
    task_path = "study__round__task"
    list_display = ["id", "study", "user", "status", "started_at", "consented_at", "completed_at", "ended_at"]
    list_filter = ["status", ("study", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["study__round__task", "user"]
    readonly_fields = [
        "study",
        "round",
        "user",
        "session_id",
        "platform_study_id",
        "assignment_id",
        "hit_id",
        "turk_submit_to",
        "status",
        "started_at",
        "consented_at",
        "completed_at",
        "ended_at",
    ]
    fields = readonly_fields
    actions = [mark_returned_action]

    def has_add_permission(self, request):
        return False


@admin.register(LedgerEntry)
class LedgerEntryAdmin(TaskOwnedAdmin):
    task_path = "study__round__task"
    list_display = ["event_key", "worker", "kind", "amount", "currency", "study", "created_at", "paid_at"]
    list_filter = ["kind", ("study", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["study__round__task", "worker"]
    search_fields = ["event_key", "worker__username"]
    readonly_fields = [
        "study",
        "round",
        "participation",
        "worker",
        "kind",
        "event_key",
        "amount",
        "currency",
        "created_at",
        "paid_at",
        "batch",
    ]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False


@admin.register(PaymentBatch)
class PaymentBatchAdmin(TaskOwnedAdmin):
    task_path = "study__round__task"
    list_display = ["id", "study", "created_at", "created_by", "n_workers", "n_entries"]
    list_select_related = ["study__round__task", "created_by"]
    readonly_fields = ["study", "created_at", "created_by", "n_workers", "n_entries", "content"]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False
