"""Admin of replays (imported by generative_bench/admin.py): a task's owners ask for a replay of a round
against a generative model (the add form calls ``services.request_replay``), follow it, resume or cancel
it, open its answers for rating by people, and read the answers, which nobody edits
(``tasks.admin.TaskOwnedAdmin`` scopes both to the owner's tasks). No API key or key source is shown."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.forms.models import construct_instance
from django.utils.html import format_html

from models_registry.models import RegisteredModel
from tasks.admin import TaskOwnedAdmin
from tasks.models import Task

from ..models import Replay, ReplayAnswer
from .selectors import is_stale
from .services import (
    GENERATIVE_SOURCES,
    ReplayError,
    cancel_replay,
    check_replayable,
    open_rating,
    request_replay,
)


class ReplayForm(forms.ModelForm):
    """The add form: a red-teaming round, a ready generative model of its task, and what to do with the
    target's earlier turns; checked by ``services.check_replayable`` (each problem on its field)."""

    class Meta:
        model = Replay
        fields = ["round", "model", "target_turns"]
        help_texts = {
            "model": "A ready generative model of the round's task (on this server or a chat server).",
            "target_turns": (
                "For a conversation of several turns: keep sends the human turns with the round target's "
                "answers as they were and asks the model for the last answer; regenerate asks the model "
                "for every answer, each on its own earlier answers."
            ),
        }

    _FIELD_OF = {
        "not_red_team": "round",
        "other_task": "model",
        "not_generative": "model",
        "not_ready": "model",
        "invalid": "target_turns",
    }

    def clean(self):
        cleaned = super().clean()
        round_, model = cleaned.get("round"), cleaned.get("model")
        if round_ is None or model is None or not cleaned.get("target_turns"):
            return cleaned
        try:
            check_replayable(round_=round_, model=model, target_turns=cleaned["target_turns"])
        except ReplayError as exc:
            self.add_error(self._FIELD_OF.get(exc.code), str(exc))
            return cleaned
        stored = Replay.objects.filter(
            round=round_, model=model, target_turns=cleaned["target_turns"]
        ).first()
        if stored is not None and stored.status in (Replay.Status.QUEUED, Replay.Status.RUNNING):
            if not is_stale(stored):
                self.add_error(None, f"This replay (number {stored.pk}) is already {stored.status}.")
        return cleaned

    def _post_clean(self):
        """Only the fields' own checks: the form never saves (``ReplayAdmin.save_model`` asks
        ``request_replay``), and a replay asked for again is resumed, not refused by its unique
        constraint."""
        try:
            self.instance = construct_instance(self, self.instance, self._meta.fields, self._meta.exclude)
        except ValidationError as exc:
            self._update_errors(exc)


@admin.action(description="Resume (answer what is left, try failed items again)")
def resume_replays(modeladmin, request, queryset):
    resumed = []
    for replay in queryset.select_related("round__task", "model"):
        if not replay.round.task.is_owner(request.user):
            continue
        try:
            request_replay(
                round_=replay.round, model=replay.model, target_turns=replay.target_turns, user=request.user
            )
        except ReplayError as exc:
            modeladmin.message_user(request, f"{replay}: {exc}", messages.WARNING)
        else:
            resumed.append(str(replay.pk))
    if resumed:
        modeladmin.message_user(request, f"Queued again: {', '.join(resumed)}.", messages.SUCCESS)


@admin.action(description="Cancel (stops before the next batch; answers so far are kept)")
def cancel_replays(modeladmin, request, queryset):
    cancelled = [
        str(replay.pk)
        for replay in queryset.select_related("round__task")
        if replay.round.task.is_owner(request.user) and cancel_replay(replay=replay)
    ]
    modeladmin.message_user(
        request, f"Cancelled: {', '.join(cancelled)}." if cancelled else "Nothing was queued or running."
    )


