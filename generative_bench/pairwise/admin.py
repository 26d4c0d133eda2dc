"""The Django admin of pairwise judges: owners add one to their red-teaming task and run it."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from tasks.admin import TaskOwnedAdmin

from ..judges.admin import JudgeModelChoices
from ..judges.services import JudgeError, _check_model, _clean_name
from ..models import PairwiseJudge
from .services import run_pairwise_judge


class PairwiseJudgeForm(forms.ModelForm):
    """A pairwise judge's fields, checked as ``services.create_pairwise_judge`` checks them."""

    class Meta:
        model = PairwiseJudge
        fields = ["task", "model", "name", "is_active"]

    def clean(self):
        cleaned = super().clean()
        task, model = cleaned.get("task") or getattr(self.instance, "task", None), cleaned.get("model")
        if task is None or model is None:
            return cleaned
        try:
            _check_model(task, model)
            cleaned["name"] = _clean_name(cleaned.get("name"))
        except JudgeError as exc:
            self.add_error(None, str(exc))
            return cleaned
        others = PairwiseJudge.objects.filter(task=task, name=cleaned["name"]).exclude(pk=self.instance.pk)
        if others.exists():
            self.add_error("name", f"This task already has a pairwise judge named {cleaned['name']!r}.")
        return cleaned


@admin.action(description="Run the selected pairwise judge(s) now")
def run_pairwise_action(modeladmin, request, queryset):
    for judge in queryset.select_related("task", "model"):
        try:
            run_pairwise_judge(judge=judge, user=request.user)
        except JudgeError as exc:
            modeladmin.message_user(request, f"{judge.name}: {exc}", messages.WARNING)
        else:
            modeladmin.message_user(request, f"Queued: {judge.name}.", messages.SUCCESS)


@admin.register(PairwiseJudge)
class PairwiseJudgeAdmin(JudgeModelChoices, TaskOwnedAdmin):
    task_path = "task"
    owners_can_add = True
    form = PairwiseJudgeForm
    list_display = ["name", "task", "model", "is_active", "status", "progress"]
    list_filter = ["task", "is_active", "status"]
    list_select_related = ["task", "model"]
    actions = [run_pairwise_action]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else ["task", "model", "status", "progress"]
