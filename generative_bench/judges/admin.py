"""Admin of judges (imported by generative_bench/admin.py): a task's owners add and change its judges
(the prompt template prefilled with the default one), run them, and read their verdicts, which nobody
edits (``tasks.admin.TaskOwnedAdmin`` scopes both to the owner's tasks)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q

from models_registry.models import RegisteredModel
from tasks.admin import TaskOwnedAdmin
from tasks.models import Task

from ..models import Judge, JudgeVerdict
from . import prompts
from .services import GENERATIVE_SOURCES, JudgeError, clean_judge, run_judge


class JudgeForm(forms.ModelForm):
    """A judge's fields, checked by ``services.clean_judge`` (each problem on its field)."""

    class Meta:
        model = Judge
        fields = ["task", "model", "name", "prompt_template", "agreement_floor", "is_active"]
        widgets = {
            "prompt_template": forms.Textarea(attrs={"rows": 24, "cols": 100, "class": "vLargeTextField"})
        }
        help_texts = {
            "prompt_template": (
                "Placeholders: {context} (the passage), {conversation} (the turns before the answer), "
                "{output} (the answer judged) and {rubric} (the rubric's questions with their allowed "
                "answers); {output} and {rubric} are required. Write {{ and }} for a literal brace. "
                "Leave it as it is for the default prompt, which asks for a JSON object."
            ),
            "model": "A ready generative model of the same task (on this server or a chat server).",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.instance.pk:
            self.initial.setdefault("prompt_template", prompts.DEFAULT_TEMPLATE)

    _FIELD_OF = {
        "not_red_team": "task",
        "other_task": "model",
        "not_generative": "model",
        "not_ready": "model",
        "bad_template": "prompt_template",
        "bad_name": "name",
        "bad_floor": "agreement_floor",
    }

    def clean(self):
        cleaned = super().clean()
        task, model = (
            cleaned.get("task") or self._stored("task"),
            cleaned.get("model") or self._stored("model"),
        )
        if task is None or model is None or "name" not in cleaned:
            return cleaned
        try:
            fields = clean_judge(
                task=task,
                model=model,
                name=cleaned["name"],
                prompt_template=cleaned.get("prompt_template"),
                agreement_floor=cleaned.get("agreement_floor", 0.4),
            )
        except JudgeError as exc:
            field = self._FIELD_OF.get(exc.code)
            self.add_error(field if field in self.fields else None, str(exc))
            return cleaned
        # The task may be read-only here (a change), which leaves its unique name unchecked by the form.
        if Judge.objects.filter(task=task, name=fields["name"]).exclude(pk=self.instance.pk).exists():
            self.add_error("name", f"This task already has a judge named {fields['name']!r}.")
            return cleaned
        cleaned.update(fields)
        return cleaned

    def _stored(self, name):
        """A field shown read-only on the change page (``JudgeAdmin.get_readonly_fields``)."""
        return getattr(self.instance, name, None) if self.instance.pk else None


@admin.action(description="Run judge (judge every output it has no readable verdict on)")
def run_judge_action(modeladmin, request, queryset):
    queued = []
    for judge in queryset.select_related("task", "model"):
        try:
            run_judge(judge=judge, user=request.user)
        except JudgeError as exc:
            modeladmin.message_user(request, f"{judge.name}: {exc}", messages.WARNING)
        else:
            queued.append(judge.name)
    if queued:
        modeladmin.message_user(request, f"Queued: {', '.join(queued)}.", messages.SUCCESS)


class JudgeModelChoices:
    """For a judge's admin, rubric or pairwise: the choices of its task and model."""

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """Red-teaming tasks only; ready generative models only (the owner's tasks' when not a superuser)."""
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is None:
            return field
        if db_field.name == "task":
            field.queryset = field.queryset.filter(config__has_key="red_team")
        elif db_field.name == "model":
            models = RegisteredModel.objects.filter(
                source__in=GENERATIVE_SOURCES,
                status=RegisteredModel.Status.READY,
                task__in=Task.objects.filter(config__has_key="red_team"),
            ).select_related("task")
            if not self._sees_all(request):
                models = models.filter(task__owners=request.user)
            field.queryset = models.order_by("task__name", "name")
        return field


@admin.register(Judge)
class JudgeAdmin(JudgeModelChoices, TaskOwnedAdmin):
    task_path = "task"
    owners_can_add = True
    form = JudgeForm
    list_display = [
        "name",
        "task",
        "model",
        "agreement_floor",
        "is_active",
        "status",
        "verdicts_shown",
        "progress",
    ]
    list_filter = ["task", "is_active", "status"]
    list_select_related = ["task", "model"]
    search_fields = ["name"]
    actions = [run_judge_action]

    def get_queryset(self, request):
        ok, unreadable, failed = (
            JudgeVerdict.Status.OK,
            JudgeVerdict.Status.UNREADABLE,
            JudgeVerdict.Status.FAILED,
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_ok=Count("verdicts", filter=Q(verdicts__status=ok)),
                n_unreadable=Count("verdicts", filter=Q(verdicts__status=unreadable)),
                n_failed=Count("verdicts", filter=Q(verdicts__status=failed)),
            )
        )

    @admin.display(description="Verdicts")
    def verdicts_shown(self, obj: Judge) -> str:
        """``"12 read, 1 unreadable, 0 failed"``."""
        return f"{obj.n_ok} read, {obj.n_unreadable} unreadable, {obj.n_failed} failed"

    def get_fields(self, request, obj=None):
        fields = ["task", "model", "name", "prompt_template", "agreement_floor", "is_active"]
        return fields if obj is None else [*fields, "status", "progress", "verdicts_shown"]

    def get_readonly_fields(self, request, obj=None):
        """The task never changes; the model neither once the judge has verdicts (they are its model's)."""
        if obj is None:
            return []
        fixed = ["task", "status", "progress", "verdicts_shown"]
        if obj.verdicts.exists():
            fixed.append("model")
        return fixed

    def save_model(self, request, obj, form, change):
        if change and "prompt_template" in form.changed_data and obj.verdicts.exists():
            messages.warning(
                request,
                "The template changed: the verdicts already stored were made with the old one and are "
                "kept; only outputs without a readable verdict are judged with the new one.",
            )
        super().save_model(request, obj, form, change)


@admin.register(JudgeVerdict)
class JudgeVerdictAdmin(TaskOwnedAdmin):
    """A judge's verdicts, read-only: they are the model's answers, kept as they came."""

    task_path = "judge__task"
    list_display = ["id", "judge", "item_shown", "status", "failed", "created_at"]
    list_filter = ["status", "failed", "judge"]
    list_select_related = ["judge", "example", "replay_answer__replay__model"]
    readonly_fields = [
        "judge",
        "example",
        "replay_answer",
        "status",
        "rubric_answers",
        "failed",
        "raw",
        "error",
        "generation",
        "created_at",
    ]
    fields = readonly_fields

    @admin.display(description="Output judged")
    def item_shown(self, obj: JudgeVerdict) -> str:
        if obj.example_id:
            return f"conversation, example {obj.example_id}"
        return f"replayed answer {obj.replay_answer_id} ({obj.replay_answer.replay.model})"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