@admin.action(description="Open for rating by people (validators judge the answers by the rubric)")
def open_for_rating(modeladmin, request, queryset):
    for replay in queryset.select_related("round__task", "model"):
        try:
            created = open_rating(replay=replay, user=request.user)
        except ReplayError as exc:
            modeladmin.message_user(request, f"{replay}: {exc}", messages.WARNING)
            continue
        modeladmin.message_user(
            request,
            f"Replay {replay.pk}: {created} answer(s) opened for rating in round {replay.round.number}.",
            messages.SUCCESS,
        )


@admin.register(Replay)
class ReplayAdmin(TaskOwnedAdmin):
    """Replays with their progress; the job writes them, so only the add form takes input."""

    task_path = "round__task"
    owners_can_add = True
    form = ReplayForm
    list_display = [
        "id",
        "round",
        "model",
        "target_turns",
        "status",
        "done_of_total",
        "failed",
        "progress",
        "created_at",
        "started_at",
        "finished_at",
    ]
    list_filter = ["status", "target_turns", ("round__task", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["round__task", "model"]
    search_fields = ["model__name", "progress", "error"]
    actions = [resume_replays, cancel_replays, open_for_rating]
    shown = [
        "round",
        "model",
        "target_turns",
        "status",
        "done_of_total",
        "failed",
        "progress",
        "error_pretty",
        "requested_by",
        "created_at",
        "started_at",
        "finished_at",
    ]

    @admin.display(description="Answered")
    def done_of_total(self, obj: Replay) -> str:
        return f"{obj.done} / {obj.total}"

    @admin.display(description="Error")
    def error_pretty(self, obj: Replay) -> str:
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', obj.error or "–")

    def get_fields(self, request, obj=None):
        return ["round", "model", "target_turns"] if obj is None else self.shown

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.shown

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """Red-teaming rounds and ready generative models only (of the owner's tasks, unless they see all)."""
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is None:
            return field
        red_team = Task.objects.filter(config__has_key="red_team")
        if db_field.name == "round":
            field.queryset = field.queryset.filter(task__in=red_team)
        elif db_field.name == "model":
            models = RegisteredModel.objects.filter(
                source__in=GENERATIVE_SOURCES, status=RegisteredModel.Status.READY, task__in=red_team
            ).select_related("task")
            if not self._sees_all(request):
                models = models.filter(task__owners=request.user)
            field.queryset = models.order_by("task__name", "name")
        return field

    def save_model(self, request, obj, form, change):
        """The add form asks for the replay through the service (queued, or resumed when it exists)."""
        try:
            replay = request_replay(
                round_=obj.round, model=obj.model, target_turns=obj.target_turns, user=request.user
            )
        except ReplayError as exc:
            messages.error(request, str(exc))
            replay = Replay.objects.get(round=obj.round, model=obj.model, target_turns=obj.target_turns)
        obj.pk = replay.pk
        obj.refresh_from_db()

    def log_addition(self, request, obj, message):
        return super().log_addition(request, obj, message) if obj.pk else None


@admin.register(ReplayAnswer)
class ReplayAnswerAdmin(TaskOwnedAdmin):
    """A replay's answers, read-only: the model's answers as they came (its generation record names no
    key)."""

    task_path = "replay__round__task"
    list_display = [
        "id",
        "replay",
        "example",
        "status",
        "attempts",
        "answer_shown",
        "tokens",
        "cost",
        "seconds",
    ]
    list_filter = ["status", ("replay__round__task", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["replay__round__task", "replay__model", "example"]
    search_fields = ["answer", "error"]
    raw_id_fields = ["replay", "example", "rating_example"]
    readonly_fields = [
        "replay",
        "example",
        "status",
        "attempts",
        "messages",
        "answer",
        "answers",
        "generation",
        "tokens",
        "cost",
        "seconds",
        "first_token_seconds",
        "picked",
        "correct",
        "error",
        "rating_example",
        "created_at",
        "updated_at",
    ]
    fields = readonly_fields

    @admin.display(description="Answer")
    def answer_shown(self, obj: ReplayAnswer) -> str:
        text = obj.answer or obj.error
        return text if len(text) <= 120 else text[:119] + "…"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
