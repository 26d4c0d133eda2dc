"""Admin for registered models and round targets (task owners see their tasks' rows).

Two actions close the loop from a model's row: make the selected model(s) the target of the task's
current round, or start the task's next round with them as its target (after a confirmation page;
``tasks.services.start_next_round`` opens it and closes the current round).
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.utils.html import format_html

from tasks.admin import TaskOwnedAdmin
from tasks.models import Round
from tasks.services import TaskError, start_next_round

from .models import RegisteredModel, RoundTarget
from .services import ModelRegistryError, set_round_targets


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
    actions = ["make_target_of_current_round", "start_next_round_with_models"]

    def _models_of_one_task(self, request, queryset) -> list[RegisteredModel] | None:
        """The selected models, if they belong to one task the user owns (else a message and None)."""
        models = list(queryset.select_related("task__current_round").order_by("name"))
        if len({m.task_id for m in models}) != 1:
            self.message_user(request, "Select models of one task.", messages.ERROR)
            return None
        if not models[0].task.is_owner(request.user):
            self.message_user(request, "Only the task's owners can choose its targets.", messages.ERROR)
            return None
        return models

    @admin.action(description="Make the selected model(s) the target of the task's current round")
    def make_target_of_current_round(self, request, queryset):
        """Several models become an ensemble (in name order); the round's previous targets are replaced."""
        models = self._models_of_one_task(request, queryset)
        if models is None:
            return
        task = models[0].task
        round_ = task.current_round
        if round_ is None:
            self.message_user(request, f"{task.name} has no current round.", messages.ERROR)
            return
        try:
            set_round_targets(round=round_, models=models)
        except ModelRegistryError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        names = ", ".join(m.name for m in models)
        self.message_user(request, f"{names}: now the target of {task.name} round {round_.number}.")

    @admin.action(description="Start the task's next round with the selected model(s) as its target")
    def start_next_round_with_models(self, request, queryset):
        """Confirmation page (with a description), then ``tasks.services.start_next_round``."""
        models = self._models_of_one_task(request, queryset)
        if models is None:
            return None
        task = models[0].task
        if "apply" in request.POST:
            form = StartRoundWithModelsForm(request.POST)
            if form.is_valid():
                try:
                    round_, _ = start_next_round(
                        task=task, description=form.cleaned_data["description"], models=models
                    )
                except TaskError as exc:
                    self.message_user(request, f"Nothing was changed: {exc}", messages.ERROR)
                    return None
                names = ", ".join(m.name for m in models)
                self.message_user(
                    request,
                    f"Round {round_.number} of {task.name} started and is now the current round "
                    f"(targets: {names}).",
                )
                return None
        else:
            form = StartRoundWithModelsForm()
        last = Round.objects.filter(task=task).order_by("-number").values_list("number", flat=True).first()
        context = {
            **self.admin_site.each_context(request),
            "title": f"Start round {(last or 0) + 1} of {task.name}",
            "task": task,
            "models": models,
            "form": form,
            "opts": self.opts,
            "action_name": "start_next_round_with_models",
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "models_registry/admin/start_next_round.html", context)

    @admin.display(description="Dev accuracy")
    def dev_accuracy(self, obj: RegisteredModel) -> str:
        value = (obj.card or {}).get("dev_accuracy")
        return f"{value:.1%}" if isinstance(value, int | float) else "–"

    @admin.display(description="Model card")
    def card_pretty(self, obj: RegisteredModel) -> str:
        text = json.dumps(obj.card or {}, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)


class StartRoundWithModelsForm(forms.Form):
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80, "dir": "auto"}),
        help_text="Shown with the round on the task page.",
    )


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
