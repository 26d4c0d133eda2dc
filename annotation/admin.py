"""Admin for examples and their predictions (task owners see their tasks' examples).

Also adds the example exports (streamed JSONL and CSV downloads, task owners only) to the Task and Round
admins of ``tasks.admin`` (``core.admin_extensions``).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import StreamingHttpResponse
from django.utils.text import Truncator

from core.admin_extensions import extend_admin
from core.streaming import streaming_response
from tasks.admin import TaskOwnedAdmin, only_one_owned_task
from tasks.kinds import conversational
from tasks.models import Round, Task

from .exports import CONTENT_TYPES, export_filename, iter_export
from .models import Example, Prediction, RoundBudget
from .red_team.budget import charged_state, money, with_charges


class PredictionInline(admin.TabularInline):
    """Each target model's output on the example; written by the create service only."""

    model = Prediction
    fields = [
        "model",
        "status",
        "label",
        "output",
        "model_wrong",
        "error",
        "latency_ms",
        "runtime",
        "created_at",
    ]
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
        "settled_at",
        "retracted_at",
        "flagged_at",
        "updated_at",
    ]
    # What the annotator wrote and what the models said is the record; only the bookkeeping is editable.
    readonly_fields = [f for f in fields if f not in EXAMPLE_EDITABLE_FIELDS]

    @admin.display(description="Inputs")
    def has_add_permission(self, request, obj=None):
        # Examples come from the create page (which runs the target models), imports and replays;
        # a hand-made row in the admin would have no inputs and no model verdict.
        return False

    def short_inputs(self, obj) -> str:
        text = " | ".join(str(v) for v in (obj.inputs or {}).values())
        return Truncator(text).chars(80)


# --- Example exports on the Task and Round admins (extensions of tasks.admin) ---------------------


def _export_response(request, task: Task, rounds: list[Round] | None, fmt: str) -> StreamingHttpResponse:
    response = streaming_response(
        request, iter_export(task, rounds, fmt=fmt), content_type=CONTENT_TYPES[fmt]
    )
    response["Content-Disposition"] = f'attachment; filename="{export_filename(task, rounds, fmt)}"'
    return response


def _export_tasks(modeladmin, request, queryset, fmt: str):
    task = only_one_owned_task(modeladmin, request, list(queryset))
    return None if task is None else _export_response(request, task, None, fmt)


def _export_rounds(modeladmin, request, queryset, fmt: str):
    rounds = list(queryset.select_related("task"))
    task_ids = {r.task_id for r in rounds}
    if len(task_ids) != 1:
        modeladmin.message_user(request, "Select rounds of one task.", level=messages.ERROR)
        return None
    task = rounds[0].task
    if not task.is_owner(request.user):
        modeladmin.message_user(request, "Only the task's owners can export.", level=messages.ERROR)
        return None
    return _export_response(request, task, rounds, fmt)


@admin.action(description="Export the task's examples (JSONL)")
def export_task_jsonl(modeladmin, request, queryset):
    return _export_tasks(modeladmin, request, queryset, "jsonl")


@admin.action(description="Export the task's examples (CSV)")
def export_task_csv(modeladmin, request, queryset):
    return _export_tasks(modeladmin, request, queryset, "csv")


@admin.action(description="Export the selected rounds' examples (JSONL)")
def export_rounds_jsonl(modeladmin, request, queryset):
    return _export_rounds(modeladmin, request, queryset, "jsonl")


@admin.action(description="Export the selected rounds' examples (CSV)")
def export_rounds_csv(modeladmin, request, queryset):
    return _export_rounds(modeladmin, request, queryset, "csv")


extend_admin(Task, actions=[export_task_jsonl, export_task_csv])
extend_admin(Round, actions=[export_rounds_jsonl, export_rounds_csv])


class RoundBudgetForm(forms.ModelForm):
    class Meta:
        model = RoundBudget
        fields = ["round", "cap", "per_person", "per_day"]

    def clean(self):
        data = super().clean()
        for name in ("cap", "per_person", "per_day"):
            value = data.get(name)
            if value is not None and value < 0:
                self.add_error(name, "An amount cannot be negative.")
            elif value is not None and value.is_zero():
                data[name] = value.copy_abs()  # "-0" is 0
        return data

    def clean_round(self):
        round_ = self.cleaned_data["round"]
        if round_ is not None and not conversational(round_.task.cfg):
            raise forms.ValidationError(
                "Only a red-teaming round's target is called per turn; this round's task is not one."
            )
        return round_


@admin.register(RoundBudget)
class RoundBudgetAdmin(TaskOwnedAdmin):
    """A red-teaming round's spending cap on its target (``annotation.red_team.budget``), with what its
    turns have spent and reserved so far."""

    form = RoundBudgetForm
    task_path = "round__task"
    owners_can_add = True
    list_display = ["round", "cap", "per_person", "per_day", "spent", "reserved", "left"]
    list_select_related = ["round__task"]
    readonly_fields = ["spent", "reserved", "left"]

    def get_queryset(self, request):
        # The charges' sums come with each row: three columns read them, no query per cell.
        return with_charges(super().get_queryset(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """The round's choices: only red-teaming rounds (of the owner's tasks, ``TaskOwnedAdmin``), so
        that the list is not mostly rounds the form then refuses (``RoundBudgetForm.clean_round``)."""
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if db_field.name == "round" and field is not None:
            # A task's kind is read from its config (tasks.kinds), not a column: the few tasks are read.
            tasks = Task.objects.filter(pk__in=field.queryset.values("task"))
            field.queryset = field.queryset.filter(task__in=[t.pk for t in tasks if conversational(t.cfg)])
        return field

    @admin.display(description="Spent")
    def spent(self, obj) -> str:
        return money(charged_state(obj).spent)

    @admin.display(description="Answering now (reserved)")
    def reserved(self, obj) -> str:
        return money(charged_state(obj).reserved)

    @admin.display(description="Left")
    def left(self, obj) -> str:
        return money(charged_state(obj).left)
