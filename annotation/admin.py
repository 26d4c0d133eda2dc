"""Admin for examples and their predictions (task owners see their tasks' examples)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils.text import Truncator

from tasks.admin import TaskOwnedAdmin

from .models import Example, Prediction


class PredictionInline(admin.TabularInline):
    """Each target model's output on the example; written by the create service only."""

    model = Prediction
    fields = ["model", "status", "label", "output", "model_wrong", "error", "latency_ms", "created_at"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("model")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        # Whoever may view the example (a task owner, without model permissions) sees its predictions.
        return self.admin_site.get_model_admin(Example).has_view_permission(request, obj)


EXAMPLE_EDITABLE_FIELDS = ("split", "tags", "metadata")


class ExampleAdminForm(forms.ModelForm):
    """Tags are a list of strings and metadata an object (the export format promises both); empty means none."""

    class Meta:
        model = Example
        fields = ["split", "tags", "metadata"]

    def clean_tags(self):
        tags = self.cleaned_data.get("tags")
        if tags in (None, ""):
            return []
        if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
            raise forms.ValidationError('Tags must be a JSON list of non-empty strings, e.g. ["sarcasm"].')
        return tags

    def clean_metadata(self):
        metadata = self.cleaned_data.get("metadata")
        if metadata in (None, ""):
            return {}
        if not isinstance(metadata, dict):
            raise forms.ValidationError('Metadata must be a JSON object, e.g. {"source": "pilot"}.')
        return metadata


@admin.register(Example)
class ExampleAdmin(TaskOwnedAdmin):
    """Examples: what the annotator wrote and what the model said are read-only; split and tags are editable."""

    form = ExampleAdminForm

    task_path = "round__task"
    list_display = [
        "id",
        "short_inputs",
        "round",
        "status",
        "model_wrong",
        "prediction_status",
        "source",
        "split",
        "is_retracted",
        "created_at",
    ]
    list_select_related = ["round__task", "annotator"]
    list_filter = [
        ("round", admin.RelatedOnlyFieldListFilter),
        "status",
        "model_wrong",
        "prediction_status",
        "source",
        "split",
        "is_retracted",
        "is_flagged_by_annotator",
    ]
    search_fields = ["inputs", "explanation", "external_id", "annotator__username", "=id"]
    date_hierarchy = "created_at"
    inlines = [PredictionInline]
    fields = [
        "round",
        "context",
        "annotator",
        "inputs",
        "target",
        "explanation",
        "split",
        "tags",
        "metadata",
        "model_wrong",
        "prediction_status",
        "status",
        "source",
        "external_id",
        "client_token",
        "time_taken_ms",
        "is_retracted",
        "is_flagged_by_annotator",
        "flag_reason",
        "created_at",
        "updated_at",
    ]
    # What the annotator wrote and what the models said is the record; only the bookkeeping is editable.
    readonly_fields = [f for f in fields if f not in EXAMPLE_EDITABLE_FIELDS]

    actions = ["settle_correct", "settle_incorrect", "settle_flagged"]

    def _settle(self, request, queryset, verdict: str) -> None:
        """Owner verdict on each selected example through the validation service (it checks ownership)."""
        # Imported here, not at the top: validation sits above annotation and imports it; the admin is
        # presentation, so it may call the service that settles examples and keeps the counts.
        from validation.services import VerdictError, submit_validation

        settled, refused = 0, []
        for example in queryset.select_related("round__task"):
            try:
                outcome = submit_validation(
                    example=example, validator=request.user, verdict=verdict, owner_mode=True
                )
            except VerdictError as exc:
                refused.append(
                    f"example {example.pk}: " + " ".join(m for ms in exc.errors.values() for m in ms)
                )
            else:
                settled += outcome.settled
        self.message_user(request, f"Settled {settled} example(s) as {verdict}.", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not settled: " + "; ".join(refused[:20]), messages.WARNING)

    @admin.action(description="Settle as validated correct (owner verdict)")
    def settle_correct(self, request, queryset):
        self._settle(request, queryset, "correct")

    @admin.action(description="Settle as validated incorrect (owner verdict)")
    def settle_incorrect(self, request, queryset):
        self._settle(request, queryset, "incorrect")

    @admin.action(description="Settle as flagged (owner verdict)")
    def settle_flagged(self, request, queryset):
        self._settle(request, queryset, "flagged")

    @admin.display(description="Inputs")
    def has_add_permission(self, request, obj=None):
        # Examples come from the create page (which runs the target models), imports and replays;
        # a hand-made row in the admin would have no inputs and no model verdict.
        return False

    def short_inputs(self, obj) -> str:
        text = " | ".join(str(v) for v in (obj.inputs or {}).values())
        return Truncator(text).chars(80)
